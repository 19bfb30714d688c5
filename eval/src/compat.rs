//! The module paths other crates used before the engine was laid out by stage, kept so they
//! compile while they move to the facade. They go once the callers use the crate root's
//! items (and [`crate::internals`] for the benches and tests that reach inside).

#![allow(unused_imports)]

/// Old path of [`crate::front::ast`].
#[doc(hidden)]
pub mod ast {
    pub use crate::front::ast::*;
}
/// Old path of `crate::exec::budget`.
#[doc(hidden)]
pub mod budget {
    pub use crate::exec::budget::*;
}
/// Old path of `crate::link::compile`.
#[doc(hidden)]
pub mod check {
    pub use crate::link::compile::*;
}
/// Old path of `crate::exec::engine`.
#[doc(hidden)]
pub mod engine {
    pub use crate::exec::engine::*;
}
/// Old path of `crate::front::diagnostic`.
#[doc(hidden)]
pub mod error {
    pub use crate::front::diagnostic::*;
}
/// Old path of [`crate::answer::explain`].
#[doc(hidden)]
pub mod explain {
    pub use crate::answer::explain::*;
}
/// Old path of `crate::front::parse`.
#[doc(hidden)]
pub mod parse {
    pub use crate::front::parse::*;
}
/// Old path of the demand rewrite.
#[doc(hidden)]
pub mod magic {
    pub use crate::rewrite::magic::*;
}
/// Old path of the join-intermediate rewrite.
#[doc(hidden)]
pub mod split {
    pub use crate::rewrite::split::*;
}
/// Old path of the radix sort.
#[doc(hidden)]
pub mod radix {
    pub use crate::data::radix::*;
}
/// Old path of [`crate::answer::query`].
#[doc(hidden)]
pub mod query {
    pub use crate::answer::query::*;
}
/// Old path of `crate::link::schema`.
#[doc(hidden)]
pub mod schema {
    pub use crate::link::schema::*;
}
/// Old path of `crate::data::value`.
#[doc(hidden)]
pub mod value {
    pub use crate::data::value::*;
}
/// Old path of `crate::link::vocab`.
#[doc(hidden)]
pub mod vocab {
    pub use crate::link::vocab::*;
}

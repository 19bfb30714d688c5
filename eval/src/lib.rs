//! Strata's Datalog engine.
//!
//! This crate defines the vocabulary every other crate speaks: the [`Term`] a fact's field is
//! stored as, the [`Value`] a term stands for, and the [`FactSource`] trait through which the
//! engine reads facts. The engine never knows how facts are stored: the `strata-store` crate
//! implements [`FactSource`] over its redb files, and [`MemorySource`] implements it in memory
//! for tests and examples.
//!
//! ```
//! use strata_eval::{FactSource, MemorySource, Value};
//!
//! let mut src = MemorySource::new();
//! src.add_relation("imports", &["src", "dst"]);
//! src.insert("imports", &[Value::text("app"), Value::text("api")]).unwrap();
//! src.insert("imports", &[Value::text("api"), Value::text("log")]).unwrap();
//!
//! let api = src.term(&Value::text("api")).unwrap().unwrap();
//! let mut found = Vec::new();
//! src.lookup("imports", &[(0, api)], &mut |row| {
//!     found.push(row.to_vec());
//!     std::ops::ControlFlow::Continue(())
//! })
//! .unwrap();
//! assert_eq!(found.len(), 1);
//! assert_eq!(src.value(found[0][1]).unwrap(), Value::text("log"));
//! ```

pub mod answer;
pub(crate) mod builtins;
pub mod cypher;
pub mod data;
pub mod exec;
pub mod front;
pub mod ir;
pub mod link;
#[doc(hidden)]
pub mod naive;
pub mod plan;
pub mod rewrite;
pub mod witness;

mod compat;
pub use compat::*;

pub use data::memory::MemorySource;
pub use data::source::{FactSource, Origin, RelationInfo, SourceError, Visit};
pub use data::value::{Term, TermKind, Value};

pub use front::ast::Span;
pub use front::diagnostic::Diagnostic;
pub use front::parse::{parse_module, parse_program};
pub use link::compile::{Bind, Compiled, compile};
pub use link::vocab::{RelationKind, RelationSchema, VocabError, Vocabulary};

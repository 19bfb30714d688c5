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
pub mod ast;
pub mod budget;
mod buffer;
pub mod check;
mod cycles;
pub mod cypher;
pub mod dict;
pub mod engine;
pub mod error;
pub mod explain;
mod grouped;
pub mod index;
pub mod ir;
mod linked;
mod lower;
pub mod magic;
mod memory;
pub mod naive;
mod output;
mod pair;
pub mod parse;
pub mod plan;
mod pool;
pub mod query;
pub mod radix;
pub mod relation;
mod resolve;
pub mod run;
mod safety;
pub mod schema;
mod source;
pub mod split;
pub mod strata;
mod suggest;
pub mod value;
pub mod vocab;
pub mod witness;
mod worker;

pub use memory::MemorySource;
pub use source::{FactSource, Origin, RelationInfo, SourceError, Visit};
pub use value::{Term, TermKind, Value};

pub use ast::Span;
pub use check::{Bind, Compiled, compile};
pub use error::Diagnostic;
pub use parse::{parse_module, parse_program};
pub use vocab::{RelationKind, RelationSchema, VocabError, Vocabulary};

//! Strata's Datalog engine.
//!
//! This crate defines the vocabulary every other crate speaks: the [`Term`] a fact's field is
//! stored as, the [`Value`] a term stands for, and the [`FactSource`] trait through which the
//! engine reads facts. The engine never knows how facts are stored: the `strata-store` crate
//! implements [`FactSource`] over its redb files, and [`MemorySource`] implements it in memory
//! for tests and examples.
//!
//! A query goes through the stages the source tree is laid out by: `front` (text to syntax
//! tree and diagnostics), `link` (names, checks, stratification, lowering to the IR),
//! `rewrite` (demand, join intermediates), `plan`, `exec` (semi-naive rounds on worker
//! threads), `witness` (trees for the rows answered) and `answer` (grouping, ordering,
//! paging, explain). [`Query`] runs them all; [`cypher`] is a second front end. The stages
//! are internal: this root re-exports what a caller uses.
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
pub mod budget;
pub(crate) mod builtins;
pub mod cypher;
pub(crate) mod data;
pub(crate) mod exec;
pub(crate) mod file;
pub(crate) mod front;
#[doc(hidden)]
pub mod fuzz;
#[doc(hidden)]
pub mod ir;
pub(crate) mod link;
#[doc(hidden)]
pub mod naive;
pub(crate) mod ops;
pub(crate) mod plan;
pub(crate) mod rewrite;
pub mod witness;

pub use answer::explain::{How, LiteralReport, RelationReport, Report, RuleReport};
pub use answer::query::{Outcome, Query, QueryError, RunOptions};
pub use answer::{
    Answer, Cell, Cut, CutUnit, PageToken, PageTokenError, Row, ValueCut, witness_line_bytes,
};
pub use budget::{
    ANSWER_BYTES, ANSWER_BYTES_MIN, ByteBudget, ByteSize, ByteSizeError, SharedByteBudget,
};
pub use cypher::{CypherError, CypherQuery, Graph, Mapping, MappingError};
pub use data::memory::MemorySource;
pub use data::source::{FactSource, Origin, RelationInfo, SourceError, Visit};
pub use data::value::{Term, TermKind, Value, canonical_number};
pub use exec::budget::{Cancel, Progress, ProgressCounts};
pub use exec::engine::{
    EvalError, LiteralProfile, MemoryUse, Options as EngineOptions, RelationUse,
};
pub use file::{RegularFileError, open_regular};
pub use front::ast::Span;
pub use front::diagnostic::{Diagnostic, Located, ProgramError};
pub use front::distance::EditDistance;
pub use front::parse::{MAX_PROGRAM_BYTES, MAX_PROGRAM_RULES, parse_module, parse_program};
pub use front::suggest::did_you_mean;
pub use link::compile::{Bind, Compiled, compile};
pub use link::schema::{card, describe};
pub use link::vocab::{
    ModuleFileError, ModuleText, RelationKind, RelationSchema, VocabError, Vocabulary,
};
pub use rewrite::linear::Form as LinearForm;
pub use witness::{Node, write_value};

/// The engine's stages, for the benchmarks and the tests that drive them one by one (the
/// lowered program, the evaluator, the rewrites, the oracle). Not a stable interface.
#[doc(hidden)]
pub mod internals {
    pub use crate::answer::{Input, Window};
    pub use crate::data::radix;
    pub use crate::exec::engine::{EvalError, Evaluation, Options, evaluate};
    pub use crate::exec::witness::Premise;
    pub use crate::front::ast;
    pub use crate::ir;
    pub use crate::ir::{ColumnSpec, HavingSpec, OrderSpec, Shape};
    pub use crate::naive;
    pub use crate::rewrite::{linear, magic, split};
}

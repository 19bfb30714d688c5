//! The Cypher front end: a read query over the property graph derived from the store
//! ([`graph`]), compiled to a Strata program (rules and a goal, as LANGUAGE.md writes them)
//! with its `$params` as binds, then run exactly as `query` runs a program.
//!
//! ```
//! use strata_eval::cypher::{self, Graph, Mapping};
//! use strata_eval::RunOptions;
//! use strata_eval::{Bind, MemorySource, Origin, Value, Vocabulary, FactSource};
//!
//! let mut src = MemorySource::new();
//! src.add_dump_relation("imports", &["src", "dst"], Origin::Edges, "IMPORTS");
//! src.add_dump_relation("package", &["id"], Origin::Nodes, "Package");
//! for p in ["app", "api", "log"] {
//!     src.insert("package", &[Value::text(p)]).unwrap();
//! }
//! for (a, b) in [("app", "api"), ("api", "log")] {
//!     src.insert("imports", &[Value::text(a), Value::text(b)]).unwrap();
//! }
//! let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
//! let graph = Graph::derive(&vocab, &Mapping::default()).unwrap();
//! let q = cypher::prepare(
//!     &vocab,
//!     &graph,
//!     "MATCH (p:Package)-[:IMPORTS]->(:Package {name: $to}) RETURN p.name AS importer",
//!     &[("to".into(), Bind::One(Value::text("log")))],
//! )
//! .unwrap();
//! assert_eq!(q.program, "package(?p), package(?to), imports(?p, ?to) => ?p");
//! let out = q.run(&src, &RunOptions::default()).unwrap();
//! assert!(q.text(&out).starts_with("ran: package(?p), package(?to), imports(?p, ?to) => ?p\ncolumns: importer\n1. api"));
//! ```

mod ast;
mod compile;
mod cond;
pub mod graph;
mod lex;
mod params;
mod parse;
mod pattern;
mod program;

pub use graph::{Graph, Mapping, MappingError};
pub use parse::{MAX_DEPTH, MAX_HOPS};

use crate::answer::query::{Outcome, Query, QueryError, RunOptions};
use crate::data::source::FactSource;
use crate::front::diagnostic::{Diagnostic, ProgramError};
use crate::link::compile::Bind;
use crate::link::vocab::Vocabulary;

/// A Cypher query compiled and checked, ready to run.
#[derive(Clone, Debug)]
pub struct CypherQuery {
    /// The Cypher text.
    pub cypher: String,
    /// The program it compiled to, in canonical form (binds are not spliced in).
    pub program: String,
    /// The binds its `$params` became, and those of named nodes given by a literal identity.
    pub binds: Vec<(String, Bind)>,
    /// The program, prepared; its columns are named as the query named them.
    pub query: Query,
}

/// Why a Cypher query gave no answer. Each shows as the text a user reads; the diagnostics
/// stay data ([`CypherError::diagnostics`]).
#[derive(Debug, thiserror::Error)]
pub enum CypherError {
    /// The query does not parse or compile: the message, the line with a caret, the fix.
    #[error("{0}")]
    Query(ProgramError),
    /// The program it compiled to does not check (a bug of the front end, or a construct it
    /// cannot compile yet): the program, and the checker's diagnostic in it.
    #[error(
        "cypher: the query compiled to a program that doesn't check (a bug of the Cypher \
         front end, or a construct it can't compile yet)\nprogram:\n{}\n{error}",
        indent(program)
    )]
    Refused {
        /// The program, as compiled.
        program: String,
        /// Why it does not check.
        error: ProgramError,
    },
    /// The program's run failed: the error, and the program that ran. (The error is part of
    /// the message, so it is not also given as the source.)
    #[error("cypher: {error}\nran: {program}")]
    Failed {
        /// The program that ran.
        program: String,
        /// Why the run failed.
        error: Box<QueryError>,
    },
}

impl CypherError {
    /// The diagnostics, when the query or the program it compiled to does not check.
    pub fn diagnostics(&self) -> Option<&ProgramError> {
        match self {
            CypherError::Query(p) | CypherError::Refused { error: p, .. } => Some(p),
            CypherError::Failed { error, .. } => error.diagnostics(),
        }
    }
}

/// Compiles `text` over `graph` with `params` the values of its `$params` (by name, without
/// `$`), and checks the program against `vocab`.
pub fn prepare(
    vocab: &Vocabulary,
    graph: &Graph,
    text: &str,
    params: &[(String, Bind)],
) -> Result<CypherQuery, CypherError> {
    let render = |d: Diagnostic| CypherError::Query(ProgramError::new("cypher", text, [d]));
    let ast = parse::parse(text).map_err(render)?;
    let compiled = compile::compile(graph, &ast, params).map_err(render)?;
    let refused = |d: Diagnostic| CypherError::Refused {
        program: compiled.program.clone(),
        error: ProgramError::new("query", &compiled.program, [d]),
    };
    let program_text = &compiled.program;
    let mut program = crate::front::parse::parse_program(program_text).map_err(refused)?;
    let shown = program.to_string();
    let goal_binds = params::bind(&mut program, &compiled.binds);
    let checked = crate::link::compile::compile(vocab, &program, &goal_binds).map_err(refused)?;
    let mut query = Query {
        text: program_text.clone(),
        compiled: checked,
    };
    query.compiled.shape.names = compiled.columns;
    query.compiled.program = shown;
    Ok(CypherQuery {
        cypher: text.to_owned(),
        program: query.compiled.program.clone(),
        binds: compiled.binds,
        query,
    })
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl CypherQuery {
    /// The base relations the program reads (for a BaseFor hook).
    pub fn base_relations(&self) -> &[String] {
        self.query.base_relations()
    }

    /// Runs the program on `base` as `query` runs one; an error shows the program.
    pub fn run(&self, base: &dyn FactSource, options: &RunOptions) -> Result<Outcome, CypherError> {
        self.query.run(base, options).map_err(|e| self.failed(e))
    }

    /// Runs the program with profiling and answers where the work went.
    pub fn explain(
        &self,
        base: &dyn FactSource,
        options: &RunOptions,
    ) -> Result<crate::answer::explain::Report, CypherError> {
        self.query
            .explain(base, options)
            .map_err(|e| self.failed(e))
    }

    fn failed(&self, e: QueryError) -> CypherError {
        CypherError::Failed {
            program: self.program.clone(),
            error: Box::new(e),
        }
    }

    /// The answer as text: `ran: ` and the program, then the rows as `query` writes them.
    pub fn text(&self, out: &Outcome) -> String {
        format!("ran: {}\n{}", self.program, out.answer.text())
    }
}

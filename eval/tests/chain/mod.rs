//! The workload of the bounds tests, shared by eval's `tests/bounds.rs` and the
//! application's `tests/fit.rs` (which include this file): a chain of edges, its closure,
//! and a run of a program over a memory source.

#![allow(dead_code, clippy::unwrap_used)]

use strata_eval::{FactSource, MemorySource, Query, RunOptions, Value, Vocabulary};

/// A chain `e(0, 1), e(1, 2), ..., e(n - 1, n)`.
pub fn chain(n: u32) -> MemorySource {
    let mut s = MemorySource::new();
    s.add_relation("e", &["src", "dst"]);
    for i in 0..n {
        s.insert(
            "e",
            &[Value::Number(f64::from(i)), Value::Number(f64::from(i + 1))],
        )
        .unwrap();
    }
    s
}

/// The closure of `e`, as `p`.
pub const CLOSURE: &str = "p(?x, ?y) :- e(?x, ?y);\np(?x, ?z) :- p(?x, ?y), e(?y, ?z);\n";

/// The answer of `program` over `src`.
pub fn run(src: &MemorySource, program: &str, options: &RunOptions) -> strata_eval::Answer {
    let vocab = Vocabulary::from_sources(src.relations().unwrap(), &[]).unwrap();
    let q = Query::prepare(&vocab, program, &[]).unwrap();
    q.run(src, options).unwrap().answer
}

/// The default options with a row limit of `n`.
pub fn limit(n: u64) -> RunOptions {
    RunOptions {
        limit: n,
        ..RunOptions::default()
    }
}

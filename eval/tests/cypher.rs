//! The Cypher front end, construct by construct: each query runs beside a hand-written Strata
//! program for the same question, and the rows must be the same.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod graphs;

use graphs::{code, example, params, same};

#[test]
fn the_seeds_example() {
    let g = example();
    let ran = same(
        &g,
        "MATCH (p:Package)-[:IMPORTS]->(:Package {name: $to}) RETURN p.name AS importer",
        &params(&[("to", "log")]),
        "pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p",
        1,
    );
    assert_eq!(ran, "pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p");
}

#[test]
fn scratch() {
    let g = code();
    let (rows, ran) = graphs::cypher_rows(
        &g,
        "MATCH (f:File)-[:IMPORTS*]->(t:File {path: 'core/error.rs'}) RETURN f.path ORDER BY f.path",
        &[],
    );
    println!("{ran}\n{rows:?}");
}

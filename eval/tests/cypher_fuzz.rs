//! Property test: whatever text the Cypher front end is given, it answers a program that
//! checks or an error that opens with `cypher: `, never a panic; each query also goes through
//! the Cypher fuzz target (`strata_eval::fuzz::cypher`, over its own small graph).
//! `STRATA_FUZZ_CASES=N` runs N cases a test (see `docs/testing.md`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod graphs;

use proptest::prelude::*;
use strata_eval::{Bind, Value};

/// Pieces of Cypher (and of mistakes) that queries are made of.
const TOKENS: &[&str] = &[
    "MATCH",
    "OPTIONAL MATCH",
    "WHERE",
    "WITH",
    "RETURN",
    "DISTINCT",
    "ORDER BY",
    "DESC",
    "SKIP 1",
    "LIMIT 2",
    "AS x",
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS NULL",
    "IS NOT NULL",
    "STARTS WITH",
    "ENDS WITH",
    "CONTAINS",
    "=~",
    "=",
    "<>",
    "<",
    ">=",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ".",
    "|",
    "*",
    "*1..3",
    "*2..",
    "-",
    "->",
    "<-",
    "--",
    "-->",
    "<--",
    "(f:File)",
    "(g)",
    "(:Symbol {name: 'get'})",
    "(p:Package {name: $x})",
    "[:IMPORTS]",
    "[:CALLS|REFERENCES*]",
    "[r:DEFINES]",
    "f",
    "g",
    "p",
    "s",
    "f.path",
    "f.lines",
    "g.name",
    "count(*)",
    "count(DISTINCT g)",
    "collect(f.path)",
    "sum(f.lines)",
    "id(f)",
    "'a'",
    "\"b\"",
    "1",
    "2.5",
    "-3",
    "$x",
    "$missing",
    "[1, 'a']",
    "null",
    "true",
    "CREATE",
    "SET",
    "é",
    "`q`",
    "// c\n",
    "/*",
    ";",
];

/// Queries that compile, to mutate.
const SEEDS: &[&str] = &[
    "MATCH (f:File)-[:IMPORTS*]->(g:File) WHERE g.path STARTS WITH 'core/' RETURN f.path, count(g) ORDER BY f.path",
    "MATCH (p:Package) OPTIONAL MATCH (p)-[:CONTAINS]->(f:File {lang: $x}) RETURN p.name, f.path",
    "MATCH (s:Symbol) WHERE NOT (s)<-[:CALLS]-() OR s.name IN ['a', 'b'] RETURN s.name",
    "MATCH (f:File)<-[:IMPORTS]-(g) WITH f, count(g) AS n WHERE n > 1 RETURN f.path, n",
];

fn check(g: &graphs::Graph3, q: &str) -> Result<(), TestCaseError> {
    strata_eval::fuzz::cypher(q.as_bytes());
    let params = [("x".to_owned(), Bind::One(Value::text("go")))];
    if let Err(e) = strata_eval::cypher::prepare(&g.1, &g.2, q, &params) {
        let text = e.to_string();
        prop_assert!(text.starts_with("cypher: "), "{q}\n{text}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(strata_fixtures::mutate::cases(400)))]

    #[test]
    fn token_soup_never_panics(picks in prop::collection::vec(0..TOKENS.len(), 0..24)) {
        let g = graphs::code();
        let q: Vec<&str> = picks.iter().map(|i| TOKENS[*i]).collect();
        check(&g, &q.join(" "))?;
    }

    #[test]
    fn any_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..256)) {
        strata_eval::fuzz::cypher(&input);
    }

    #[test]
    fn mutated_queries_never_panic(seed in 0..SEEDS.len(), at in 0usize..200, len in 0usize..12, with in 0..TOKENS.len()) {
        let g = graphs::code();
        let s = SEEDS[seed];
        let mut cut = at.min(s.len());
        while !s.is_char_boundary(cut) { cut -= 1; }
        let mut end = (cut + len).min(s.len());
        while !s.is_char_boundary(end) { end -= 1; }
        let q = format!("{}{}{}", &s[..cut], TOKENS[with], &s[end..]);
        check(&g, &q)?;
    }
}

#[test]
fn the_seeds_compile() {
    let g = graphs::code();
    for q in SEEDS {
        let params = [("x".to_owned(), Bind::One(Value::text("go")))];
        strata_eval::cypher::prepare(&g.1, &g.2, q, &params).unwrap_or_else(|e| panic!("{e}"));
    }
}

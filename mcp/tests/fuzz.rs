//! The stable run of the MCP tool-argument fuzz target (`strata_mcp::fuzz::tool_call`):
//! random bytes and random edits of valid calls of every tool, decoded as the server
//! decodes a call and answered over the bundled example, each an output or an error output,
//! never a panic. `STRATA_FUZZ_CASES=N` runs N cases a test instead of CI's few hundred;
//! the cargo-fuzz target `tool_args` of `fixtures/fuzz` runs the same function on nightly
//! (see `docs/testing.md`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use proptest::prelude::*;
use strata_fixtures::mutate::{self, Edit};
use strata_mcp::Server;
use strata_mcp::fuzz::{TOOLS, tool_call};

/// The example's directory, kept for the test process's life, and its server.
fn server() -> &'static Server {
    static SERVER: OnceLock<(tempfile::TempDir, Server)> = OnceLock::new();
    &SERVER
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let files = strata_fixtures::example::write_example(dir.path()).unwrap();
            let server = strata_mcp::fuzz::server(dir.path(), &files).unwrap();
            (dir, server)
        })
        .1
}

/// A valid call of each tool: the byte that picks it, then its arguments.
fn seeds() -> Vec<Vec<u8>> {
    let calls = [
        (
            "query",
            r#"{"program": "deps.depends_on(\"app\", ?d) => ?d", "limit": 2, "json": true}"#,
        ),
        (
            "query",
            r#"{"program": "imports(?a, ?b) => ?b", "bind": {"a": ["app", "api", 1]}, "page_token": "1"}"#,
        ),
        (
            "cypher",
            r#"{"query": "MATCH (p:Package)-[:IMPORTS]->(q:Package {name: $to}) RETURN p.name", "params": {"to": "api"}}"#,
        ),
        (
            "explain",
            r#"{"program": "pkg(?p, ?l), ?l != \"MIT\" => ?p", "max_work": 50}"#,
        ),
        ("schema", r#"{"path": "deps"}"#),
        ("look", r#"{"target": "deps.depends_on"}"#),
        ("values", r#"{"target": "pkg.license", "limit": 3}"#),
        ("find", r#"{"name": "api", "limit": 2}"#),
    ];
    calls
        .iter()
        .map(|(tool, args)| {
            let mut v = vec![TOOLS.iter().position(|t| t == tool).unwrap() as u8];
            v.extend_from_slice(args.as_bytes());
            v
        })
        .collect()
}

/// Bytes that mean something in a call's JSON or in what its strings hold.
const TOKENS: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"null",
    b"true",
    b"-1",
    b"1e400",
    b"18446744073709551615",
    b"\\u0000",
    b"\\\"",
    b"?d",
    b"$to",
    b"count(?d)",
    b"*1..",
    b"\"json\": true, ",
    b"\"sample\": 3, ",
    b"\"page_token\": \"zz\", ",
    b"\"bind\": {\"d\": []}, ",
    b"\"limt\": 1, ",
    b"\xff",
];

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let bytes = prop_oneof![
        3 => (0..TOKENS.len()).prop_map(|i| TOKENS[i].to_vec()),
        1 => prop::collection::vec(any::<u8>(), 0..6),
    ];
    prop::collection::vec((any::<usize>(), any::<u8>(), bytes), 1..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(strata_fixtures::mutate::cases(300)))]

    #[test]
    fn random_bytes(data in prop::collection::vec(any::<u8>(), 0..256)) {
        tool_call(server(), &data);
    }

    #[test]
    fn mutated_calls(seed in 0usize..8, e in edits()) {
        tool_call(server(), &mutate::apply(&seeds()[seed], &e));
    }
}

#[test]
fn the_seeds_answer() {
    for seed in seeds() {
        let tool = TOOLS[usize::from(seed[0])];
        let args = serde_json::from_slice(&seed[1..]).unwrap();
        let out = server()
            .call(tool, Some(args), &strata_eval::Cancel::new())
            .unwrap();
        assert!(!out.is_error, "{tool}: {}", out.text);
    }
}

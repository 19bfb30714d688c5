//! A SCIP index through the `strata` command: `ingest` by extension and with `--format scip`
//! on standard input, then the bundled `code` module and pack (written by hand here, as the
//! application layer will write them) answering through `query` and `cypher`, and every
//! example of the pack checking against the database's vocabulary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../store/tests/scip/support.rs"]
mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use strata_eval::Vocabulary;
use strata_store::scip::{CODE_MODULE, CODE_PACK};
use support::{document, documents_field, len_field, metadata, occurrence, varint_field};

const A: &str = "t npm demo 1 src/`a.ts`/A#";
const RUN: &str = "t npm demo 1 src/`a.ts`/A#run().";
const HELPER: &str = "t npm demo 1 src/`b.ts`/helper().";
const API: &str = "t npm demo 1 src/`c.ts`/Api#";

/// An occurrence with an enclosing range over lines `from..to`.
fn enclosing(line: u64, symbol: &str, from: u64, to: u64) -> Vec<u8> {
    let mut o = occurrence(line, symbol, 1);
    let mut range = support::varint(from);
    range.extend(support::varint(0));
    range.extend(support::varint(to));
    range.extend(support::varint(0));
    o.extend(len_field(7, &range));
    o
}

/// SymbolInformation: `symbol` implements `target`.
fn implementing(symbol: &str, target: &str) -> Vec<u8> {
    let mut rel = len_field(1, target.as_bytes());
    rel.extend(varint_field(3, 1));
    let mut info = len_field(1, symbol.as_bytes());
    info.extend(len_field(4, &rel));
    info
}

/// A three-file repository `demo`: a.ts's class A implements c.ts's Api and its method run
/// calls b.ts's helper.
fn demo_index() -> Vec<u8> {
    let mut a = document(
        "src/a.ts",
        &[
            enclosing(0, A, 0, 10),
            occurrence(0, API, 0),
            enclosing(1, RUN, 1, 3),
            occurrence(2, HELPER, 0),
        ],
    );
    a.extend(len_field(3, &implementing(A, API)));
    let b = document("src/b.ts", &[occurrence(0, HELPER, 1)]);
    let c = document("src/c.ts", &[occurrence(0, API, 1)]);
    let mut bytes = metadata("file:///home/me/demo");
    for d in [a, b, c] {
        bytes.extend(documents_field(&d));
    }
    bytes
}

/// The index with its package renamed from `demo` to `othr` (same length, so every length
/// prefix stays right).
fn other_package(index: &[u8]) -> Vec<u8> {
    let (from, to) = (b"npm demo 1", b"npm othr 1");
    let mut out = index.to_vec();
    let mut i = 0;
    while i + from.len() <= out.len() {
        if &out[i..i + from.len()] == from {
            out[i..i + from.len()].copy_from_slice(to);
        }
        i += 1;
    }
    out
}

fn strata(args: &[&str], stdin: Option<&[u8]>) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "strata {args:?} failed: {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn install_code(db: &Path) {
    std::fs::create_dir_all(db.join("modules")).unwrap();
    std::fs::write(db.join("modules/code.dl"), CODE_MODULE).unwrap();
    std::fs::write(db.join("strata.toml"), CODE_PACK).unwrap();
}

#[test]
fn a_scip_index_answers_through_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db_s = db.to_str().unwrap();
    let file = dir.path().join("index.scip");
    std::fs::write(&file, demo_index()).unwrap();
    let said = strata(&["ingest", db_s, file.to_str().unwrap()], None);
    assert!(said.contains("relations: defines"), "{said}");
    // The same files on standard input, for another repository named by --unit whose
    // package is another (so its symbols are others: symbols are what join indexes).
    strata(
        &["ingest", db_s, "-", "--format", "scip", "--unit", "other"],
        Some(&other_package(&demo_index())),
    );
    install_code(&db);

    let q = |program: &str| strata(&["query", db_s, program, "--no-witnesses"], None);
    let out = q(r#"code.depends_on("demo/src/a.ts", ?d) => ?d"#);
    assert!(
        out.contains("demo/src/b.ts") && out.contains("demo/src/c.ts"),
        "{out}"
    );
    assert!(!out.contains("other/"), "repositories mixed: {out}");
    let out = q(r#"code.impact("other/src/b.ts", ?p) => ?p"#);
    assert!(out.contains("2 rows"), "{out}");
    assert!(
        out.contains("other/src/a.ts") && out.contains("other/src/b.ts"),
        "{out}"
    );
    let out = q(&format!(r#"code.callers("{HELPER}", ?c) => ?c"#));
    assert!(
        out.contains(RUN) && out.lines().any(|l| l == "1 row"),
        "{out}"
    );
    let out = q(&format!(r#"code.implementations("{API}", ?s) => ?s"#));
    assert!(out.contains(A), "{out}");

    let out = strata(
        &[
            "cypher",
            db_s,
            "MATCH (d:Document)-[:REFERENCES]->(s:Symbol {display_name: \"helper\"}) \
             RETURN d.path AS file",
        ],
        None,
    );
    assert!(
        out.contains("demo/src/a.ts") && out.contains("other/src/a.ts"),
        "{out}"
    );
    let out = strata(
        &[
            "cypher",
            db_s,
            "MATCH (a:Symbol)-[:USES]->(b:Symbol) MATCH (a)-[:MEMBER_OF]->(o:Symbol) \
             RETURN b.display_name AS used, o.display_name AS owner",
        ],
        None,
    );
    assert!(out.contains("helper") && out.contains("A"), "{out}");
}

#[test]
fn every_pack_example_checks_against_a_scip_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let file = dir.path().join("index.scip");
    std::fs::write(&file, demo_index()).unwrap();
    strata(
        &["ingest", db.to_str().unwrap(), file.to_str().unwrap()],
        None,
    );
    install_code(&db);
    let pack = strata_mcp::Pack::parse(CODE_PACK).unwrap();
    assert_eq!(pack.name, "code");
    assert!(pack.examples.len() >= 7);
    let store = strata_store::Store::open(&db, Default::default()).unwrap();
    let snap = store.snapshot().unwrap();
    let vocab = Vocabulary::load(&snap, Some(&db.join("modules"))).unwrap();
    for relation in [
        "depends_on",
        "dependents",
        "callers",
        "callees",
        "implementations",
        "defined_in",
        "impact",
    ] {
        assert!(
            pack.examples
                .iter()
                .any(|e| e.program.contains(&format!("code.{relation}("))),
            "no example for code.{relation}"
        );
    }
    for e in &pack.examples {
        strata_eval::Query::prepare(&vocab, &e.program, &[])
            .unwrap_or_else(|err| panic!("{}: {err}", e.program));
    }
    let graph = strata_eval::cypher::Graph::derive(&vocab, &pack.cypher.mapping()).expect("graph");
    for e in &pack.cypher_examples {
        strata_eval::cypher::prepare(&vocab, &graph, &e.query, &[])
            .unwrap_or_else(|err| panic!("{}: {err}", e.query));
    }
}

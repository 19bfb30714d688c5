//! A SCIP index through the `strata` command: `ingest` by extension and with `--format scip`
//! on standard input, which writes the bundled `code` module and pack into a database without
//! a pack (and never over a user's); the module and pack answering through `query` and
//! `cypher`, every example of the pack checking against the database's vocabulary; the
//! documents line of a replacing ingest; and `--repo` keeping two repositories' documents
//! apart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../store/tests/scip/support.rs"]
mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use strata_eval::Vocabulary;
use strata_store::scip::CODE_MODULE;
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

/// `src/a.ts`: its class A implements c.ts's Api and its method run calls b.ts's helper.
fn document_a() -> Vec<u8> {
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
    a
}

/// A three-file repository `demo`: a.ts's class A implements c.ts's Api and its method run
/// calls b.ts's helper.
fn demo_index() -> Vec<u8> {
    let a = document_a();
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

/// The first SCIP ingest wrote the bundled module and pack, the pack's examples naming the
/// ingested code (issue 32: never `myrepo/src/index.ts`); answers the pack.
fn assert_code_installed(db: &Path) -> strata_mcp::Pack {
    assert!(
        std::fs::read_to_string(db.join("modules/code.dl"))
            .unwrap()
            .ends_with(CODE_MODULE)
    );
    let text = std::fs::read_to_string(db.join("strata.toml")).unwrap();
    assert!(!text.contains("{{") && !text.contains("myrepo"), "{text}");
    let pack = strata_mcp::Pack::parse(&text).unwrap();
    assert!(
        pack.examples
            .iter()
            .any(|e| e.program.contains("\"demo/src/")),
        "{text}"
    );
    pack
}

/// A temporary folder with `index.scip` (the demo index) and the path of a database `db`
/// beside it, not created yet.
fn demo_database() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let file = dir.path().join("index.scip");
    std::fs::write(&file, demo_index()).unwrap();
    (dir, db, file)
}

/// `strata ARGS` that must fail; answers its standard error.
fn strata_fails(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success(), "strata {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The demo index without its document `src/b.ts` and with `src/c.ts` defining `extra`.
fn demo_index_changed() -> Vec<u8> {
    let full = demo_index();
    let mut bytes = metadata("file:///home/me/demo");
    let a = document_a();
    let c = document(
        "src/c.ts",
        &[
            occurrence(0, API, 1),
            occurrence(1, "t npm demo 1 src/`c.ts`/extra().", 1),
        ],
    );
    for d in [a, c] {
        bytes.extend(documents_field(&d));
    }
    assert_ne!(bytes, full);
    bytes
}

#[test]
fn a_scip_index_answers_through_the_command() {
    let (_dir, db, file) = demo_database();
    let db_s = db.to_str().unwrap();
    let said = strata(&["ingest", db_s, file.to_str().unwrap()], None);
    assert!(
        said.contains("relations: call_site, checkout, defines, "),
        "{said}"
    );
    assert!(said.contains("; 3 documents read; "), "{said}");
    assert!(
        said.contains(
            "wrote the bundled code pack, its examples from this code: strata.toml \
                       and modules/code.dl"
        ),
        "{said}"
    );
    assert_code_installed(&db);
    // The same files on standard input, for another repository named by --unit whose
    // package is another (so its symbols are others: symbols are what join indexes).
    let said = strata(
        &["ingest", db_s, "-", "--format", "scip", "--unit", "other"],
        Some(&other_package(&demo_index())),
    );
    assert!(!said.contains("code pack"), "{said}");

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
    // Text names symbols as a person does, JSON carries them whole.
    let out = q(&format!(r#"code.callers("{HELPER}", ?c) => ?c"#));
    assert!(
        out.contains("1. A.run()\n") && out.lines().any(|l| l == "1 row"),
        "{out}"
    );
    assert!(out.contains("  A.run() demo/src/a.ts:"), "{out}");
    let qj = |program: &str| strata(&["query", db_s, program, "--json"], None);
    let out = qj(&format!(r#"code.callers("{HELPER}", ?c) => ?c"#));
    assert!(out.contains(RUN), "{out}");
    let out = qj(&format!(r#"code.implementations("{API}", ?s) => ?s"#));
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
    let pack = assert_code_installed(&db);
    assert_eq!(pack.name, "code");
    assert!(pack.examples.len() >= 7);
    let store = strata_store::Store::open(&db, Default::default()).unwrap();
    let snap = store.snapshot().unwrap();
    let vocab = Vocabulary::load(&snap, Some(&db.join("modules"))).unwrap();
    for relation in [
        "depends_on",
        "dependents",
        "call_sites",
        "callers",
        "all_callers",
        "callees",
        "all_callees",
        "other_sites",
        "implementations",
        "defined_in",
        "impact",
        "outline",
        "unreferenced",
        "symbol_impact",
        "dir_deps",
        "dir_cycles",
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

#[test]
fn the_code_pack_is_written_once_and_never_over_a_users() {
    let (dir, db, file) = demo_database();
    let db_s = db.to_str().unwrap();
    strata(&["ingest", db_s, file.to_str().unwrap()], None);
    assert_code_installed(&db);
    // The instructions an agent reads speak about code.
    let app = strata_app::App::open(&db, strata_app::Options::default()).unwrap();
    let instructions = app.instructions();
    assert!(
        instructions.contains("a codebase read from SCIP indexes")
            && instructions.contains("code.call_sites"),
        "{instructions}"
    );
    assert!(
        app.graph_summary()
            .is_some_and(|g| g.contains("Document") && g.contains("REFERENCES")),
        "{:?}",
        app.graph_summary()
    );
    drop(app);
    // Cypher over the pack's labels and types, in the plain form.
    let out = strata(
        &[
            "cypher",
            db_s,
            "MATCH (d:Document)-[:REFERENCES]->(s:Symbol) RETURN d.path AS file, s.symbol AS sym",
            "--json",
        ],
        None,
    );
    assert!(
        out.contains("demo/src/a.ts") && out.contains(HELPER) && out.contains(API),
        "{out}"
    );
    // Edited by the user: the next ingest leaves both alone.
    std::fs::write(
        db.join("modules/code.dl"),
        format!("{CODE_MODULE}\n// mine\n"),
    )
    .unwrap();
    std::fs::remove_file(db.join("strata.toml")).unwrap();
    let said = strata(&["ingest", db_s, file.to_str().unwrap(), "--replace"], None);
    assert!(!said.contains("code pack"), "{said}");
    assert!(!db.join("strata.toml").exists());
    assert!(
        std::fs::read_to_string(db.join("modules/code.dl"))
            .unwrap()
            .ends_with("// mine\n")
    );

    // A database with a pack of its own (from dumps): a SCIP ingest writes nothing.
    let users = dir.path().join("users");
    let dump = dir.path().join("x.edges.tsv");
    std::fs::write(&dump, "a\tIMPORTS\tb\n").unwrap();
    let users_s = users.to_str().unwrap();
    let said = strata(&["ingest", users_s, dump.to_str().unwrap()], None);
    assert!(
        !said.contains("code pack"),
        "a dump writes no code pack: {said}"
    );
    let mine = "name = \"mine\"\nabout = \"my packages\"\n";
    std::fs::write(users.join("strata.toml"), mine).unwrap();
    let said = strata(&["ingest", users_s, file.to_str().unwrap()], None);
    assert!(!said.contains("code pack"), "{said}");
    assert_eq!(
        std::fs::read_to_string(users.join("strata.toml")).unwrap(),
        mine
    );
    assert!(!users.join("modules").exists());
}

#[test]
fn a_replacing_ingest_counts_its_documents() {
    let (dir, db, file) = demo_database();
    let db_s = db.to_str().unwrap();
    let file_s = file.to_str().unwrap();
    let said = strata(&["ingest", db_s, file_s, "--replace"], None);
    assert!(
        said.contains("; 0 documents unchanged, 0 replaced, 3 added, 0 removed; "),
        "{said}"
    );
    let said = strata(&["ingest", db_s, file_s, "--replace"], None);
    assert!(
        said.contains("; 3 documents unchanged, 0 replaced, 0 added, 0 removed; "),
        "{said}"
    );
    std::fs::write(&file, demo_index_changed()).unwrap();
    let said = strata(&["ingest", db_s, file_s, "--replace"], None);
    assert!(
        said.contains("; 1 documents unchanged, 1 replaced, 0 added, 1 removed; "),
        "{said}"
    );
    // A dump's batch has no documents line.
    let dump = dir.path().join("x.edges.tsv");
    std::fs::write(&dump, "a\tIMPORTS\tb\n").unwrap();
    let said = strata(&["ingest", db_s, dump.to_str().unwrap()], None);
    assert!(!said.contains("documents"), "{said}");
}

#[test]
fn repo_names_the_repository_and_replace_keeps_to_it() {
    let (dir, db, file) = demo_database();
    let db_s = db.to_str().unwrap();
    let file_s = file.to_str().unwrap();
    // Two repositories with the same src/a.ts, src/b.ts, src/c.ts (and the same symbols).
    strata(&["ingest", db_s, file_s, "--repo", "one"], None);
    strata(&["ingest", db_s, file_s, "--repo", "two"], None);
    let q = |program: &str| strata(&["query", db_s, program, "--no-witnesses"], None);
    let qj = |program: &str| strata(&["query", db_s, program, "--json"], None);
    let out = q("document(?p, _) => ?p");
    for p in [
        "one/src/a.ts",
        "one/src/b.ts",
        "two/src/a.ts",
        "two/src/b.ts",
    ] {
        assert!(out.contains(p), "{p} in {out}");
    }
    assert!(out.contains("6 rows"), "{out}");
    assert!(
        !out.contains("demo/"),
        "--repo wins over project_root: {out}"
    );

    // A new index of `one` without src/b.ts, with --replace: `two` keeps its b.ts.
    let changed = dir.path().join("changed.scip");
    std::fs::write(&changed, demo_index_changed()).unwrap();
    let said = strata(
        &[
            "ingest",
            db_s,
            changed.to_str().unwrap(),
            "--repo",
            "one",
            "--replace",
        ],
        None,
    );
    assert!(
        said.contains("; 1 documents unchanged, 1 replaced, 0 added, 1 removed; "),
        "{said}"
    );
    let out = q("document(?p, _) => ?p");
    assert!(out.contains("5 rows"), "{out}");
    assert!(!out.contains("one/src/b.ts"), "{out}");
    assert!(out.contains("two/src/b.ts"), "{out}");
    let out = qj(r#"defines("two/src/b.ts", ?s) => ?s"#);
    assert!(out.contains(HELPER), "{out}");
    let out = qj(r#"references("two/src/a.ts", ?s) => ?s"#);
    assert!(out.contains(HELPER), "{out}");

    // --repo is for SCIP indexes, and one path segment.
    let dump = dir.path().join("x.edges.tsv");
    std::fs::write(&dump, "a\tIMPORTS\tb\n").unwrap();
    let err = strata_fails(&["ingest", db_s, dump.to_str().unwrap(), "--repo", "one"]);
    assert!(
        err.contains("--repo names the repository of a SCIP index"),
        "{err}"
    );
    let err = strata_fails(&["ingest", db_s, file_s, "--repo", "one/sub"]);
    assert!(err.contains("one path segment"), "{err}");
}

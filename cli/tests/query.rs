//! `strata query`, `explain` and `schema` on the bundled example, end to end through the
//! binary: the seed's answers, its error, JSON with the snapshot, and tiers opened only when
//! a program reads them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

fn strata(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn example(dir: &Path) -> String {
    let files = strata_fixtures::example::write_example(dir).unwrap();
    let db = dir.to_str().unwrap().to_owned();
    let mut args = vec!["ingest", db.as_str(), "--label", "commit=abc123"];
    let names: Vec<String> = files
        .iter()
        .map(|f| f.to_str().unwrap().to_owned())
        .collect();
    args.extend(names.iter().map(String::as_str));
    let (ok, _, err) = strata(&args);
    assert!(ok, "{err}");
    db
}

#[test]
fn the_seeds_query_answers_as_the_seed_does() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let (ok, out, err) = strata(&[
        "query",
        &db,
        r#"deps.depends_on("app", ?d) => ?d"#,
        "--limit",
        "2",
    ]);
    assert!(ok, "{err}");
    assert_eq!(out, strata_fixtures::example::SEED_ANSWER);
    let (ok, out, _) = strata(&[
        "query",
        &db,
        r#"deps.depends_on("app", ?d) => ?d"#,
        "--limit",
        "2",
        "--page-token",
        "2",
        "--no-witnesses",
    ]);
    assert!(ok);
    assert_eq!(out, "columns: d\n3. util\nrows 3 to 3 of 3\n");
}

#[test]
fn a_wrong_program_gets_the_error_with_caret_and_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let (ok, out, err) = strata(&["query", &db, r#"depends_on("app", ?d) => ?d"#]);
    assert!(!ok);
    assert_eq!(out, "");
    assert_eq!(
        err,
        "query: unknown relation \"depends_on\"; did you mean \"deps.depends_on\"?\nline 1, column 1:\n  depends_on(\"app\", ?d) => ?d\n  ^\nfix: did you mean \"deps.depends_on\"?\n"
    );
}

#[test]
fn json_answers_carry_rows_witnesses_and_the_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let (ok, out, err) = strata(&[
        "query",
        &db,
        "pkg(?p, ?l), imports(?p, ?to) => ?p, ?l",
        "--json",
        "--bind",
        "to=log",
    ]);
    assert!(ok, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["columns"], serde_json::json!(["p", "l"]));
    assert_eq!(j["rows"], serde_json::json!([["api", null]]));
    assert_eq!(j["total"], 1);
    assert_eq!(j["next"], serde_json::Value::Null);
    assert_eq!(j["snapshot"]["seq"], 1);
    assert_eq!(j["snapshot"]["labels"]["commit"], "abc123");
    assert_eq!(j["witnesses"][0][0]["fact"], "pkg(\"api\", absent)");
}

#[test]
fn explain_and_sample_say_what_matched_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let (ok, out, _) = strata(&[
        "query",
        &db,
        r#"imports(?a, ?d), pkg(?d, "GPL") => ?d"#,
        "--sample",
        "3",
    ]);
    assert!(ok);
    assert_eq!(
        out,
        "columns: d\n0 rows\nwhy: pkg(?d, \"GPL\") matched nothing\n"
    );
    let (ok, out, _) = strata(&["explain", &db, r#"deps.depends_on("app", ?d) => ?d"#]);
    assert!(ok);
    assert!(out.contains("answer: 3 rows"), "{out}");
    assert!(
        out.contains("deps.depends_on: computed by demand for argument 1"),
        "{out}"
    );
}

#[test]
fn schema_shows_the_card_and_a_module() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let (ok, out, _) = strata(&["schema", &db, "deps"]);
    assert!(ok);
    assert_eq!(
        out,
        "module deps\ndeps.depends_on(a, b) # Everything a package depends on, directly or through others.\n"
    );
    let (ok, out, _) = strata(&["schema", &db]);
    assert!(ok);
    assert!(out.starts_with("relations:\nimports(src, dst) [3 facts]\npackage(id) [4 facts]\npkg(name, license) # The packages and the license each states. [4 facts]"), "{out}");
}

#[test]
fn a_query_opens_only_the_tiers_it_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let big = tmp.path().join("refs.edges.tsv");
    let mut lines = String::new();
    for i in 0..2000 {
        lines.push_str(&format!("sym{i}\tREFERENCES\tsym{}\n", i / 2));
    }
    std::fs::write(&big, lines).unwrap();
    let (ok, _, err) = strata(&["ingest", &db, big.to_str().unwrap(), "--tier", "refs"]);
    assert!(ok, "{err}");
    let tiers = |program: &str| {
        let (ok, out, err) = strata(&["query", &db, program, "--json"]);
        assert!(ok, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        j["tiers"].clone()
    };
    assert_eq!(
        tiers(r#"imports("app", ?d) => ?d"#),
        serde_json::json!(["default"])
    );
    assert_eq!(
        tiers(r#"references("sym10", ?d) => ?d"#),
        serde_json::json!(["default", "refs"])
    );
}

/// The small code graph's dumps, ingested into `dir`.
fn code_graph(dir: &Path) -> String {
    let db = dir.join("db");
    let db = db.to_str().unwrap().to_owned();
    let mut args = vec!["ingest".to_owned(), db.clone()];
    for (name, text) in strata_fixtures::small::FILES {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        args.push(path.to_str().unwrap().to_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, _, err) = strata(&args);
    assert!(ok, "{err}");
    db
}

#[test]
fn cypher_answers_the_seeds_call_as_the_seed_does() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let (ok, out, err) = strata(&[
        "cypher",
        &db,
        "MATCH (p:Package)-[:IMPORTS]->(:Package {name: $to}) RETURN p.name AS importer",
        "--param",
        "to=log",
    ]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "ran: pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p\ncolumns: importer\n1. api\n   \
         pkg(\"api\", absent)\n   pkg(\"log\", \"\")\n   imports(\"api\", \"log\")\n1 row\n"
    );
    let (ok, out, _) = strata(&["schema", &db, "cypher"]);
    assert!(ok);
    assert!(
        out.contains("Package {license, name} from pkg(name, license), identity name"),
        "{out}"
    );
    let (ok, out, err) = strata(&["agent-line", &db]);
    assert!(ok, "{err}");
    assert!(
        out.ends_with("then query, or cypher to ask in Cypher.\n"),
        "{out}"
    );
    // The line names the server as the docs register it, not by the pack's name.
    assert!(out.contains("use the strata MCP server"), "{out}");
    let (ok, out, err) = strata(&["agent-line", &db, "--name", "deps-graph"]);
    assert!(ok, "{err}");
    assert!(out.contains("use the deps-graph MCP server"), "{out}");
}

#[test]
fn cypher_over_a_code_graph_pages_and_answers_json() {
    let tmp = tempfile::tempdir().unwrap();
    let db = code_graph(tmp.path());
    let q = "MATCH (f:File)-[:IMPORTS*]->(:File {path: $target}) RETURN f.path AS dependent ORDER BY dependent";
    let (ok, out, err) = strata(&[
        "cypher",
        &db,
        q,
        "--param",
        "target=core/error.rs",
        "--limit",
        "2",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("ran: _path1(?x, ?y) :- imports(?x, ?y);\n"),
        "{out}"
    );
    assert!(out.contains("columns: dependent\n1. app/cli.py\n"), "{out}");
    assert!(
        out.ends_with("rows 1 to 2 of 9; continue with page_token \"2\"\n"),
        "{out}"
    );
    let (ok, out, err) = strata(&[
        "cypher",
        &db,
        q,
        "--param",
        "target=core/error.rs",
        "--json",
        "--no-witnesses",
        "--page-token",
        "8",
    ]);
    assert!(ok, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["cypher"], q);
    assert!(
        j["program"]
            .as_str()
            .unwrap()
            .contains("=> ?f_path order by ?f_path"),
        "{j}"
    );
    assert_eq!(j["rows"], serde_json::json!([["util/strings.rs"]]));
    assert_eq!(j["total"], 9);
}

#[test]
fn a_refused_cypher_query_exits_1_with_caret_and_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let db = code_graph(tmp.path());
    let (ok, out, err) = strata(&["cypher", &db, "MATCH (f:File) SET f.lines = 1 RETURN f"]);
    assert!(!ok);
    assert!(out.is_empty());
    assert_eq!(
        err,
        "cypher: SET writes to the graph, and the cypher tool only reads\nline 1, column 16:\n  \
         MATCH (f:File) SET f.lines = 1 RETURN f\n                 ^\nfix: ask with MATCH ... \
         RETURN; facts are changed with `strata ingest --replace`\n"
    );
}

#[test]
fn issue20_budget_errors_print_once() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let (ok, _, err) = strata(&["query", &db, "imports(?a, ?b) => ?a, ?b", "--max-work", "1"]);
    assert!(!ok);
    // Was the message, then ": " and the message again.
    assert_eq!(
        err,
        "error: query: the program passed its work budget of 1 units\n"
    );
    let (ok, _, err) = strata(&[
        "query",
        &db,
        r#"deps.depends_on("app", ?d) => ?d"#,
        "--timeout",
        "0.000001s",
    ]);
    assert!(!ok);
    assert_eq!(err.matches("ran past its time limit").count(), 1, "{err}");
}

#[test]
fn issue20_limit_0_is_refused_and_witness_row_answers_one_row() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let program = r#"deps.depends_on("app", ?d) => ?d"#;
    let (ok, out, err) = strata(&["query", &db, program, "--limit", "0"]);
    assert!(!ok);
    assert_eq!(out, "");
    assert_eq!(
        err,
        "error: query: limit 0 asks for no rows; pass a limit from 1 to 100 (the server's \
         limit), or leave it out for 100\n"
    );
    let (ok, out, err) = strata(&["query", &db, program, "--witness-row", "3"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("columns: d\n3. util\n"), "{out}");
    assert!(out.ends_with("rows 3 to 3 of 3\n"), "{out}");
    let (ok, out, err) = strata(&["query", &db, program, "--max-bytes", "1100"]);
    assert!(ok, "{err}");
    assert!(out.len() <= 1100, "{out}");
    assert!(
        out.contains("left out to keep the answer under 1100 bytes"),
        "{out}"
    );
}

#[test]
fn issue18_stats_space_and_compact_through_the_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let (ok, out, err) = strata(&["stats", "--space", &db]);
    assert!(ok, "{err}");
    assert!(out.contains("bytes per fact"), "{out}");
    assert!(out.contains("  blocks: "), "{out}");
    let more: String = (0..3000)
        .map(|i| format!("x{i}\tIMPORTS\ty{i}\textra\n"))
        .collect();
    let file = tmp.path().join("more.edges.tsv");
    std::fs::write(&file, more).unwrap();
    let (ok, _, err) = strata(&["ingest", &db, file.to_str().unwrap()]);
    assert!(ok, "{err}");
    let (ok, _, err) = strata(&["retract", &db, "--unit", "extra"]);
    assert!(ok, "{err}");
    let (ok, out, err) = strata(&["compact", &db]);
    assert!(ok, "{err}");
    assert!(
        out.contains("strata.redb: ")
            && out.contains(" bytes before, ")
            && out.contains("given back"),
        "{out}"
    );
    let (ok, out, err) = strata(&["query", &db, "imports(\"app\", ?d) => ?d"]);
    assert!(ok, "{err}");
    assert!(out.contains("api"), "{out}");
    let (ok, _, err) = strata(&["check", &db]);
    assert!(ok, "{err}");
}

/// The README's quick start shows the seed answer as `strata demo` prints it: both are
/// checked against the one copy in `fixtures/answers/seed.txt`.
#[test]
fn the_readme_and_demo_show_the_one_seed_answer() {
    use strata_fixtures::example::{SEED_ANSWER, SEED_QUESTION};
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    assert!(
        readme.contains(&format!("`{SEED_QUESTION}`")),
        "the README no longer names the seed question"
    );
    assert!(
        readme.contains(&format!("```\n{SEED_ANSWER}```\n")),
        "the README's example answer differs from fixtures/answers/seed.txt"
    );
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let (ok, out, err) = strata(&["demo", demo.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains(SEED_ANSWER), "{out}");
}

#[test]
fn a_relation_indexed_on_its_first_column_still_answers_by_its_second() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db = db.to_str().unwrap();
    let facts = tmp.path().join("e.facts");
    let mut lines = String::new();
    for i in 0..3000 {
        lines.push_str(&format!("{i}\t{}\n", i * 7 % 101));
    }
    std::fs::write(&facts, lines).unwrap();
    let file = facts.to_str().unwrap();
    // A malformed declaration, and one that leaves out the first column.
    let (ok, _, err) = strata(&["ingest", db, file, "--index", "e"]);
    assert!(
        !ok && err.contains("--index e: write it as REL=COL,COL"),
        "{err}"
    );
    let (ok, _, err) = strata(&["ingest", db, file, "--index", "e=c2"]);
    assert!(
        !ok && err.contains("its first column, \"c1\", is always indexed"),
        "{err}"
    );
    let (ok, _, err) = strata(&["ingest", db, file, "--index", "e=c1"]);
    assert!(ok, "{err}");
    let (ok, out, _) = strata(&["stats", db]);
    assert!(ok);
    assert!(out.contains("c2 (at most 101 distinct; no index)"), "{out}");
    // The schema an agent reads says so too.
    let (ok, out, _) = strata(&["schema", db]);
    assert!(ok);
    assert!(
        out.contains("e(c1, c2) [3000 facts; no index on c2]"),
        "{out}"
    );
    let (ok, out, _) = strata(&["schema", db, "e"]);
    assert!(ok);
    assert!(
        out.contains("c2: at most 101 distinct values; no index"),
        "{out}"
    );
    let (ok, out, err) = strata(&["query", db, "q(?a) :- e(?a, 5), ?a < 300; q(?a)"]);
    assert!(ok, "{err}");
    // 7a = 5 (mod 101): a = 44, 145, 246.
    assert!(out.contains("3 rows"), "{out}");
    assert!(
        out.contains("\nnote: e was read whole, as c2 has no index (`strata index DB e=c1,c2`"),
        "{out}"
    );
    for a in ["44", "145", "246"] {
        assert!(out.contains(&format!("q({a})")), "{out}");
    }
    let (ok, out, _) = strata(&["check", db]);
    assert!(ok && out.starts_with("ok"), "{out}");
    // `strata index` builds the second column's postings; the answer is the same.
    let (ok, _, err) = strata(&["index", db, "e"]);
    assert!(
        !ok && err.contains("e: write it as REL=COL,COL, e.g. e=src"),
        "{err}"
    );
    let (ok, _, err) = strata(&["index", db, "f=c1"]);
    assert!(
        !ok && err.contains("indexes are declared for relation \"f\", which this batch"),
        "{err}"
    );
    let (ok, out, err) = strata(&["index", db, "e=c1,c2"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("\nbuilt the index of e.c2: 101 values"),
        "{out}"
    );
    let (ok, out, _) = strata(&["stats", db]);
    assert!(ok && out.contains("c2 (101 distinct)"), "{out}");
    let (ok, out, err) = strata(&["query", db, "q(?a) :- e(?a, 5), ?a < 300; q(?a)"]);
    assert!(ok && out.contains("3 rows"), "{err}{out}");
    assert!(!out.contains("read whole"), "{out}");
    let (ok, out, _) = strata(&["index", db, "e=c1,c2"]);
    assert!(ok && out.contains("nothing built or dropped"), "{out}");
    let (ok, out, _) = strata(&["check", db]);
    assert!(ok && out.starts_with("ok"), "{out}");
}

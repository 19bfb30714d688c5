//! The application core answering typed requests on the bundled example database: each
//! request's response, its text and its JSON (typed: a count is an integer), and its
//! errors as data.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use strata_app::ingest::{DumpFiles, dump_specs, ingest};

use serde_json::json;
use strata_app::pack::Pack;
use strata_app::{
    App, Call, CallError, CypherRequest, ExplainRequest, FindRequest, LookRequest, Options, Page,
    QueryRequest, Render, SchemaRequest, ValuesRequest, binds_from_flags, binds_from_json,
};
use strata_eval::Cancel;
use strata_store::{BatchOptions, OpenOptions, Store};

/// Writes the example into `dir` and ingests its dumps as one batch labelled
/// `commit=abc123`.
fn example_store(dir: &Path) -> Store {
    let files = strata_fixtures::example::write_example(dir).unwrap();
    let specs = dump_specs(&DumpFiles {
        files,
        ..DumpFiles::default()
    })
    .unwrap();
    let mut options = BatchOptions::default();
    options
        .labels
        .insert("commit".to_owned(), "abc123".to_owned());
    ingest(dir, &specs, options, |_, _| {}, || {}).unwrap();
    Store::open(dir, OpenOptions::default()).unwrap()
}

fn app(dir: &Path) -> App {
    let store = example_store(dir);
    App::new(store, Pack::load(dir).unwrap(), Options::default()).unwrap()
}

fn query(program: &str) -> QueryRequest {
    QueryRequest {
        program: program.to_owned(),
        binds: Vec::new(),
        page: Page::default(),
    }
}

#[test]
fn query_answers_rows_witnesses_and_the_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let mut r = query(r#"deps.depends_on("app", ?d) => ?d"#);
    r.page.limit = Some(2);
    let out = app
        .query(&Call::plain("query"), &r, &Cancel::new())
        .unwrap();
    assert_eq!(out.answer.answer.total, 3);
    assert_eq!(out.run.tiers.as_deref(), Some(&["default".to_owned()][..]));
    let snap = out.run.snapshot.clone().unwrap();
    assert_eq!(snap.seq, 1);
    assert_eq!(snap.labels["commit"], "abc123");
    let text = out.text();
    assert!(text.starts_with("columns: d\n1. api\n"), "{text}");
    assert!(
        text.ends_with("rows 1 to 2 of 3; continue with page_token \"2\""),
        "{text}"
    );
    let j = out.json();
    assert_eq!(j["columns"], json!(["d"]));
    assert_eq!(j["rows"], json!([["api"], ["log"]]));
    assert_eq!(j["next"], "2");
    assert_eq!(j["snapshot"]["labels"]["commit"], "abc123");
    assert_eq!(j["tiers"], json!(["default"]));
    assert!(j["work"].is_u64());
    assert_eq!(
        j["witnesses"][0][0]["fact"],
        "deps.depends_on(\"app\", \"api\")"
    );
    assert!(j.get("why").is_none() && j.get("hint").is_none());
    // The next page, from the token.
    r.page.page_token = "2".to_owned();
    let out = app
        .query(&Call::plain("query"), &r, &Cancel::new())
        .unwrap();
    assert_eq!(out.json()["rows"], json!([["util"]]));
}

#[test]
fn a_count_is_an_integer_in_json() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let r = query("?n = count(?b) : { imports(?a, ?b) } => ?n");
    let out = app
        .query(&Call::plain("query"), &r, &Cancel::new())
        .unwrap();
    let j = out.json();
    assert!(j["rows"][0][0].is_u64(), "{j}");
    let text = out.json_text();
    assert!(!text.contains(".0"), "{text}");
}

#[test]
fn binds_from_either_adapter_give_the_same_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let program = "imports(?from, ?to) => ?to";
    let json_binds = binds_from_json("query", json!({"from": "app"}).as_object().unwrap()).unwrap();
    let flag_binds = binds_from_flags("query", "--bind", &["?from=app".to_owned()]).unwrap();
    assert_eq!(json_binds, flag_binds);
    let mut r = query(program);
    r.binds = json_binds;
    let out = app
        .query(&Call::plain("query"), &r, &Cancel::new())
        .unwrap();
    assert_eq!(out.json()["rows"], json!([["api"]]));
}

#[test]
fn a_wrong_program_is_a_program_error_with_its_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let e = app
        .query(
            &Call::plain("query"),
            &query(r#"depends_on("app", ?d) => ?d"#),
            &Cancel::new(),
        )
        .unwrap_err();
    assert_eq!(e.kind(), "program");
    let text = e.to_string();
    assert!(
        text.contains("fix: did you mean \"deps.depends_on\"?"),
        "{text}"
    );
    assert_eq!(e.json()["error"]["kind"], "program");
    assert_eq!(e.json()["error"]["message"], text);
    let d = &e.json()["error"]["diagnostic"]["diagnostics"][0];
    assert_eq!(d["line"], 1);
    assert_eq!(d["column"], 1);
    assert_eq!(d["fix"], "did you mean \"deps.depends_on\"?");

    let mut r = query("imports(?a, ?b) => ?a");
    r.page.page_token = "x".to_owned();
    let e = app
        .query(&Call::plain("query"), &r, &Cancel::new())
        .unwrap_err();
    assert!(matches!(e, CallError::PageToken { .. }), "{e}");
}

#[test]
fn a_try_says_what_matched_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let mut r = query(r#"imports(?a, ?d), pkg(?d, "GPL") => ?d"#);
    r.page.sample = 3;
    let out = app
        .query(&Call::plain("query"), &r, &Cancel::new())
        .unwrap();
    assert_eq!(
        out.run.why.as_deref(),
        Some("pkg(?d, \"GPL\") matched nothing")
    );
    assert_eq!(
        out.text(),
        "columns: d\n0 rows\nwhy: pkg(?d, \"GPL\") matched nothing"
    );
    assert_eq!(out.json()["why"], "pkg(?d, \"GPL\") matched nothing");
}

#[test]
fn explain_reports_where_the_work_went() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let r = ExplainRequest {
        program: r#"deps.depends_on("app", ?d) => ?d"#.to_owned(),
        binds: Vec::new(),
        max_work: 0,
        max_memory: None,
    };
    let out = app
        .explain(&Call::plain("explain"), &r, &Cancel::new())
        .unwrap();
    assert_eq!(out.report.rows, 3);
    assert_eq!(out.report.tiers, ["default"]);
    let j = out.json();
    assert_eq!(j["rows"], 3);
    assert_eq!(j["snapshot"]["seq"], 1);
    assert!(j["relations"].is_array());
    assert_eq!(out.text(), out.report.text());
}

#[test]
fn cypher_compiles_and_runs_as_query_does() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let r = CypherRequest {
        query: "MATCH (:Package {name: $from})-[:IMPORTS]->(b:Package) RETURN b.name AS to"
            .to_owned(),
        params: binds_from_json("cypher", json!({"from": "app"}).as_object().unwrap()).unwrap(),
        page: Page::default(),
    };
    let out = app.cypher(&Call::plain("cypher"), &r, &Cancel::new());
    let out = match out {
        Ok(o) => o,
        Err(e) => panic!("{e}"),
    };
    assert!(out.text().starts_with("ran: "), "{}", out.text());
    let j = out.json();
    assert_eq!(j["cypher"], r.query);
    assert_eq!(j["program"], out.program);
    assert_eq!(j["rows"], json!([["api"]]));
    assert_eq!(j["tiers"], json!(["default"]));

    let bad = CypherRequest {
        query: "MATCH (a RETURN a".to_owned(),
        params: Vec::new(),
        page: Page::default(),
    };
    let e = app
        .cypher(&Call::plain("cypher"), &bad, &Cancel::new())
        .unwrap_err();
    assert_eq!(e.kind(), "cypher");
}

#[test]
fn schema_describes_and_suggests() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let call = Call::plain("schema");
    let card = app.schema(&call, &SchemaRequest::default()).unwrap();
    assert!(card.text().contains("imports"), "{}", card.text());
    let one = app
        .schema(
            &call,
            &SchemaRequest {
                path: "deps".to_owned(),
            },
        )
        .unwrap();
    assert!(one.text().contains("depends_on"), "{}", one.text());
    assert_eq!(one.json()["path"], "deps");
    let e = app
        .schema(
            &call,
            &SchemaRequest {
                path: "DEPENDS_ON".to_owned(),
            },
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "schema: nothing is named \"DEPENDS_ON\"; did you mean \"deps.depends_on\"?; call \
         schema with no path for every relation and module"
    );
    assert_eq!(e.json()["error"]["suggestion"], "deps.depends_on");
    // The tools rank with the language's one rule set: a misspelling is offered too.
    let e = app
        .schema(
            &call,
            &SchemaRequest {
                path: "imprts".to_owned(),
            },
        )
        .unwrap_err();
    assert_eq!(e.json()["error"]["suggestion"], "imports");
}

#[test]
fn look_shows_a_stored_relations_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let out = app
        .look(
            &Call::plain("look"),
            &LookRequest {
                target: "imports".to_owned(),
            },
        )
        .unwrap();
    let sample = out.sample.clone().unwrap();
    assert!(!sample.is_empty() && sample.len() <= strata_app::LOOK_SAMPLE);
    assert!(sample[0].starts_with("imports(\""), "{sample:?}");
    assert!(
        out.text().contains("\nsample facts:\n  imports("),
        "{}",
        out.text()
    );
    // A module has no sample.
    let out = app
        .look(
            &Call::plain("look"),
            &LookRequest {
                target: "deps".to_owned(),
            },
        )
        .unwrap();
    assert_eq!(out.sample, None);
}

#[test]
fn values_lists_one_argument() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let call = Call::plain("values");
    let out = app
        .values(
            &call,
            &ValuesRequest {
                target: "imports.2".to_owned(),
                limit: 0,
            },
            &Cancel::new(),
        )
        .unwrap();
    assert!(out.program.starts_with("imports(_, ?"), "{}", out.program);
    assert!(out.text().starts_with(&format!("ran: {}\n", out.program)));
    assert_eq!(out.json()["total"], 3);
    let e = app
        .values(
            &call,
            &ValuesRequest {
                target: "imports.9".to_owned(),
                limit: 0,
            },
            &Cancel::new(),
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "values: imports has 2 arguments; N counts from 1 to 2"
    );
}

#[test]
fn find_grounds_a_name() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let call = Call::plain("find");
    let out = app
        .find(
            &call,
            &FindRequest {
                name: "api".to_owned(),
                limit: 0,
            },
        )
        .unwrap();
    let first = &out.matches[0];
    assert_eq!(first.value, "api");
    assert!(first.uses.iter().any(|u| u.relation == "imports"));
    let j = out.json();
    assert_eq!(j["matches"][0]["value"], "api");
    assert!(j["matches"][0]["uses"][0]["rows"].is_u64());
    assert!(out.text().starts_with("1. \"api\" "), "{}", out.text());
    let e = app
        .find(
            &call,
            &FindRequest {
                name: " ".to_owned(),
                limit: 0,
            },
        )
        .unwrap_err();
    assert_eq!(e.kind(), "find");
}

#[test]
fn issue17_a_changed_strata_toml_is_served_without_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let a = app(tmp.path());
    assert_eq!(a.pack().server_name(), "deps");
    let before = a.instructions();
    assert!(before.contains("the packages of a Go service"), "{before}");
    let toml = tmp.path().join("strata.toml");
    let original = std::fs::read_to_string(&toml).unwrap();
    // A user's edit: another name, another description, the Cypher label renamed.
    let edited = original
        .replace("name = \"deps\"", "name = \"modules\"")
        .replace("the packages of a Go service", "the modules of a monorepo")
        .replace("label = \"Package\"", "label = \"Module\"")
        .replace(
            "(p:Package)-[:IMPORTS]->(:Package",
            "(p:Module)-[:IMPORTS]->(:Module",
        );
    std::fs::write(&toml, &edited).unwrap();
    assert_eq!(a.pack().server_name(), "modules");
    let after = a.instructions();
    assert!(after.contains("the modules of a monorepo"), "{after}");
    assert!(a.graph_summary().unwrap().contains("Module"));
    assert!(a.pack_refused().is_none());
    // A broken edit is refused, said why, and the last good pack keeps serving.
    std::fs::write(&toml, "name = [").unwrap();
    assert_eq!(a.pack().server_name(), "modules");
    let why = a.pack_refused().expect("the broken pack is refused");
    assert!(why.contains("strata.toml"), "{why}");
    // An example that does not check is refused too.
    std::fs::write(
        &toml,
        "name = \"x\"\n[[examples]]\nquestion = \"q\"\nprogram = 'nosuch(?a) => ?a'\n",
    )
    .unwrap();
    assert_eq!(a.pack().server_name(), "modules");
    assert!(a.pack_refused().unwrap().contains("does not check"));
    // Fixed again: served, nothing refused.
    std::fs::write(&toml, &original).unwrap();
    assert_eq!(a.pack().server_name(), "deps");
    assert!(a.pack_refused().is_none());
}

#[test]
fn issue_30_witness_row_past_the_last_row_is_an_error_naming_the_count() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let mut r = query(r#"deps.depends_on("app", ?d) => ?d"#);
    r.page.witness_row = Some(3);
    let last = app
        .query(&Call::plain("query"), &r, &Cancel::new())
        .unwrap();
    assert_eq!(last.answer.answer.rows.len(), 1);
    r.page.witness_row = Some(4);
    let e = app
        .query(&Call::plain("query"), &r, &Cancel::new())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "query: witness_row 4 is past the last row: the answer has 3 rows; pass a row from 1 \
         to 3"
    );
    assert_eq!(e.kind(), "witness_row");
    let c = CypherRequest {
        query: "MATCH (a:Package {name: \"app\"})-[:IMPORTS]->(b:Package) RETURN b.name AS to"
            .to_owned(),
        params: Vec::new(),
        page: Page {
            witness_row: Some(9),
            ..Page::default()
        },
    };
    let e = app
        .cypher(&Call::plain("cypher"), &c, &Cancel::new())
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("cypher: witness_row 9 is past the last row: the answer has 1 row;"),
        "{e}"
    );
}

#[test]
fn issue_30_a_huge_schema_path_is_echoed_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let path = "x".repeat(1 << 20);
    for e in [
        app.schema(
            &Call::plain("schema"),
            &SchemaRequest { path: path.clone() },
        )
        .unwrap_err(),
        app.look(
            &Call::plain("look"),
            &LookRequest {
                target: path.clone(),
            },
        )
        .unwrap_err(),
    ] {
        let m = e.to_string();
        assert!(m.len() < 1_000, "{} bytes", m.len());
        assert!(m.contains("… (1048576 bytes in all)"), "{m}");
        assert!(e.json().to_string().len() < 1_000);
    }
    // A short name is echoed whole.
    let e = app
        .schema(
            &Call::plain("schema"),
            &SchemaRequest {
                path: "nope".into(),
            },
        )
        .unwrap_err();
    assert!(e.to_string().contains("nothing is named \"nope\""), "{e}");
}

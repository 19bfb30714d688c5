//! The tools' handlers called directly on the bundled example database: the seed's calls
//! give the seed's answers, errors are tool errors with the engine's text, limits only go
//! down, and a call opens only the tiers its program reads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use strata_eval::budget::Cancel;
use strata_mcp::{Options, Pack, Server, ServerError, ToolOutput};
use strata_store::dump::{self, DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

const SEED_QUERY: &str = r#"columns: d
1. api
   deps.depends_on("app", "api")
      deps._step("app", "api")
         imports("app", "api")
2. log
   deps.depends_on("app", "log")
      deps.depends_on("app", "api")
         deps._step("app", "api")
            imports("app", "api")
      deps._step("api", "log")
         imports("api", "log")
rows 1 to 2 of 3; continue with page_token "2""#;

const SEED_ERROR: &str = r#"query: unknown relation "depends_on"; did you mean "deps.depends_on"?
line 1, column 1:
  depends_on("app", ?d) => ?d
  ^
fix: did you mean "deps.depends_on"?"#;

/// Writes the example into `dir` and ingests its dumps through the store API, as one batch
/// labelled `commit=abc123`.
fn example_store(dir: &Path) -> Store {
    let files = strata_fixtures::example::write_example(dir).unwrap();
    let store = Store::open(
        dir,
        OpenOptions {
            create: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    let mut options = BatchOptions::default();
    options
        .labels
        .insert("commit".to_owned(), "abc123".to_owned());
    let mut batch = store.batch(options).unwrap();
    for f in &files {
        let format = Format::from_path(f).unwrap();
        let spec = DumpSpec {
            label: f.display().to_string(),
            format,
            relation: (format == Format::Facts).then(|| dump::facts_relation(f).unwrap()),
            unit: None,
        };
        batch.read_file(f, &spec).unwrap();
    }
    batch.commit().unwrap();
    store
}

fn server_with(dir: &Path, options: Options) -> Server {
    let store = example_store(dir);
    let pack = Pack::load(dir).unwrap();
    Server::new(store, pack, options).unwrap()
}

fn server(dir: &Path) -> Server {
    server_with(dir, Options::default())
}

fn call(s: &Server, tool: &str, args: serde_json::Value) -> ToolOutput {
    s.call(tool, args.as_object().cloned(), &Cancel::new())
        .expect("a known tool")
}

#[test]
fn schema_of_a_module_is_the_seeds() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(&s, "schema", json!({ "path": "deps" }));
    assert!(!out.is_error);
    assert_eq!(
        out.text,
        "module deps\ndeps.depends_on(a, b) # Everything a package depends on, directly or through others."
    );
    let card = call(&s, "schema", json!({}));
    assert!(card.text.starts_with("relations:\n"), "{}", card.text);
    assert!(card.text.contains("module deps"));
    let data = call(&s, "schema", json!({ "path": "data" }));
    assert!(data.text.starts_with("pack deps\nabout: the packages"));
    let none = call(&s, "schema", json!({ "path": "depends_on" }));
    assert!(none.is_error);
    assert_eq!(
        none.text,
        "schema: nothing is named \"depends_on\"; did you mean \"deps.depends_on\"?; call \
         schema with no path for every relation and module"
    );
}

#[test]
fn the_seeds_query_answers_the_seeds_text_and_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let program = r#"deps.depends_on("app", ?d) => ?d"#;
    let out = call(&s, "query", json!({ "program": program, "limit": 2 }));
    assert!(!out.is_error);
    assert_eq!(out.text, SEED_QUERY);
    let j = out.structured.unwrap();
    assert_eq!(j["snapshot"]["seq"], 1);
    assert_eq!(j["snapshot"]["labels"]["commit"], "abc123");
    assert_eq!(j["next"], "2");
    assert_eq!(j["total"], 3);
    assert_eq!(j["tiers"], json!(["default"]));

    let next = call(
        &s,
        "query",
        json!({ "program": program, "limit": 2, "page_token": "2" }),
    );
    assert!(
        next.text.starts_with("columns: d\n3. util\n"),
        "{}",
        next.text
    );
    assert!(next.text.ends_with("rows 3 to 3 of 3"));

    let bad = call(
        &s,
        "query",
        json!({ "program": program, "page_token": "two" }),
    );
    assert!(bad.is_error);
    assert!(bad.text.contains("page_token \"two\""));
}

#[test]
fn json_answers_carry_the_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(
        &s,
        "query",
        json!({ "program": r#"imports("api", ?d) => ?d"#, "json": true }),
    );
    assert!(!out.is_error);
    let j: serde_json::Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(j["rows"], json!([["log"], ["util"]]));
    assert_eq!(j["snapshot"]["seq"], 1);
    assert_eq!(j["snapshot"]["labels"]["commit"], "abc123");
    assert_eq!(out.structured.unwrap(), j);
}

#[test]
fn a_wrong_program_is_a_tool_error_with_caret_and_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(
        &s,
        "query",
        json!({ "program": r#"depends_on("app", ?d) => ?d"# }),
    );
    assert!(out.is_error);
    assert_eq!(out.text, SEED_ERROR);
    let parse = call(&s, "query", json!({ "program": "imports(?a ?b) => ?a" }));
    assert!(parse.is_error);
    assert!(parse.text.contains("line 1, column"), "{}", parse.text);
    let explain = call(
        &s,
        "explain",
        json!({ "program": r#"depends_on("app", ?d) => ?d"# }),
    );
    assert!(explain.is_error);
    assert_eq!(explain.text, SEED_ERROR);
}

#[test]
fn misspelled_or_mistyped_arguments_are_tool_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(
        &s,
        "query",
        json!({ "program": r#"imports("api", ?d) => ?d"#, "limt": 2 }),
    );
    assert!(out.is_error);
    assert!(
        out.text
            .starts_with("query: the arguments do not fit the tool's schema: unknown field `limt`"),
        "{}",
        out.text
    );
    let missing = call(&s, "query", json!({}));
    assert!(missing.is_error);
    assert!(missing.text.contains("missing field `program`"));
    let typed = call(&s, "query", json!({ "program": "x", "limit": "2" }));
    assert!(typed.is_error);
    let bind = call(
        &s,
        "query",
        json!({ "program": "imports(?p, ?to) => ?p", "bind": { "to": null } }),
    );
    assert!(bind.is_error);
    assert_eq!(
        bind.text,
        "query: bind \"to\": give a string, a number or a list of them, not null"
    );
    assert!(s.call("nope", None, &Cancel::new()).is_none());
}

#[test]
fn bind_gives_values_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(
        &s,
        "query",
        json!({ "program": "imports(?p, ?to) => ?p", "bind": { "to": "log" } }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.starts_with("columns: p\n1. api\n"), "{}", out.text);
    let list = call(
        &s,
        "query",
        json!({ "program": "imports(?p, ?to) => ?to", "bind": { "?p": ["app", "api"] } }),
    );
    assert!(!list.is_error, "{}", list.text);
    assert_eq!(list.structured.unwrap()["total"], 3);
    let unused = call(
        &s,
        "query",
        json!({ "program": "imports(?p, ?to) => ?to", "bind": { "q": "x" } }),
    );
    assert!(unused.is_error);
}

#[test]
fn sample_says_which_literal_matched_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(
        &s,
        "query",
        json!({ "program": r#"imports("nothing", ?d) => ?d"#, "sample": 3 }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.contains("\nwhy: ") && out.text.ends_with("matched nothing"),
        "{}",
        out.text
    );
    assert!(out.structured.unwrap()["why"].is_string());
}

#[test]
fn a_call_may_lower_the_limits_but_not_raise_them() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server_with(
        tmp.path(),
        Options {
            limit: 2,
            ..Options::default()
        },
    );
    let program = r#"deps.depends_on("app", ?d) => ?d"#;
    let out = call(&s, "query", json!({ "program": program, "limit": 50 }));
    assert_eq!(out.text, SEED_QUERY);
    let one = call(&s, "query", json!({ "program": program, "limit": 1 }));
    assert!(
        one.text
            .ends_with("rows 1 to 1 of 3; continue with page_token \"1\"")
    );
    let work = call(&s, "query", json!({ "program": program, "max_work": 1 }));
    assert!(work.is_error);
    assert!(
        work.text.contains("work budget of 1 units"),
        "{}",
        work.text
    );

    let capped = server_with(
        tempfile::tempdir().unwrap().path(),
        Options {
            max_work: Some(1),
            ..Options::default()
        },
    );
    let raised = call(
        &capped,
        "query",
        json!({ "program": program, "max_work": 1_000_000 }),
    );
    assert!(raised.is_error);
    assert!(
        raised.text.contains("work budget of 1 units"),
        "{}",
        raised.text
    );
}

#[test]
fn a_call_past_the_time_limit_says_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server_with(
        tmp.path(),
        Options {
            timeout: Duration::from_nanos(1),
            ..Options::default()
        },
    );
    let out = call(
        &s,
        "query",
        json!({ "program": r#"deps.depends_on(?a, ?d) => ?a, ?d"# }),
    );
    assert!(out.is_error, "{}", out.text);
    assert!(out.text.contains("time limit"), "{}", out.text);
}

#[test]
fn explain_reports_the_work() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(
        &s,
        "explain",
        json!({ "program": "imports(?p, ?to) => ?p", "bind": { "to": "log" } }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text
            .starts_with("explain: imports(?p, ?to) => ?p\nanswer: 1 row;"),
        "{}",
        out.text
    );
    assert!(out.text.contains("tiers opened: default"));
    let j = out.structured.unwrap();
    assert_eq!(j["rows"], 1);
    assert_eq!(j["snapshot"]["seq"], 1);
}

#[test]
fn look_shows_the_schema_size_and_sample_facts() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(&s, "look", json!({ "target": "pkg" }));
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.starts_with(
            "pkg(name, license) # The packages and the license each states.\n4 facts in tier default"
        ),
        "{}",
        out.text
    );
    assert!(out.text.contains("\nsample facts:\n  pkg("), "{}", out.text);
    assert!(out.text.contains("pkg(\"api\", absent)"), "{}", out.text);
    let module = call(&s, "look", json!({ "target": "deps" }));
    assert!(module.text.starts_with("module deps\n"));
    let derived = call(&s, "look", json!({ "target": "deps.depends_on" }));
    assert!(derived.text.contains("rules:"), "{}", derived.text);
    let unknown = call(&s, "look", json!({ "target": "depends_on" }));
    assert!(unknown.is_error);
    assert!(unknown.text.contains("did you mean \"deps.depends_on\"?"));
}

#[test]
fn values_lists_distinct_values_through_a_query() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(&s, "values", json!({ "target": "imports.2" }));
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        out.text,
        "ran: imports(_, ?dst) => ?dst\ncolumns: dst\n1. api\n2. log\n3. util\n3 rows"
    );
    let named = call(&s, "values", json!({ "target": "imports.src", "limit": 1 }));
    assert_eq!(
        named.text,
        "ran: imports(?src, _) => ?src\ncolumns: src\n1. api\nrows 1 to 1 of 2; continue with page_token \"1\""
    );
    let derived = call(&s, "values", json!({ "target": "deps.depends_on.1" }));
    assert!(
        derived
            .text
            .starts_with("ran: deps.depends_on(?a, _) => ?a\n"),
        "{}",
        derived.text
    );
    for (target, says) in [
        (
            "imports",
            "is a relation; name one of its arguments: imports.src (imports.1)",
        ),
        ("imports.3", "imports has 2 arguments; N counts from 1 to 2"),
        ("imports.to", "imports has no argument \"to\""),
        ("import.src", "unknown relation \"import\""),
    ] {
        let e = call(&s, "values", json!({ "target": target }));
        assert!(e.is_error, "{target}");
        assert!(e.text.contains(says), "{target}: {}", e.text);
    }
}

#[test]
fn a_pack_whose_example_does_not_check_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = example_store(tmp.path());
    let pack = Pack::parse(
        "name = \"x\"\n[[examples]]\nquestion = \"q?\"\nprogram = 'depends_on(\"a\", ?d) => ?d'\n",
    )
    .unwrap();
    let err = Server::new(store, pack, Options::default()).err().unwrap();
    assert!(matches!(err, ServerError::Example { .. }));
    assert!(
        err.to_string().contains("did you mean \"deps.depends_on\""),
        "{err}"
    );
}

#[test]
fn a_call_opens_only_the_tiers_its_program_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let store = example_store(tmp.path());
    let mut batch = store
        .batch(BatchOptions {
            tier: "refs".to_owned(),
            ..BatchOptions::default()
        })
        .unwrap();
    let spec = DumpSpec {
        label: "refs.edges.tsv".to_owned(),
        format: Format::Edges,
        relation: None,
        unit: None,
    };
    batch
        .read_dump("app\tREFERENCES\tlog\n".as_bytes(), &spec)
        .unwrap();
    batch.commit().unwrap();
    // Open the database again: the ingest itself opened the tier's file.
    drop(store);
    let store = Store::open(tmp.path(), OpenOptions::default()).unwrap();
    assert_eq!(store.opened_tiers(), ["default"]);
    let s = Server::new(
        store.clone(),
        Pack::load(tmp.path()).unwrap(),
        Options::default(),
    )
    .unwrap();
    let out = call(
        &s,
        "query",
        json!({ "program": "imports(?a, ?b) => ?a, ?b" }),
    );
    assert_eq!(out.structured.unwrap()["tiers"], json!(["default"]));
    assert_eq!(store.opened_tiers(), ["default"]);
    let out = call(
        &s,
        "query",
        json!({ "program": "references(?a, ?b) => ?b" }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.structured.unwrap()["tiers"], json!(["default", "refs"]));
    assert_eq!(store.opened_tiers(), ["default", "refs"]);
    let look = call(&s, "look", json!({ "target": "references" }));
    assert!(
        look.text.contains("references(\"app\", \"log\")"),
        "{}",
        look.text
    );
}

#[test]
fn tools_have_strict_schemas_and_read_only_annotations() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let names: Vec<&str> = s.tools().iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["query", "schema", "explain", "look", "values"]);
    for t in s.tools() {
        let schema = serde_json::Value::Object((*t.input_schema).clone());
        assert_eq!(schema["type"], "object", "{}", t.name);
        assert_eq!(schema["additionalProperties"], false, "{}", t.name);
        let text = schema.to_string();
        assert!(!text.contains("\"null\""), "{}: {text}", t.name);
        assert!(!text.contains("\\n"), "{}: {text}", t.name);
        let a = t.annotations.as_ref().unwrap();
        assert_eq!(a.read_only_hint, Some(true));
        assert_eq!(a.destructive_hint, Some(false));
        assert!(
            t.description
                .as_ref()
                .unwrap()
                .contains("the packages of a Go service"),
            "{}",
            t.name
        );
    }
    assert_eq!(
        s.tool("query").unwrap().input_schema["required"],
        json!(["program"])
    );
}

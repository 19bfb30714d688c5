//! The tools' handlers called directly on the bundled example database: the seed's calls
//! give the seed's answers, errors are tool errors with the engine's text, limits only go
//! down, and a call opens only the tiers its program reads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;
use strata_app::ingest::{DumpFiles, dump_specs, ingest};

use serde_json::json;
use strata_eval::Cancel;
use strata_mcp::{Options, Pack, Server, ServerError, ToolOutput};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

const SEED_ERROR: &str = r#"query: unknown relation "depends_on"; did you mean "deps.depends_on"?
line 1, column 1:
  depends_on("app", ?d) => ?d
  ^
fix: did you mean "deps.depends_on"?"#;

/// Writes the example into `dir` and ingests its dumps through the store API, as one batch
/// labelled `commit=abc123`.
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
    assert_eq!(out.text, strata_fixtures::example::seed_page());
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
    assert_eq!(out.text, strata_fixtures::example::seed_page());
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

    // Kept until the end: the server reads the folder's modules.
    let dir1 = tempfile::tempdir().unwrap();
    let capped = server_with(
        dir1.path(),
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
        checkout: None,
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
    let tools = s.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "query", "schema", "explain", "look", "values", "find", "cypher"
        ]
    );
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

#[test]
fn find_grounds_a_name_with_where_it_occurs() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(&s, "find", json!({ "name": "api" }));
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        out.text,
        "1. \"api\" exact\n   imports.src 2 rows, imports.dst 1 row, package.id 1 row, \
         pkg.name 1 row\n2. \"app\" fuzzy (1 edit)\n   imports.src 1 row, package.id 1 row, \
         pkg.name 1 row\n2 of 2 matches"
    );
    let limited = call(&s, "find", json!({ "name": "api", "limit": 1 }));
    assert!(
        limited.text.ends_with("\n1 of 2 matches"),
        "{}",
        limited.text
    );
    let j = out.structured.unwrap();
    assert_eq!(j["total"], 2);
    assert_eq!(j["matches"][1]["edits"], 1);
    assert_eq!(j["matches"][0]["value"], "api");
    assert_eq!(
        j["matches"][0]["uses"][0],
        json!({ "relation": "imports", "column": "src", "position": 1, "rows": 2 })
    );
    assert_eq!(j["snapshot"]["labels"]["commit"], "abc123");

    // Misspelled: one edit away.
    let out = call(&s, "find", json!({ "name": "utill" }));
    assert!(
        out.text.starts_with("1. \"util\" fuzzy (1 edit)\n"),
        "{}",
        out.text
    );
    // Nothing found is an answer, not an error.
    let none = call(&s, "find", json!({ "name": "zzzz" }));
    assert!(!none.is_error);
    assert!(
        none.text.starts_with("no stored text matches \"zzzz\""),
        "{}",
        none.text
    );

    let bad = call(&s, "find", json!({ "name": "  " }));
    assert!(bad.is_error);
    assert!(bad.text.starts_with("find: give a name"), "{}", bad.text);
    let bad = call(&s, "find", json!({ "nmae": "api" }));
    assert!(bad.is_error);
    assert!(bad.text.contains("unknown field `nmae`"), "{}", bad.text);
    let bad = call(&s, "find", json!({ "name": 3 }));
    assert!(bad.is_error);
    let bad = call(&s, "find", json!({ "name": "x".repeat(1001) }));
    assert!(bad.is_error);
    assert!(bad.text.contains("longer than 1000"), "{}", bad.text);
    // Hostile names are only text to match.
    for name in ["\"", "\\", "%", "\u{0}", "é", "#", "::", "ǅǅ"] {
        assert!(
            !call(&s, "find", json!({ "name": name })).is_error,
            "{name}"
        );
    }
}

#[test]
fn find_sees_the_names_a_later_batch_adds() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let first = call(&s, "find", json!({ "name": "parse args" }));
    assert!(
        first.text.starts_with("no stored text matches"),
        "{}",
        first.text
    );
    let mut batch = s.store().batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: "more.edges.tsv".into(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    batch
        .read_dump(
            "sym:src/cli.rs#parse_args\tCALLS\tsym:src/cli.rs#parseArgs2\n".as_bytes(),
            &spec,
        )
        .unwrap();
    batch.commit().unwrap();
    let out = call(&s, "find", json!({ "name": "parse args" }));
    assert_eq!(
        out.text,
        "1. \"sym:src/cli.rs#parseArgs2\" token\n   calls.dst 1 row\n\
         2. \"sym:src/cli.rs#parse_args\" token\n   calls.src 1 row\n2 of 2 matches"
    );
    assert_eq!(out.structured.unwrap()["snapshot"]["seq"], 2);
}

fn read(s: &Server, uri: &str) -> String {
    match s.read_resource(uri).unwrap() {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text,
        other => panic!("not text: {other:?}"),
    }
}

#[test]
fn resources_are_the_card_the_pack_and_each_module() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let listed: Vec<(String, Option<String>)> = s
        .resources()
        .unwrap()
        .into_iter()
        .map(|r| (r.uri, r.mime_type))
        .collect();
    assert_eq!(
        listed,
        [
            ("strata://schema".to_owned(), Some("text/plain".to_owned())),
            (
                "strata://pack".to_owned(),
                Some("application/toml".to_owned())
            ),
            (
                "strata://modules/deps".to_owned(),
                Some("text/plain".to_owned())
            ),
        ]
    );
    assert_eq!(
        read(&s, "strata://schema"),
        call(&s, "schema", json!({})).text
    );
    let pack = read(&s, "strata://pack");
    assert_eq!(Pack::parse(&pack).unwrap(), *s.pack());
    assert_eq!(
        read(&s, "strata://modules/deps"),
        strata_fixtures::example::DEPS_MODULE
    );
    for bad in [
        "strata://modules/nope",
        "strata://nothing",
        "",
        "strata://modules/",
    ] {
        let e = s.read_resource(bad).unwrap_err();
        assert_eq!(e.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND, "{bad}");
        assert!(e.message.contains("strata://modules/deps"), "{}", e.message);
    }
}

fn prompt_text(s: &Server, name: &str, args: serde_json::Value) -> String {
    let r = s.prompt(name, args.as_object()).unwrap();
    assert_eq!(r.messages.len(), 1);
    match &r.messages[0].content {
        rmcp::model::ContentBlock::Text(t) => t.text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

/// The program and bind a closure prompt suggests, run through query.
fn run_prompt_program(s: &Server, text: &str) -> ToolOutput {
    let program: Vec<&str> = text
        .split("program:\n")
        .nth(1)
        .unwrap()
        .split("\nbind: ")
        .next()
        .unwrap()
        .lines()
        .map(str::trim)
        .collect();
    let bind = text
        .split("\nbind: ")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap();
    let bind: serde_json::Value = serde_json::from_str(bind).unwrap();
    call(
        s,
        "query",
        json!({ "program": program.join("\n"), "bind": bind }),
    )
}

#[test]
fn prompts_are_listed_with_their_arguments() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let listed: Vec<(String, Vec<String>)> = s
        .prompts()
        .into_iter()
        .map(|p| {
            (
                p.name,
                p.arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| {
                        assert_eq!(a.required, Some(true));
                        a.name
                    })
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("explore".to_owned(), vec![]),
            ("depends_on".to_owned(), vec!["target".to_owned()]),
            ("used_by".to_owned(), vec!["target".to_owned()]),
        ]
    );
    let explore = prompt_text(&s, "explore", json!({}));
    assert!(
        explore.starts_with("Explore the deps database: the packages"),
        "{explore}"
    );
    assert!(explore.contains("deps.depends_on(a, b)"), "{explore}");
    assert!(explore.contains("imports(\"api\", ?d) => ?d"), "{explore}");
}

#[test]
fn closure_prompts_use_the_modules_relation_and_run() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let text = prompt_text(&s, "depends_on", json!({ "target": "app" }));
    assert!(
        text.contains(
            "program:\n  deps.depends_on(?target, ?d) => ?d\nbind: {\"target\": \"app\"}"
        ),
        "{text}"
    );
    let out = run_prompt_program(&s, &text);
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.structured.unwrap()["total"], 3);
    let text = prompt_text(&s, "used_by", json!({ "target": "log" }));
    assert!(
        text.contains("deps.depends_on(?u, ?target) => ?u"),
        "{text}"
    );
    let out = run_prompt_program(&s, &text);
    assert_eq!(out.structured.unwrap()["total"], 2, "{}", out.text);
    // A hostile target stays a JSON string in the text and a value in bind.
    let text = prompt_text(&s, "depends_on", json!({ "target": "a\") => ?x; \"b" }));
    assert!(
        text.contains(r#"bind: {"target": "a\") => ?x; \"b"}"#),
        "{text}"
    );
}

#[test]
fn closure_prompts_fall_back_to_the_edge_relations() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(
        tmp.path(),
        OpenOptions {
            create: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: "code.edges.tsv".into(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    batch
        .read_dump(
            "a\tCALLS\tb\nb\tIMPORTS\tc\nc\tCALLS\td\n".as_bytes(),
            &spec,
        )
        .unwrap();
    batch.commit().unwrap();
    let s = Server::new(store, Pack::default(), Options::default()).unwrap();
    let text = prompt_text(&s, "depends_on", json!({ "target": "a" }));
    assert!(text.contains("step(?a, ?b) :- calls(?a, ?b);"), "{text}");
    assert!(text.contains("(calls, imports)"), "{text}");
    let out = run_prompt_program(&s, &text);
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.structured.unwrap()["total"], 3, "{}", out.text);
    let text = prompt_text(&s, "used_by", json!({ "target": "d" }));
    assert!(text.contains("reaches(?u, ?target) => ?u"), "{text}");
    let out = run_prompt_program(&s, &text);
    assert_eq!(out.structured.unwrap()["total"], 3, "{}", out.text);
}

#[test]
fn bad_prompt_arguments_are_invalid_params_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let err = |name: &str, args: serde_json::Value| {
        let e = s.prompt(name, args.as_object()).unwrap_err();
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        e.message.into_owned()
    };
    assert_eq!(
        err("depends_on", json!({})),
        "prompt depends_on: the argument \"target\" is missing: the name of the thing to ask about"
    );
    assert_eq!(
        err("used_by", json!({ "target": "app", "depth": 2 })),
        "prompt used_by: unknown argument \"depth\"; it takes target"
    );
    assert_eq!(
        err("explore", json!({ "target": "app" })),
        "prompt explore: unknown argument \"target\"; it takes none"
    );
    assert!(err("depends_on", json!({ "target": 3 })).contains("must be a string"));
    assert!(err("depends_on", json!({ "target": "  " })).contains("is empty"));
    assert!(err("depends_on", json!({ "target": "a\nb" })).contains("control character"));
    assert!(err("depends_on", json!({ "target": "x".repeat(501) })).contains("longer than 500"));
    assert_eq!(
        err("nope", json!({})),
        "unknown prompt \"nope\"; the prompts are explore, depends_on, used_by"
    );
    assert!(s.prompt("depends_on", None).is_err());
}

/// Times `find` on a database given by `STRATA_FIND_DB` (e.g. one ingested from
/// `gen-codegraph --edges 1400000`): the first call reads the dictionary, later calls scan
/// it. `STRATA_FIND_DB=/tmp/db cargo test --release -p strata-mcp --test tools find_timing
/// -- --ignored --nocapture`
#[test]
#[ignore]
fn find_timing() {
    let Ok(dir) = std::env::var("STRATA_FIND_DB") else {
        eprintln!("set STRATA_FIND_DB");
        return;
    };
    let s = Server::open(Path::new(&dir), Options::default()).unwrap();
    let snap = s.store().snapshot().unwrap();
    println!("{} texts", snap.text_count());
    drop(snap);
    for name in [
        "parse args",
        "http_1",
        "lexer",
        "prase_token",
        "the parser crate",
        "zq",
        "parser",
    ] {
        let mut times = Vec::new();
        let mut first = String::new();
        for _ in 0..7 {
            let t = std::time::Instant::now();
            let out = call(&s, "find", json!({ "name": name }));
            times.push(t.elapsed());
            first = out.text.lines().next().unwrap_or("").to_owned();
        }
        let cold = times.remove(0);
        times.sort();
        println!(
            "{name:>18}: first call {cold:?}, median of 6 {:?}, best {:?}; {first}",
            times[3], times[0]
        );
    }
}

/// The seed's `cypher` call and its answer, word for word.
const SEED_CYPHER: &str = r#"ran: pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p
columns: importer
1. api
   pkg("api", absent)
   pkg("log", "")
   imports("api", "log")
1 row"#;

/// The seed's Cypher paragraph of the instructions.
const SEED_CYPHER_PARAGRAPH: &str = "Or ask in Cypher with the cypher tool: MATCH, WHERE and \
RETURN over this graph, and it answers with the program it ran. Node labels: Package {license, \
name}. Relationship types: IMPORTS.";

#[test]
fn the_seeds_cypher_call_answers_the_seeds_text() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server_with(
        tmp.path(),
        Options {
            limit: 2,
            ..Options::default()
        },
    );
    let q = "MATCH (p:Package)-[:IMPORTS]->(:Package {name: $to}) RETURN p.name AS importer";
    let out = call(
        &s,
        "cypher",
        json!({ "query": q, "params": { "to": "log" } }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, SEED_CYPHER);
    let j = call(
        &s,
        "cypher",
        json!({ "query": q, "params": { "to": "log" }, "json": true }),
    );
    let v: serde_json::Value = serde_json::from_str(&j.text).unwrap();
    assert_eq!(v["cypher"], q);
    assert_eq!(
        v["program"],
        "pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p"
    );
    assert_eq!(v["columns"], json!(["importer"]));
    assert_eq!(v["rows"], json!([["api"]]));
    assert_eq!(v["total"], 1);
    assert_eq!(v["witnesses"][0][2]["fact"], "imports(\"api\", \"log\")");
}

#[test]
fn cypher_pages_samples_and_refuses_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let q =
        "MATCH (a:Package)-[:IMPORTS*]->(b:Package) RETURN a.name, b.name ORDER BY a.name, b.name";
    let first = call(&s, "cypher", json!({ "query": q, "limit": 2 }));
    assert!(
        first
            .text
            .ends_with("rows 1 to 2 of 5; continue with page_token \"2\""),
        "{}",
        first.text
    );
    let next = call(
        &s,
        "cypher",
        json!({ "query": q, "limit": 2, "page_token": "2" }),
    );
    assert!(next.text.contains("\n3. app, api\n"), "{}", next.text);
    let empty = call(
        &s,
        "cypher",
        json!({ "query": "MATCH (a:Package {name: 'nope'})-[:IMPORTS]->(b) RETURN b.name", "sample": 3 }),
    );
    assert!(empty.text.contains("why: "), "{}", empty.text);
    let write = call(
        &s,
        "cypher",
        json!({ "query": "MATCH (a:Package) DELETE a" }),
    );
    assert!(write.is_error);
    assert!(
        write.text.starts_with("cypher: DELETE writes to the graph"),
        "{}",
        write.text
    );
    let typo = call(
        &s,
        "cypher",
        json!({ "query": "MATCH (a:Package)", "qeury": 1 }),
    );
    assert!(typo.is_error, "{}", typo.text);
}

#[test]
fn the_graph_is_in_the_instructions_the_description_and_the_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    assert!(
        s.instructions().contains(&format!(
            "\n\n{SEED_CYPHER_PARAGRAPH}\n\nBefore guessing a value"
        )),
        "{}",
        s.instructions()
    );
    assert!(
        s.agent_line()
            .ends_with("then query, or cypher to ask in Cypher.")
    );
    let tool = s.tool("cypher").unwrap();
    let d = tool.description.as_ref().unwrap();
    assert!(
        d.contains("Node labels: Package {license, name}. Relationship types: IMPORTS."),
        "{d}"
    );
    let schema = call(&s, "schema", json!({ "path": "cypher" }));
    assert_eq!(
        schema.text,
        "cypher graph\nnode labels:\n  Package {license, name} from pkg(name, license), identity name\n\
         relationship types:\n  IMPORTS from imports(src, dst)"
    );
}

/// Commits a batch of `n` edges `pN IMPORTS pN+1` to the server's store.
fn commit_edges(s: &Server, label: &str, n: usize) {
    let mut batch = s.store().batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: label.into(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    let edges: String = (0..n)
        .map(|i| format!("p{i:04}\tIMPORTS\tp{:04}\n", i + 1))
        .collect();
    batch.read_dump(edges.as_bytes(), &spec).unwrap();
    batch.commit().unwrap();
}

#[test]
fn issue20_limit_0_is_refused_for_query_and_cypher() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let out = call(
        &s,
        "query",
        json!({ "program": "imports(?a, ?b) => ?a", "limit": 0 }),
    );
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "query: limit 0 asks for no rows; pass a limit from 1 to 100 (the server's limit), or \
         leave it out for 100"
    );
    assert_eq!(out.structured.unwrap()["error"]["kind"], "limit");
    let out = call(
        &s,
        "cypher",
        json!({ "query": "MATCH (p:Package) RETURN p.name", "limit": 0 }),
    );
    assert!(out.is_error);
    assert!(
        out.text.starts_with("cypher: limit 0 asks for no rows"),
        "{}",
        out.text
    );
}

#[test]
fn issue20_page_token_names_its_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let program = "imports(?a, ?b) => ?a, ?b";
    let first = call(&s, "query", json!({ "program": program, "limit": 1 }));
    // At the first snapshot the token is the seed's plain offset.
    assert_eq!(first.structured.unwrap()["next"], "1");
    commit_edges(&s, "more.edges.tsv", 2);
    let second = call(
        &s,
        "query",
        json!({ "program": program, "limit": 1, "page_token": "1" }),
    );
    assert!(!second.is_error, "{}", second.text);
    assert!(
        second.text.ends_with(
            "rows 2 to 2 of 5; continue with page_token \"2@2\"\nnote: the data changed since \
             page_token \"1\" was given: it names snapshot 1, this page read snapshot 2, so rows \
             may repeat or be missing; leave out page_token to start again"
        ),
        "{}",
        second.text
    );
    let j = second.structured.unwrap();
    assert_eq!(j["next"], "2@2");
    assert!(j["data_changed"].is_string());
    // A token of this snapshot pages on with no note.
    let third = call(
        &s,
        "query",
        json!({ "program": program, "limit": 1, "page_token": "2@2" }),
    );
    assert!(
        third.text.ends_with("continue with page_token \"3@2\""),
        "{}",
        third.text
    );
    // A commit after it is said so again.
    commit_edges(&s, "again.edges.tsv", 3);
    let fourth = call(
        &s,
        "query",
        json!({ "program": program, "limit": 1, "page_token": "3@2" }),
    );
    assert!(
        fourth
            .text
            .contains("it names snapshot 2, this page read snapshot 3"),
        "{}",
        fourth.text
    );
    let bad = call(
        &s,
        "query",
        json!({ "program": program, "page_token": "3@x" }),
    );
    assert!(bad.is_error);
    assert!(
        bad.text.contains("(OFFSET or OFFSET@SNAPSHOT)"),
        "{}",
        bad.text
    );
}

#[test]
fn issue20_max_bytes_bounds_the_answer_and_only_goes_down() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    commit_edges(&s, "chain.edges.tsv", 400);
    let program = "imports(?a, ?b) => ?a, ?b";
    let out = call(
        &s,
        "query",
        json!({ "program": program, "max_bytes": 2000 }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.len() <= 2000, "{}", out.text.len());
    let kept = out.text.lines().filter(|l| l.contains(". ")).count();
    assert!(kept > 3 && kept < 100, "{kept}");
    assert!(
        out.text.ends_with(&format!(
            "rows 1 to {kept} of 403; {} more rows of this page left out to keep the answer \
             under 2000 bytes; continue with page_token \"{kept}@2\"",
            100 - kept
        )),
        "{}",
        out.text
    );
    let j = out.structured.unwrap();
    assert!(serde_json::to_string_pretty(&j).unwrap().len() <= 2000);
    assert_eq!(j["cut"]["max_bytes"], 2000);
    let json = call(
        &s,
        "query",
        json!({ "program": program, "max_bytes": 2000, "json": true }),
    );
    assert!(json.text.len() <= 2000, "{}", json.text.len());
    serde_json::from_str::<serde_json::Value>(&json.text).unwrap();
    // The default budget bounds a default page too.
    let whole = call(&s, "query", json!({ "program": program }));
    assert!(whole.text.len() <= 80_000);
    for (asked, what) in [(100, "max_bytes 100"), (1_000_000, "max_bytes 1000000")] {
        let out = call(
            &s,
            "query",
            json!({ "program": program, "max_bytes": asked }),
        );
        assert!(out.is_error);
        assert_eq!(
            out.text,
            format!(
                "query: {what} is out of range; pass from 1024 to 80000 (the server's answer \
                 budget), or leave it out for 80000"
            )
        );
    }
}

#[test]
fn issue20_witness_row_answers_one_row_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    let program = r#"deps.depends_on("app", ?d) => ?d"#;
    let out = call(&s, "query", json!({ "program": program, "witness_row": 2 }));
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        out.text,
        "columns: d\n2. log\n   deps.depends_on(\"app\", \"log\")\n      deps.depends_on(\"app\", \
         \"api\")\n         deps._step(\"app\", \"api\")\n            imports(\"app\", \"api\")\n      \
         deps._step(\"api\", \"log\")\n         imports(\"api\", \"log\")\nrows 2 to 2 of 3; \
         continue with page_token \"2\""
    );
    let zero = call(&s, "query", json!({ "program": program, "witness_row": 0 }));
    assert!(zero.is_error);
    assert_eq!(
        zero.text,
        "query: witness_row counts rows from 1, as the answer numbers them"
    );
}

#[test]
fn issue20_every_tool_answer_stays_within_the_byte_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path());
    // Texts as long as a dump line allows (two to a line of at most 1 MiB), many of them.
    let mut batch = s.store().batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: "huge.edges.tsv".into(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    let big = "x".repeat(500_000);
    let edges: String = (0..12)
        .map(|i| format!("huge{i}{big}\tHUGE\thuge_target_{i}{big}\n"))
        .collect();
    batch.read_dump(edges.as_bytes(), &spec).unwrap();
    batch.commit().unwrap();
    let program = format!("huge(?a, ?b), ?a != \"{}\" => ?a", "y".repeat(500_000));
    for (tool, args) in [
        ("look", json!({ "target": "huge" })),
        ("values", json!({ "target": "huge.src" })),
        ("find", json!({ "name": "huge_target_3" })),
        ("schema", json!({})),
        ("explain", json!({ "program": program })),
    ] {
        let out = call(&s, tool, args.clone());
        assert!(!out.is_error, "{tool}: {:.300}", out.text);
        assert!(
            out.text.len() <= 80_000,
            "{tool} answered {} bytes",
            out.text.len()
        );
        if let Some(j) = &out.structured {
            let n = serde_json::to_string_pretty(j).unwrap().len();
            assert!(n <= 80_000, "{tool}: structured content of {n} bytes");
        }
        if tool != "schema" {
            // values answers a page of rows, which says what it left out its own way.
            assert!(
                out.text
                    .contains("to fit the answer's budget of 80000 bytes")
                    || out.text.contains("to keep the answer under 80000 bytes"),
                "{tool} does not say it was clipped: {}",
                &out.text[out.text.len().saturating_sub(400)..]
            );
        }
    }
}

//! The host API: the flow of `examples/embed.rs` (a host argument picking an in-memory base
//! per call, a vocabulary resolved on first use), and the hooks' edges: clashing names,
//! strict schemas with host fields, a vocabulary that fails and is asked again, a BaseFor
//! asked with the relations a program reads.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
#[path = "../examples/embed.rs"]
mod embed;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::JsonObject;
use serde_json::json;
use strata_eval::Cancel;
use strata_eval::Vocabulary;
use strata_mcp::{HostArguments, Pack, Run, Server, ServerError, Source, ToolOutput};
use strata_store::{OpenOptions, Store};

fn call(s: &Server, tool: &str, args: serde_json::Value) -> ToolOutput {
    s.call(tool, args.as_object().cloned(), &Cancel::new())
        .unwrap()
}

fn store(dir: &std::path::Path) -> Store {
    Store::open(
        dir,
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )
    .unwrap()
}

fn repo_property() -> JsonObject {
    json!({ "repo": { "type": "string", "description": "The repository." } })
        .as_object()
        .cloned()
        .unwrap()
}

#[test]
fn the_example_flow_answers_from_the_base_the_host_picks() {
    let dir = tempfile::tempdir().unwrap();
    let s = embed::server(dir.path()).unwrap();

    let out = embed::query(
        &s,
        json!({ "program": r#"deps.depends_on("app", ?d) => ?d"# }),
    )
    .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.starts_with("columns: d\n1. api\n"), "{}", out.text);
    assert!(out.text.ends_with("3 rows"), "{}", out.text);
    let j = out.structured.unwrap();
    assert_eq!(j["total"], 3);
    assert!(
        j.get("snapshot").is_none(),
        "a host's base has no store snapshot"
    );

    let out = embed::query(
        &s,
        json!({ "repo": "tools", "program": "imports(?a, ?b) => ?a, ?b" }),
    )
    .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("1. cli, flags"), "{}", out.text);
    assert!(out.text.ends_with("2 rows"), "{}", out.text);

    let out = embed::query(
        &s,
        json!({ "repo": "web", "program": "imports(?a, ?b) => ?b" }),
    )
    .unwrap();
    assert!(out.is_error);
    assert_eq!(out.text, "query: no repository \"web\"; give app or tools");

    // The other tools read the call's base and the host's vocabulary too.
    let out = call(
        &s,
        "values",
        json!({ "repo": "tools", "target": "imports.1" }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.contains("cli") && !out.text.contains("app"),
        "{}",
        out.text
    );
    let out = call(&s, "look", json!({ "target": "imports" }));
    assert!(
        out.text.contains("imports(\"app\", \"api\")"),
        "{}",
        out.text
    );
    let out = call(&s, "schema", json!({ "path": "deps" }));
    assert!(out.text.contains("depends_on"), "{}", out.text);
    let out = call(
        &s,
        "explain",
        json!({ "repo": "tools", "program": "imports(?a, ?b) => ?b" }),
    );
    assert!(!out.is_error, "{}", out.text);
    let out = call(&s, "find", json!({ "name": "app" }));
    assert!(
        out.is_error && out.text.starts_with("find: "),
        "{}",
        out.text
    );
}

#[test]
fn host_arguments_sit_in_every_strict_schema() {
    let dir = tempfile::tempdir().unwrap();
    let s = embed::server(dir.path()).unwrap();
    for t in s.tools() {
        let props = t.input_schema["properties"].as_object().unwrap();
        assert_eq!(props["repo"]["type"], "string", "{}", t.name);
        assert_eq!(t.input_schema["additionalProperties"], false, "{}", t.name);
    }
    assert!(s.tool("query").unwrap().input_schema["properties"]["program"].is_object());

    let out = call(
        &s,
        "query",
        json!({ "repo": "app", "program": "imports(?a, ?b) => ?b", "limt": 2 }),
    );
    assert!(out.is_error);
    assert!(out.text.contains("unknown field `limt`"), "{}", out.text);
    let out = call(
        &s,
        "query",
        json!({ "repo": 3, "program": "imports(?a, ?b) => ?b" }),
    );
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "query: the host argument \"repo\" must be a string, not a number"
    );
}

#[test]
fn a_host_argument_named_as_a_tools_own_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let props = json!({ "target": { "type": "string" } })
        .as_object()
        .cloned()
        .unwrap();
    let err = Server::builder(store(dir.path()), Pack::default())
        .arguments(HostArguments::new(props, |_| Ok(Run::default())))
        .build()
        .err()
        .unwrap();
    assert!(matches!(err, ServerError::Options(_)));
    assert!(
        err.to_string()
            .contains("the host argument \"target\" clashes with the look tool's own argument"),
        "{err}"
    );

    let err = Server::builder(store(dir.path()), Pack::default())
        .arguments(HostArguments::new(repo_property(), |_| Ok(Run::default())).require(["branch"]))
        .build()
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("\"branch\" is required but has no property"),
        "{err}"
    );
}

#[test]
fn a_required_host_argument_must_be_given() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::builder(store(dir.path()), Pack::default())
        .arguments(HostArguments::new(repo_property(), |_| Ok(Run::default())).require(["repo"]))
        .build()
        .unwrap();
    let schema = &s.tool("schema").unwrap().input_schema;
    assert_eq!(schema["required"], json!(["repo"]));
    let out = call(&s, "schema", json!({}));
    assert_eq!(out.text, "schema: the argument \"repo\" is required");
    let out = call(&s, "schema", json!({ "repo": "x" }));
    assert!(!out.is_error, "{}", out.text);
}

#[test]
fn the_vocabulary_resolves_on_first_use_and_again_after_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let base: Source = Arc::new(embed::repo(&[("app", "api")]).unwrap());
    let relations = base.relations().unwrap();
    let s = Server::builder(store(dir.path()), Pack::default())
        .vocabulary(move || {
            if a.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err("the workspace is still opening".into());
            }
            Ok(Vocabulary::from_sources(
                relations.clone(),
                &[("deps", embed::DEPS)],
            )?)
        })
        .base(move |_| Ok(base.clone()))
        .build()
        .unwrap();
    assert_eq!(
        asked.load(Ordering::SeqCst),
        0,
        "not resolved at construction"
    );

    let out = call(&s, "schema", json!({}));
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "schema: the vocabulary: the workspace is still opening"
    );
    let out = call(&s, "schema", json!({}));
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("deps"), "{}", out.text);
    let out = call(
        &s,
        "query",
        json!({ "program": "deps.depends_on(?a, ?b) => ?b" }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(asked.load(Ordering::SeqCst), 2, "kept once resolved");
}

#[test]
fn a_pack_example_is_checked_when_the_vocabulary_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let pack =
        Pack::parse("[[examples]]\nquestion = \"q\"\nprogram = 'nothing(?x) => ?x'\n").unwrap();
    let s = Server::builder(store(dir.path()), pack)
        .vocabulary(|| Ok(Vocabulary::from_sources(Vec::new(), &[])?))
        .build()
        .unwrap();
    let out = call(&s, "schema", json!({}));
    assert!(out.is_error);
    assert!(
        out.text.contains("the example \"q\" does not check"),
        "{}",
        out.text
    );
}

#[test]
fn base_for_is_asked_with_the_relations_a_program_reads() {
    let dir = tempfile::tempdir().unwrap();
    let seen: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let log = seen.clone();
    let base: Source = Arc::new(embed::repo(&[("app", "api"), ("api", "log")]).unwrap());
    let relations = base.relations().unwrap();
    let s = Server::builder(store(dir.path()), Pack::default())
        .vocabulary(move || {
            Ok(Vocabulary::from_sources(
                relations.clone(),
                &[("deps", embed::DEPS)],
            )?)
        })
        .base_for(move |ctx, rels| {
            log.lock().unwrap().push(rels.to_vec());
            assert_eq!(ctx.tool, "query");
            Ok(base.clone())
        })
        .build()
        .unwrap();
    let out = call(
        &s,
        "query",
        json!({ "program": r#"deps.depends_on("app", ?d) => ?d"# }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.ends_with("2 rows"), "{}", out.text);
    assert_eq!(*seen.lock().unwrap(), vec![vec!["imports".to_owned()]]);
}

#[test]
fn a_runs_vocabulary_and_base_override_the_servers() {
    let dir = tempfile::tempdir().unwrap();
    let base: Source = Arc::new(embed::repo(&[("x", "y")]).unwrap());
    let vocab = Arc::new(Vocabulary::from_sources(base.relations().unwrap(), &[]).unwrap());
    let s = Server::builder(store(dir.path()), Pack::default())
        .arguments(HostArguments::new(repo_property(), move |ctx| {
            if ctx.host_args.contains_key("repo") {
                Ok(Run {
                    base: Some(base.clone()),
                    vocabulary: Some(vocab.clone()),
                    ..Run::default()
                })
            } else {
                Ok(Run::default())
            }
        }))
        .build()
        .unwrap();
    // Without repo: the store, which holds no relation.
    let out = call(&s, "query", json!({ "program": "imports(?a, ?b) => ?b" }));
    assert!(out.is_error, "{}", out.text);
    let out = call(
        &s,
        "query",
        json!({ "repo": "x", "program": "imports(?a, ?b) => ?b" }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.starts_with("columns: b\n1. y\n"), "{}", out.text);
}

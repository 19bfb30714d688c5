//! `ask` driven by a fake model server (a real HTTP server on loopback answering from a
//! script): a wrong program fixed with the engine's error, the fallback taking over, a
//! timeout, a model that never writes a valid program, and the tool absent without a model;
//! in Cypher, a wrong query fixed with the front end's error, the pack's ask_language, a
//! Cypher example that doesn't compile and a database without a graph.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use strata_eval::Cancel;
use strata_fixtures::fake_model::{FakeModel, Reply};
use strata_mcp::ask::AskOptions;
use strata_mcp::{Api, Model, Options, Pack, Server, ToolOutput};
use strata_store::dump::{DumpSpec, Format, facts_relation};
use strata_store::{BatchOptions, OpenOptions, Store};

const WRONG: &str = r#"depends_on("app", ?d) => ?d"#;
const RIGHT: &str = r#"deps.depends_on("app", ?d) => ?d"#;

/// The bundled example, ingested in one batch, served with `ask`.
fn server(dir: &Path, ask: AskOptions) -> Server {
    let store = example_store(dir);
    let options = Options {
        ask,
        ..Options::default()
    };
    Server::new(store, Pack::load(dir).unwrap(), options).unwrap()
}

/// A new, empty store in `dir`.
fn new_store(dir: &Path) -> Store {
    Store::open(
        dir,
        OpenOptions {
            create: true,
            ..OpenOptions::default()
        },
    )
    .unwrap()
}

/// The bundled example, ingested in one batch into `dir`.
fn example_store(dir: &Path) -> Store {
    let store = new_store(dir);
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    for f in strata_fixtures::example::write_example(dir).unwrap() {
        let format = Format::from_path(&f).unwrap();
        let relation = facts_relation(&f).filter(|_| format == Format::Facts);
        let label = f.display().to_string();
        let spec = DumpSpec {
            label,
            format,
            relation,
            unit: None,
            checkout: None,
        };
        batch.read_file(&f, &spec).unwrap();
    }
    batch.commit().unwrap();
    store
}

/// A server whose only model is the local one at `fake`.
fn with_local(dir: &Path, fake: &FakeModel) -> Server {
    server(
        dir,
        AskOptions {
            local: Some(local(fake)),
            ..AskOptions::default()
        },
    )
}

fn local(fake: &FakeModel) -> Model {
    Model::new(Api::OpenAi, &fake.url(), "local-model")
        .unwrap()
        .timeout(Duration::from_secs(10))
}

fn ask(s: &Server, args: Value) -> ToolOutput {
    s.call("ask", args.as_object().cloned(), &Cancel::new())
        .expect("a known tool")
}

/// The messages of a request to the fake model, as JSON.
fn messages(body: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(body).unwrap();
    v["messages"].as_array().unwrap().clone()
}

#[test]
fn a_wrong_program_is_fixed_with_the_engines_error() {
    let fake = FakeModel::start(vec![
        Reply::text(WRONG),
        Reply::text(format!("Here it is:\n```datalog\n{RIGHT}\n```")),
    ])
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let s = with_local(tmp.path(), &fake);
    let out = ask(&s, json!({ "question": "what does app depend on?" }));
    assert!(!out.is_error, "{}", out.text);
    // The program that ran, its rows as query writes them (witnesses included), each try.
    let query = s
        .call(
            "query",
            json!({ "program": RIGHT }).as_object().cloned(),
            &Cancel::new(),
        )
        .unwrap();
    assert!(
        out.text
            .starts_with(&format!("ran: {RIGHT}\n{}\n\ntries:\n", query.text)),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("         imports(\"api\", \"log\")\n3. util")
    );
    let label = format!("local-model (openai at {})", fake.url());
    assert!(
        out.text.contains(&format!(
            "tries:\n1. local {label}: {WRONG}\n   query: unknown relation \"depends_on\"; did \
             you mean \"deps.depends_on\"?\n   line 1, column 1:\n     {WRONG}\n     ^\n   fix: \
             did you mean \"deps.depends_on\"?\n2. local {label}: {RIGHT}\n   ok"
        )),
        "{}",
        out.text
    );
    let j = out.structured.unwrap();
    assert_eq!(j["program"], RIGHT);
    assert_eq!(j["answered_by"], "local");
    assert_eq!(j["total"], 3);
    assert_eq!(j["tries"].as_array().unwrap().len(), 2);
    assert!(j["tries"][0]["error"].as_str().unwrap().contains("fix:"));
    assert!(j["tries"][1]["error"].is_null());

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].path.ends_with("/v1/chat/completions"));
    // The first request: the pack's about, the card, the examples and the grounded names.
    let first = messages(&requests[0].body);
    let system = first[0]["content"].as_str().unwrap();
    assert_eq!(first[0]["role"], "system");
    assert!(system.contains("the packages of a Go service"), "{system}");
    assert!(system.contains("deps.depends_on(a, b)"), "{system}");
    assert!(system.contains("# what does api import?\nimports(\"api\", ?d) => ?d"));
    let question = first[1]["content"].as_str().unwrap();
    assert!(
        question.starts_with("Question: what does app depend on?\n"),
        "{question}"
    );
    assert!(
        question.ends_with(
            "\n\nStored values found for the names in the question:\n- \"app\" (exact for \
             app): imports.src 1 row, package.id 1 row, pkg.name 1 row"
        ),
        "{question}"
    );
    // The second: the wrong program, then the engine's full error (caret and fix).
    let second = messages(&requests[1].body);
    assert_eq!(second.len(), 4);
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(second[2]["content"], WRONG);
    let feedback = second[3]["content"].as_str().unwrap();
    assert!(
        feedback.contains(&format!(
            "query: unknown relation \"depends_on\"; did you mean \"deps.depends_on\"?\nline 1, \
             column 1:\n  {WRONG}\n  ^\nfix: did you mean \"deps.depends_on\"?"
        )),
        "{feedback}"
    );
}

#[test]
fn the_fallback_takes_over_when_local_fails_its_tries() {
    let bad = "imports(app, ?d) => ?d";
    let local_fake = FakeModel::start(vec![Reply::text(bad), Reply::text(bad)]).unwrap();
    let frontier = FakeModel::start(vec![Reply::text(RIGHT)]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut claude = Model::new(Api::Anthropic, &frontier.url(), "claude-test").unwrap();
    claude.key = Some("test-key".to_owned());
    let s = server(
        tmp.path(),
        AskOptions {
            local: Some(local(&local_fake)),
            fallback: Some(claude),
            tries: 2,
        },
    );
    let out = ask(
        &s,
        json!({ "question": "what does app depend on?", "json": true }),
    );
    assert!(!out.is_error, "{}", out.text);
    let j: Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(j, out.structured.unwrap());
    assert_eq!(j["answered_by"], "frontier");
    assert_eq!(j["mode"], "both");
    assert_eq!(j["program"], RIGHT);
    assert_eq!(j["rows"].as_array().unwrap().len(), 3);
    let tries = j["tries"].as_array().unwrap();
    assert_eq!(tries.len(), 3);
    assert_eq!(tries[0]["model"], "local");
    assert!(
        tries[0]["error"]
            .as_str()
            .unwrap()
            .contains("a term must be"),
        "{}",
        tries[0]
    );
    assert_eq!(tries[2]["model"], "frontier");
    assert_eq!(local_fake.requests().len(), 2);
    // The Anthropic API: its path, headers and a fresh conversation with the system apart.
    let r = &frontier.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("test-key"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert!(body["system"].as_str().unwrap().contains("deps.depends_on"));
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    assert_eq!(body["model"], "claude-test");

    // mode frontier asks the fallback alone; mode local the local model alone.
    let frontier2 = FakeModel::start(vec![Reply::text(RIGHT)]).unwrap();
    // Kept until the end: the server reads the folder's modules.
    let dir1 = tempfile::tempdir().unwrap();
    let s = server(
        dir1.path(),
        AskOptions {
            local: Some(local(&local_fake)),
            fallback: Some(Model::new(Api::OpenAi, &frontier2.url(), "big").unwrap()),
            tries: 2,
        },
    );
    let out = ask(&s, json!({ "question": "q", "mode": "frontier" }));
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(local_fake.requests().len(), 2);
    assert_eq!(frontier2.requests()[0].path, "/v1/chat/completions");
}

#[test]
fn a_model_past_its_timeout_ends_its_turn() {
    let slow =
        FakeModel::start(vec![Reply::Slow(Duration::from_secs(3), RIGHT.to_owned())]).unwrap();
    let frontier = FakeModel::start(vec![Reply::text(RIGHT)]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let s = server(
        tmp.path(),
        AskOptions {
            local: Some(local(&slow).timeout(Duration::from_millis(300))),
            fallback: Some(Model::new(Api::OpenAi, &frontier.url(), "big").unwrap()),
            tries: 3,
        },
    );
    let started = std::time::Instant::now();
    let out = ask(&s, json!({ "question": "what does app depend on?" }));
    assert!(!out.is_error, "{}", out.text);
    assert!(started.elapsed() < Duration::from_secs(3));
    let j = out.structured.unwrap();
    assert_eq!(j["answered_by"], "frontier");
    let tries = j["tries"].as_array().unwrap();
    assert_eq!(tries.len(), 2, "{tries:?}");
    assert!(tries[0]["program"].is_null());
    assert!(
        tries[0]["error"]
            .as_str()
            .unwrap()
            .contains("did not answer within 300ms"),
        "{}",
        tries[0]
    );
    assert!(out.text.contains("1. local local-model"), "{}", out.text);
    assert!(
        out.text.contains(": no reply\n   local-model"),
        "{}",
        out.text
    );
    // One request only: a model that did not answer is not asked again.
    assert_eq!(slow.requests().len(), 1);
}

#[test]
fn a_model_that_never_writes_a_valid_program_ends_with_its_tries() {
    let fake = FakeModel::start(vec![
        Reply::text("I think the answer is api."),
        Reply::text("imports(?a ?b) => ?b"),
        Reply::text(r#"imports("app", ?d) => ?x"#),
    ])
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let s = with_local(tmp.path(), &fake);
    let out = ask(
        &s,
        json!({ "question": "what does app import?", "mode": "local" }),
    );
    assert!(out.is_error);
    assert!(
        out.text.starts_with(
            "ask: no program that checks and runs after 3 tries; write the program yourself"
        ),
        "{}",
        out.text
    );
    let j = out.structured.unwrap();
    let tries = j["tries"].as_array().unwrap();
    assert_eq!(tries.len(), 3);
    assert!(tries.iter().all(|t| t["error"].is_string()));
    assert!(j["program"].is_null());
    for t in tries {
        assert!(
            out.text.contains(t["program"].as_str().unwrap()),
            "{}",
            out.text
        );
    }
    // An HTTP error is a try with its status, and ends the model's turn.
    let broken = FakeModel::start(vec![Reply::Status(503, "overloaded".to_owned())]).unwrap();
    // Kept until the end: the server reads the folder's modules.
    let dir2 = tempfile::tempdir().unwrap();
    let s = with_local(dir2.path(), &broken);
    let out = ask(&s, json!({ "question": "what does app import?" }));
    assert!(out.is_error);
    assert!(
        out.text.contains("answered HTTP 503: overloaded"),
        "{}",
        out.text
    );
    assert!(out.text.contains("after 1 try;"), "{}", out.text);
    assert_eq!(broken.requests().len(), 1);
}

#[test]
fn without_a_model_ask_is_not_listed_and_says_how_to_configure_one() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path(), AskOptions::default());
    assert!(s.tool("ask").is_none());
    assert!(s.tools().iter().all(|t| t.name != "ask"));
    let out = ask(&s, json!({ "question": "what does app depend on?" }));
    assert!(out.is_error);
    assert!(
        out.text.starts_with("ask: no model is configured"),
        "{}",
        out.text
    );
    assert!(out.text.contains("--model-url URL --model-name NAME"));
    assert!(out.text.contains("--fallback-name NAME"));

    // With a model it is listed, with a strict schema; a mode without its model is refused.
    let fake = FakeModel::start(vec![]).unwrap();
    // Kept until the end: the server reads the folder's modules.
    let dir3 = tempfile::tempdir().unwrap();
    let s = with_local(dir3.path(), &fake);
    let tool = s.tool("ask").unwrap();
    let hints = tool.annotations.as_ref().unwrap();
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(hints.open_world_hint, Some(true));
    let schema = serde_json::to_value(&*tool.input_schema).unwrap();
    assert_eq!(schema["required"], json!(["question"]));
    assert_eq!(schema["additionalProperties"], false);
    assert!(!schema.to_string().contains("\"null\""), "{schema}");
    assert!(schema.to_string().contains("frontier"), "{schema}");
    let out = ask(&s, json!({ "question": "q", "mode": "frontier" }));
    assert!(out.is_error);
    assert!(out.text.contains("--fallback-name"), "{}", out.text);
    let out = ask(&s, json!({ "question": "q", "mode": "sideways" }));
    assert!(out.is_error);
    assert!(out.text.contains("unknown variant"), "{}", out.text);
    let out = ask(&s, json!({ "question": " " }));
    assert!(out.is_error);
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn ask_over_the_async_path_has_room_for_its_tries() {
    let fake = FakeModel::start(vec![Reply::text(WRONG), Reply::text(RIGHT)]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let s = with_local(tmp.path(), &fake);
    let args = json!({ "question": "what does app depend on?", "limit": 1 });
    let out = s
        .call_async("ask", args.as_object().cloned())
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("rows 1 to 1 of 3"), "{}", out.text);
    // Unconfigured, a direct call over the async path is a tool error too, not unknown.
    // Kept until the end: the server reads the folder's modules.
    let dir4 = tempfile::tempdir().unwrap();
    let bare = server(dir4.path(), AskOptions::default());
    let out = bare
        .call_async("ask", args.as_object().cloned())
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(bare.call_async("nope", None).await.is_none());
}

const WRONG_CYPHER: &str =
    r#"MATCH (:Pkg {name: "api"})-[:IMPORTS]->(d:Package) RETURN d.name AS dep"#;
const RIGHT_CYPHER: &str =
    r#"MATCH (:Package {name: "api"})-[:IMPORTS]->(d:Package) RETURN d.name AS dep"#;

fn cypher_tool(s: &Server, query: &str) -> ToolOutput {
    s.call(
        "cypher",
        json!({ "query": query }).as_object().cloned(),
        &Cancel::new(),
    )
    .unwrap()
}

#[test]
fn in_cypher_a_wrong_query_is_fixed_with_the_front_ends_error() {
    let fake = FakeModel::start(vec![
        Reply::text(format!("```cypher\n{WRONG_CYPHER}\n```")),
        Reply::text(format!("Fixed:\n```cypher\n{RIGHT_CYPHER}\n```")),
    ])
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let s = with_local(tmp.path(), &fake);
    let out = ask(
        &s,
        json!({ "question": "what does api import?", "language": "cypher" }),
    );
    assert!(!out.is_error, "{}", out.text);
    // The cypher tool's answer (ran: and the program it compiled to, the rows), then the tries.
    let direct = cypher_tool(&s, RIGHT_CYPHER);
    assert!(!direct.is_error, "{}", direct.text);
    assert!(direct.text.starts_with("ran: "), "{}", direct.text);
    let error = cypher_tool(&s, WRONG_CYPHER);
    assert!(error.is_error);
    let label = format!("local-model (openai at {})", fake.url());
    let indented: Vec<&str> = error.text.lines().collect();
    assert_eq!(
        out.text,
        format!(
            "{}\n\ntries:\n1. local {label}: {WRONG_CYPHER}\n   {}\n2. local {label}: \
             {RIGHT_CYPHER}\n   ok",
            direct.text,
            indented.join("\n   ")
        )
    );
    assert!(out.text.contains("\n1. log\n"), "{}", out.text);
    assert!(out.text.contains("\n2. util\n"), "{}", out.text);
    let j = out.structured.unwrap();
    assert_eq!(j["language"], "cypher");
    assert_eq!(j["cypher"], RIGHT_CYPHER);
    assert_eq!(j["program"], direct.structured.as_ref().unwrap()["program"]);
    assert_eq!(j["total"], 2);
    assert_eq!(j["tries"][0]["program"], WRONG_CYPHER);
    assert_eq!(j["tries"][0]["error"], error.text.as_str());

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    // The first request: the graph as schema shows it at path cypher, the pack's Cypher
    // example in place of its Datalog one, how to write a read query, the grounded names.
    let first = messages(&requests[0].body);
    let system = first[0]["content"].as_str().unwrap();
    let graph = s
        .call(
            "schema",
            json!({ "path": "cypher" }).as_object().cloned(),
            &Cancel::new(),
        )
        .unwrap();
    assert!(system.contains(&graph.text), "{system}");
    assert!(system.contains("one read query in Cypher"), "{system}");
    assert!(
        system.contains(
            "# which packages import log?\nMATCH (p:Package)-[:IMPORTS]->(:Package {name: \
             \"log\"}) RETURN p.name AS importer\n"
        ),
        "{system}"
    );
    assert!(!system.contains("imports(\"api\", ?d)"), "{system}");
    assert!(system.contains("in a ```cypher block"), "{system}");
    let question = first[1]["content"].as_str().unwrap();
    assert!(
        question.contains("- \"api\" (exact for api): "),
        "{question}"
    );
    // The second: the wrong query, then the front end's full error (caret and fix).
    let second = messages(&requests[1].body);
    assert_eq!(second.len(), 4);
    let feedback = second[3]["content"].as_str().unwrap();
    assert!(
        feedback.starts_with(&format!("That query fails:\n{}\n\n", error.text)),
        "{feedback}"
    );
    assert!(feedback.contains("^"), "{feedback}");
    assert!(feedback.contains("fix: "), "{feedback}");
    assert!(feedback.contains("Package"), "{feedback}");
    assert!(feedback.ends_with("in a ```cypher block."), "{feedback}");

    // json: the cypher tool's JSON with the question, the query and the tries.
    let fake = FakeModel::start(vec![Reply::text(RIGHT_CYPHER)]).unwrap();
    // Kept until the end: the server reads the folder's modules.
    let dir5 = tempfile::tempdir().unwrap();
    let s = with_local(dir5.path(), &fake);
    let out = ask(
        &s,
        json!({ "question": "q", "language": "cypher", "json": true, "limit": 1 }),
    );
    assert!(!out.is_error, "{}", out.text);
    let j: Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(j["cypher"], RIGHT_CYPHER);
    assert!(j["program"].as_str().unwrap().contains("imports("), "{j}");
    assert_eq!(j["rows"].as_array().unwrap().len(), 1);
    assert_eq!(j["total"], 2);
}

#[test]
fn the_packs_ask_language_is_the_default() {
    let tmp = tempfile::tempdir().unwrap();
    let store = example_store(tmp.path());
    // A top-level key goes before the pack's tables.
    let pack = Pack::parse(&format!(
        "ask_language = \"cypher\"\n{}",
        strata_fixtures::example::PACK
    ))
    .unwrap();
    let fake = FakeModel::start(vec![Reply::text(RIGHT_CYPHER), Reply::text(RIGHT)]).unwrap();
    let s = Server::new(
        store,
        pack,
        Options {
            ask: AskOptions {
                local: Some(local(&fake)),
                ..AskOptions::default()
            },
            ..Options::default()
        },
    )
    .unwrap();
    let out = ask(&s, json!({ "question": "what does api import?" }));
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.structured.unwrap()["language"], "cypher");
    // A call that says datalog writes Datalog.
    let out = ask(
        &s,
        json!({ "question": "what does app depend on?", "language": "datalog" }),
    );
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.structured.unwrap()["language"], "datalog");
    let requests = fake.requests();
    let system = |i: usize| {
        messages(&requests[i].body)[0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(system(0).contains("```cypher block"), "{}", system(0));
    assert!(system(1).contains("```datalog block"), "{}", system(1));
    // schema data shows the language and the Cypher examples.
    let data = s
        .call(
            "schema",
            json!({ "path": "data" }).as_object().cloned(),
            &Cancel::new(),
        )
        .unwrap();
    assert!(
        data.text
            .contains("\ncypher examples:\n  # which packages import log?\n  MATCH")
    );
    assert!(
        data.text.contains("\nask language: cypher"),
        "{}",
        data.text
    );
    // The tool's schema names both languages, and none other is taken.
    let schema = serde_json::to_value(&*s.tool("ask").unwrap().input_schema).unwrap();
    assert!(schema.to_string().contains("\"cypher\""), "{schema}");
    let out = ask(&s, json!({ "question": "q", "language": "sql" }));
    assert!(out.is_error);
    assert!(out.text.contains("unknown variant"), "{}", out.text);
}

#[test]
fn a_cypher_example_that_does_not_compile_is_refused_at_startup() {
    let tmp = tempfile::tempdir().unwrap();
    let store = example_store(tmp.path());
    let pack = Pack::parse(&format!(
        "{}\n[[cypher_examples]]\nquestion = \"who imports log?\"\nquery = '{WRONG_CYPHER}'\n",
        strata_fixtures::example::PACK
    ))
    .unwrap();
    let err = Server::new(store, pack, Options::default()).err().unwrap();
    assert!(
        matches!(err, strata_mcp::ServerError::CypherExample { .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(
            "strata.toml: the Cypher example \"who imports log?\" does not compile:\n"
        ),
        "{text}"
    );
    assert!(text.contains("^"), "{text}");
    assert!(text.contains("Package"), "{text}");
}

#[test]
fn cypher_without_a_graph_is_a_tool_error_that_says_so() {
    // Only pkg.facts: no nodes or edges dumps, and a pack without [cypher].
    let tmp = tempfile::tempdir().unwrap();
    let store = new_store(tmp.path());
    let facts = tmp.path().join("pkg.facts");
    std::fs::write(&facts, strata_fixtures::example::PKG_FACTS).unwrap();
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: "pkg.facts".to_owned(),
        format: Format::Facts,
        relation: facts_relation(&facts),
        unit: None,
        checkout: None,
    };
    batch.read_file(&facts, &spec).unwrap();
    batch.commit().unwrap();
    let fake = FakeModel::start(vec![Reply::text(r#"pkg(?n, "MIT") => ?n"#)]).unwrap();
    let options = || Options {
        ask: AskOptions {
            local: Some(local(&fake)),
            ..AskOptions::default()
        },
        ..Options::default()
    };
    let s = Server::new(store.clone(), Pack::default(), options()).unwrap();
    let out = ask(
        &s,
        json!({ "question": "which are MIT?", "language": "cypher" }),
    );
    assert!(out.is_error);
    assert_eq!(out.text, strata_mcp::ask::NO_GRAPH);
    assert!(out.text.contains("needs a Cypher graph"), "{}", out.text);
    assert!(fake.requests().is_empty());
    // Datalog still asks.
    let out = ask(&s, json!({ "question": "which are MIT?" }));
    assert!(!out.is_error, "{}", out.text);
    // A pack whose ask_language is cypher, or with a Cypher example, over no graph.
    let pack = Pack::parse("ask_language = \"cypher\"").unwrap();
    let s = Server::new(store.clone(), pack, options()).unwrap();
    let out = ask(&s, json!({ "question": "which are MIT?" }));
    assert_eq!(out.text, strata_mcp::ask::NO_GRAPH);
    let pack = Pack::parse("[[cypher_examples]]\nquestion = \"q\"\nquery = 'MATCH (n) RETURN n'\n")
        .unwrap();
    let err = Server::new(store, pack, options()).err().unwrap();
    assert!(err.to_string().contains("no Cypher graph"), "{err}");
}

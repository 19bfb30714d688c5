//! `strata ask` and the `ask` tool of `strata serve --stdio`, against a fake model server (a
//! real HTTP server on loopback answering from a script): the engine's error goes back to
//! the model, the fixed program runs, and without a model the CLI and the tool say how to
//! configure one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use serde_json::{Value, json};
use strata_fixtures::fake_model::{FakeModel, Reply};

const BIN: &str = env!("CARGO_BIN_EXE_strata");
const WRONG: &str = r#"depends_on("app", ?d) => ?d"#;
const RIGHT: &str = r#"deps.depends_on("app", ?d) => ?d"#;

fn strata(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("STRATA_TEST_MODEL_KEY", "key-1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The bundled example, ingested by the CLI into `dir`.
fn example(dir: &Path) -> String {
    let files = strata_fixtures::example::write_example(dir).unwrap();
    let db = dir.to_str().unwrap().to_owned();
    let mut args = vec!["ingest".to_owned(), db.clone()];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_owned()));
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    db
}

#[test]
fn strata_ask_feeds_the_error_back_and_answers_the_rows() {
    let fake = FakeModel::start(vec![Reply::text(WRONG), Reply::text(RIGHT)]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let url = fake.url();
    let out = strata(&[
        "ask",
        &db,
        "what does app depend on?",
        "--model-url",
        &url,
        "--model-name",
        "m",
        "--model-key-env",
        "STRATA_TEST_MODEL_KEY",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with(&format!(
            "ran: {RIGHT}\ncolumns: d\n1. api\n   deps.depends_on(\"app\", \"api\")\n"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n3 rows\n\ntries:\n1. local m (openai at "),
        "{stdout}"
    );
    assert!(stdout.ends_with(&format!("2. local m (openai at {url}): {RIGHT}\n   ok\n")));
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].header("authorization"), Some("Bearer key-1"));
    let second: Value = serde_json::from_str(&requests[1].body).unwrap();
    let feedback = second["messages"][3]["content"].as_str().unwrap();
    assert!(feedback.contains(&format!(
        "  {WRONG}\n  ^\nfix: did you mean \"deps.depends_on\"?"
    )));

    // --json: the program, the rows and the tries.
    let fake = FakeModel::start(vec![Reply::text(RIGHT)]).unwrap();
    let url = fake.url();
    let out = strata(&[
        "ask",
        &db,
        "q",
        "--json",
        "--mode",
        "local",
        "--model-url",
        &url,
        "--model-name",
        "m",
    ]);
    assert!(out.status.success());
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["program"], RIGHT);
    assert_eq!(j["total"], 3);
    assert_eq!(j["tries"].as_array().unwrap().len(), 1);
}

#[test]
fn strata_ask_in_cypher_feeds_the_front_ends_error_back() {
    let wrong = r#"MATCH (:Pkg {name: "api"})-[:IMPORTS]->(d:Package) RETURN d.name AS dep"#;
    let right = r#"MATCH (:Package {name: "api"})-[:IMPORTS]->(d:Package) RETURN d.name AS dep"#;
    let fake = FakeModel::start(vec![Reply::text(wrong), Reply::text(right)]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let url = fake.url();
    let out = strata(&[
        "ask",
        &db,
        "what does api import?",
        "--language",
        "cypher",
        "--model-url",
        &url,
        "--model-name",
        "m",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The cypher tool's answer: ran: and the program the query compiled to, then the rows.
    assert!(
        stdout.starts_with(
            "ran: pkg(\"api\", _), pkg(?d, _), imports(\"api\", ?d) => ?d\ncolumns: dep\n1. log\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n2 rows\n\ntries:\n1. local m (openai at "),
        "{stdout}"
    );
    assert!(
        stdout.contains("   cypher: unknown label :Pkg\n"),
        "{stdout}"
    );
    assert!(stdout.ends_with(&format!("2. local m (openai at {url}): {right}\n   ok\n")));
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let first: Value = serde_json::from_str(&requests[0].body).unwrap();
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Package {license, name} from pkg(name, license)"),
        "{system}"
    );
    let second: Value = serde_json::from_str(&requests[1].body).unwrap();
    let feedback = second["messages"][3]["content"].as_str().unwrap();
    assert!(
        feedback.contains(&format!(
            "cypher: unknown label :Pkg\nline 1, column 9:\n  {wrong}\n          ^\nfix: the \
             labels are Package"
        )),
        "{feedback}"
    );

    // --language takes datalog or cypher alone.
    let out = strata(&["ask", &db, "q", "--language", "sql"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn strata_ask_without_a_model_or_a_valid_program_fails_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let out = strata(&["ask", &db, "what does app depend on?"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("ask: no model is configured"), "{err}");
    assert!(err.contains("--model-url URL --model-name NAME"), "{err}");
    assert!(out.stdout.is_empty());

    let out = strata(&["ask", &db, "q", "--model-url", "http://127.0.0.1:1/v1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--model-url needs --model-name"));
    let out = strata(&[
        "ask",
        &db,
        "q",
        "--model-url",
        "http://h/v1",
        "--model-name",
        "m",
        "--model-key-env",
        "STRATA_TEST_SURELY_UNSET",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("STRATA_TEST_SURELY_UNSET is not set"));

    let fake = FakeModel::start(vec![Reply::text("x"), Reply::text("y(")]).unwrap();
    let url = fake.url();
    let out = strata(&[
        "ask",
        &db,
        "q",
        "--tries",
        "2",
        "--model-url",
        &url,
        "--model-name",
        "m",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("ask: no program that checks and runs after 2 tries"),
        "{err}"
    );
    assert!(err.contains("\n1. local m (openai at "), "{err}");
    assert!(err.contains("\n2. local m (openai at "), "{err}");
}

/// Sends `lines` to `strata serve DB --stdio --in-process ARGS...` (each call a server of
/// its own, with its own options) and answers the replies to the requests among them, by
/// id.
fn serve_stdio(db: &str, args: &[&str], lines: &[Value]) -> Vec<Value> {
    let mut child = Command::new(BIN)
        .args(["serve", db, "--stdio", "--in-process"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    let wanted = lines.iter().filter(|l| l.get("id").is_some()).count();
    let mut replies = Vec::new();
    while replies.len() < wanted {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("an answer from strata serve");
        replies.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    replies.sort_by_key(|r| r["id"].as_u64());
    replies
}

fn session(question: &str) -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "ask-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "ask", "arguments": {"question": question}}}),
    ]
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn strata_serve_offers_ask_only_with_a_model() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let fake = FakeModel::start(vec![Reply::text(WRONG), Reply::text(RIGHT)]).unwrap();
    let url = fake.url();
    let r = serve_stdio(
        &db,
        &["--model-url", &url, "--model-name", "m"],
        &session("what does app depend on?"),
    );
    assert!(tool_names(&r[1]).contains(&"ask".to_owned()), "{}", r[1]);
    let result = &r[2]["result"];
    assert_eq!(result["isError"], false, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("ran: {RIGHT}\ncolumns: d\n")),
        "{text}"
    );
    assert_eq!(result["structuredContent"]["answered_by"], "local");
    assert_eq!(fake.requests().len(), 2);

    let r = serve_stdio(&db, &[], &session("what does app depend on?"));
    let names = tool_names(&r[1]);
    // The bundled example has a Cypher graph, so cypher is listed; ask is not.
    assert_eq!(
        names,
        [
            "query", "schema", "explain", "look", "values", "find", "cypher"
        ]
    );
    let result = &r[2]["result"];
    assert_eq!(result["isError"], true, "{}", r[2]);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("ask: no model is configured"), "{text}");
}

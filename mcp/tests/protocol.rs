//! Issue 28's protocol part and issue 30's finding 11, over stdio framing: every revision of
//! [`PROTOCOL_VERSIONS`] answers an `initialize` (or, for 2026-07-28, a `server/discover`)
//! and a tool call; serverInfo carries a title and a description; `completion/complete`
//! completes prompt arguments; `listChanged` is declared and sent for tools, resources and
//! prompts; a method the server lacks (those of the tasks and skills extensions too) is
//! -32601 with the method in `data`; a request whose
//! params do not fit is -32602 with its id and the member at fault.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Client;
use serde_json::{Value, json};
use strata_mcp::protocol::PROTOCOL_VERSIONS;
use strata_mcp::{Options, Pack, Server};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

fn server(dir: &std::path::Path) -> Server {
    let store = Store::open(
        dir,
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )
    .unwrap();
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: "x.edges.tsv".into(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    batch
        .read_dump("app\tIMPORTS\tapi\napi\tDEPENDS_ON\tdb\n".as_bytes(), &spec)
        .unwrap();
    batch.commit().unwrap();
    Server::new(store, Pack::default(), Options::default()).unwrap()
}

fn query(id: u64, meta: Option<Value>) -> Value {
    let mut params = json!({"name": "query", "arguments": {"program": "imports(?a, ?b) => ?b"}});
    if let Some(m) = meta {
        params["_meta"] = m;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

fn answered_api(answer: &Value) -> bool {
    answer["result"]["isError"] == json!(false)
        && answer["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("api"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue28_every_revision_answers_an_initialize_and_a_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path());
    let mut served = Vec::new();
    for version in PROTOCOL_VERSIONS {
        let version = version.as_str();
        let mut c = Client::over(s.session());
        if version < "2026-07-28" {
            let init = c.initialize(version).await;
            assert_eq!(init["result"]["protocolVersion"], json!(version), "{init}");
            c.send(query(1, None)).await;
        } else {
            // 2026-07-28 has no initialize: discover, then requests naming the revision.
            let meta = json!({
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
            });
            c.send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover",
                "params": {"_meta": meta}}),
            )
            .await;
            let (found, _) = c.answer(0).await;
            let versions = found["result"]["supportedVersions"].to_string();
            assert!(versions.contains(version), "{found}");
            c.send(query(1, Some(meta))).await;
        }
        let (answer, _) = c.answer(1).await;
        assert!(answered_api(&answer), "{version}: {answer}");
        served.push(version.to_owned());
        c.end().await;
    }
    assert_eq!(
        served,
        [
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue28_server_info_has_a_title_and_description_and_capabilities() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::over(server(dir.path()));
    let init = c.initialize("2025-11-25").await;
    let info = &init["result"]["serverInfo"];
    assert_eq!(info["title"], json!("Strata: strata"), "{init}");
    assert!(
        info["description"]
            .as_str()
            .unwrap()
            .contains("the facts of this database"),
        "{init}"
    );
    let caps = &init["result"]["capabilities"];
    for list in ["tools", "resources", "prompts"] {
        assert_eq!(caps[list]["listChanged"], json!(true), "{list}: {init}");
    }
    assert!(caps["completions"].is_object(), "{init}");
    c.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue28_prompt_arguments_are_completed() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::over(server(dir.path()));
    c.initialize("2025-11-25").await;
    let complete = |id: u64, prompt: &str, arg: &str, value: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "completion/complete", "params": {
            "ref": {"type": "ref/prompt", "name": prompt},
            "argument": {"name": arg, "value": value}}})
    };
    c.send(complete(1, "used_by", "target", "im")).await;
    let (a, _) = c.answer(1).await;
    assert_eq!(
        a["result"]["completion"]["values"],
        json!(["imports"]),
        "{a}"
    );
    c.send(complete(2, "depends_on", "target", "")).await;
    let (a, _) = c.answer(2).await;
    let values = a["result"]["completion"]["values"].as_array().unwrap();
    assert!(values.contains(&json!("depends_on")), "{a}");
    assert!(values.contains(&json!("imports")), "{a}");
    assert_eq!(
        a["result"]["completion"]["total"],
        json!(values.len()),
        "{a}"
    );
    // A prompt or argument the server lacks: no values, not an error.
    c.send(complete(3, "test_prompt_with_arguments", "arg1", "test"))
        .await;
    let (a, _) = c.answer(3).await;
    assert_eq!(a["result"]["completion"]["values"], json!([]), "{a}");
    // Malformed: -32602 naming the member.
    c.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "completion/complete", "params": {
        "ref": {"type": "ref/prompt", "name": "used_by"}, "argument": {"name": "target"}}}),
    )
    .await;
    let (e, _) = c.answer(4).await;
    assert_eq!(e["error"]["code"], json!(-32602), "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"argument.value\""),
        "{e}"
    );
    c.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue30_jsonrpc_errors_carry_their_id_and_say_which_param() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::over(server(dir.path()));
    c.initialize("2025-06-18").await;
    let cases = [
        (
            json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": [1, 2]}),
            -32602,
            "the params must be an object, not an array",
        ),
        (
            json!({"jsonrpc": "2.0", "id": "s-7", "method": "tools/call", "params": {"name": 5}}),
            -32602,
            "\"name\" must be a string, not the number 5",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 8, "method": "resources/read", "params": {}}),
            -32602,
            "\"uri\" is missing",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 9, "method": "prompts/get",
                   "params": {"name": "used_by", "arguments": {"target": 1}}}),
            -32602,
            "the argument \"target\" must be a string",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 10, "method": "no/such", "params": [1]}),
            -32600,
            "Invalid Request",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 11, "method": "no/such", "params": {}}),
            -32601,
            "Method not found",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 12, "method": "resources/subscribe",
                   "params": {"uri": "strata://schema"}}),
            -32601,
            "Method not found",
        ),
    ];
    for (request, code, says) in cases {
        c.send(request.clone()).await;
        let m = c.next().await;
        assert_eq!(m["id"], request["id"], "{request} -> {m}");
        assert_eq!(m["error"]["code"], json!(code), "{request} -> {m}");
        let message = m["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{request} -> {m}");
        if code == -32601 {
            assert_eq!(m["error"]["data"]["method"], request["method"], "{m}");
        }
    }
    // The session goes on.
    c.send(query(20, None)).await;
    let (a, _) = c.answer(20).await;
    assert!(answered_api(&a), "{a}");
    c.end().await;
}

/// The methods of the tasks and skills extensions, which the server does not declare:
/// with params rmcp reads (which it used to answer itself, -32601 with the bare method
/// name as the message and no `data`) or not, they are not found as any other method is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_28_tasks_methods_are_not_found_with_the_method_in_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::over(server(dir.path()));
    c.initialize("2025-11-25").await;
    let revision = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let cases = [
        ("tasks/get", json!({"taskId": "t-1"})),
        ("tasks/get", json!({})),
        ("tasks/get", json!({"taskId": "t-1", "_meta": revision})),
        ("tasks/cancel", json!({"taskId": "t-1"})),
        (
            "tasks/update",
            json!({"taskId": "t-1", "inputResponses": {}}),
        ),
        ("tasks/list", json!({})),
        ("tasks/result", json!({"taskId": "t-1"})),
        ("skills/list", json!({})),
        ("skills/get", json!({"uri": "skill://x/SKILL.md"})),
        (
            "resources/directory/read",
            json!({"uri": "strata://schema"}),
        ),
        // rmcp's own unknown-method path, for comparison.
        ("no/such", json!({})),
    ];
    for (i, (method, params)) in cases.iter().enumerate() {
        let id = 30 + i as u64;
        c.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let (m, _) = c.answer(id).await;
        assert_eq!(
            m["error"],
            json!({"code": -32601, "message": "Method not found", "data": {"method": method}}),
            "{method} {params} -> {m}"
        );
    }
    // The session goes on.
    c.send(query(50, None)).await;
    let (a, _) = c.answer(50).await;
    assert!(answered_api(&a), "{a}");
    c.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue28_resources_and_prompts_announce_their_changes() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::over(server(dir.path()));
    c.initialize("2025-11-25").await;
    for (id, method) in [
        (1, "tools/list"),
        (2, "resources/list"),
        (3, "prompts/list"),
    ] {
        c.send(json!({"jsonrpc": "2.0", "id": id, "method": method}))
            .await;
        let (a, notes) = c.answer(id).await;
        assert!(a.get("result").is_some(), "{a}");
        assert!(notes.is_empty(), "{notes:?}");
    }
    // A new module: the resources (one per module) changed, nothing else.
    std::fs::create_dir_all(dir.path().join("modules")).unwrap();
    std::fs::write(
        dir.path().join("modules/extra.dl"),
        "uses(?a, ?b) :- imports(?a, ?b);\n",
    )
    .unwrap();
    c.send(query(4, None)).await;
    let (a, notes) = c.answer(4).await;
    assert!(answered_api(&a), "{a}");
    let methods = |notes: &[Value]| -> Vec<String> {
        notes
            .iter()
            .map(|n| n["method"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        methods(&notes),
        ["notifications/resources/list_changed"],
        "{notes:?}"
    );
    // Told once.
    c.send(query(5, None)).await;
    let (_, notes) = c.answer(5).await;
    assert!(notes.is_empty(), "{notes:?}");
    // A new pack: all three.
    std::fs::write(
        dir.path().join("strata.toml"),
        "name = \"renamed\"\nabout = \"imports\"\n",
    )
    .unwrap();
    c.send(query(6, None)).await;
    let (_, notes) = c.answer(6).await;
    assert_eq!(
        methods(&notes),
        [
            "notifications/tools/list_changed",
            "notifications/resources/list_changed",
            "notifications/prompts/list_changed"
        ],
        "{notes:?}"
    );
    c.end().await;
}

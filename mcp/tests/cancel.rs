//! Issue 28, one call: a cancelled call stops its evaluation and gives back its heavy slot
//! (the next heavy call is admitted) and is not answered; a call with a progress token
//! hears `notifications/progress` about once a second until its answer; each tool carries
//! the answer budget as `_meta["anthropic/maxResultSizeChars"]`; `tools.listChanged` is
//! declared and sent after the pack is read again; the protocol versions are answered;
//! malformed calls are JSON-RPC errors with their id.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_mcp::serve::{MAX_STDIO_MESSAGE_BYTES, serve_lines};
use strata_mcp::{Called, Options, Pack, Server};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// The transitive closure of the generated call graph, counted: with 2,000 functions it
/// derives 4M pairs, seconds of work (many more in a debug build).
const CLOSURE: &str = "r(?a, ?b) :- calls(?a, ?b); r(?a, ?c) :- r(?a, ?b), calls(?b, ?c); \
                       r(?a, ?b) => count(?a)";

/// Heavy (past the light lane's 200,000 units of work: about 730,000) but quick: paths of
/// five calls.
const CROSS: &str = "calls(?a, ?b), calls(?b, ?c), calls(?c, ?d), calls(?d, ?e), \
                     calls(?e, ?f) => count(?a)";

fn calls_store(dir: &std::path::Path, n: u32) -> Store {
    let store = Store::open(
        dir,
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )
    .unwrap();
    let dump = strata_fixtures::runaway::calls_edges(n);
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: "calls.edges.tsv".into(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    batch.read_dump(dump.as_bytes(), &spec).unwrap();
    batch.commit().unwrap();
    store
}

/// One heavy slot, a long time limit, a short wait for a slot: a heavy call that finds
/// the slot held is refused within 200 ms.
fn one_slot_server(dir: &std::path::Path) -> Server {
    Server::builder(calls_store(dir, 2_000), Pack::default())
        .options(Options {
            timeout: Duration::from_secs(600),
            admission_wait: Duration::from_millis(200),
            max_memory: Some(4 << 30),
            ..Options::default()
        })
        .heavy_calls(1)
        .build()
        .unwrap()
}

fn running(s: &Server) -> usize {
    s.app().admission().expect("a gate").running()
}

/// Waits until `f` holds, at most 60 s; how long it took.
async fn until(what: &str, f: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(60), "never: {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    start.elapsed()
}

fn args(program: &str) -> Option<serde_json::Map<String, Value>> {
    json!({ "program": program }).as_object().cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue28_a_cancelled_call_stops_and_frees_its_slot() {
    let dir = tempfile::tempdir().unwrap();
    let s = one_slot_server(dir.path());
    let (cancel_tx, cancel_rx) = tokio::sync::oneshot::channel::<()>();
    let heavy = {
        let s = s.clone();
        tokio::spawn(async move {
            s.call_cancellable(
                "query",
                args(CLOSURE),
                async move {
                    let _ = cancel_rx.await;
                },
                None,
            )
            .await
        })
    };
    until("the closure holds the slot", || running(&s) == 1).await;
    // While it runs, another heavy call is refused.
    let refused = s.call_async("query", args(CROSS)).await.unwrap();
    assert!(refused.is_error, "{}", refused.text);
    assert!(refused.text.contains("busy"), "{}", refused.text);
    let cancelled_at = Instant::now();
    cancel_tx.send(()).unwrap();
    let called = heavy.await.unwrap();
    let stopped = cancelled_at.elapsed();
    assert!(matches!(called, Called::Cancelled), "{called:?}");
    // The evaluation has stopped when the call returns: the slot is free at once.
    assert_eq!(running(&s), 0);
    let admitted = s.call_async("query", args(CROSS)).await.unwrap();
    assert!(!admitted.is_error, "{}", admitted.text);
    eprintln!("cancel to slot free: {stopped:?}");
}

/// The evaluation itself, cancelled from another thread: the call answers the engine's
/// `Cancelled` error and the slot is free.
#[test]
fn issue28_a_cancelled_evaluation_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let s = one_slot_server(dir.path());
    let cancel = strata_eval::Cancel::new();
    let progress = strata_eval::Progress::new();
    std::thread::scope(|scope| {
        let run = scope.spawn(|| s.call_counted("query", args(CLOSURE), &cancel, &progress));
        // Past the light lane: the run with the slot.
        while running(&s) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        cancel.cancel();
        let out = run.join().unwrap().unwrap();
        assert!(out.is_error, "{}", out.text);
        assert!(out.text.contains("cancelled"), "{}", out.text);
    });
    assert_eq!(running(&s), 0);
    let c = progress.read();
    assert!(c.work > 0 && c.facts > 0, "{c:?}");
}

type Reader = Lines<BufReader<DuplexStream>>;

struct Client {
    input: DuplexStream,
    lines: Reader,
    serving: tokio::task::JoinHandle<Result<(), strata_mcp::ServeError>>,
}

impl Client {
    fn over(server: Server) -> Client {
        let (input, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_out) = tokio::io::duplex(1 << 20);
        let serving = tokio::spawn(serve_lines(
            server,
            BufReader::new(server_in),
            server_out,
            MAX_STDIO_MESSAGE_BYTES,
            std::future::pending(),
        ));
        Client {
            input,
            lines: BufReader::new(client_out).lines(),
            serving,
        }
    }

    async fn send(&mut self, message: Value) {
        self.input
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
            .await
            .expect("a message")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// The answer to request `id`, and the notifications before it.
    async fn answer(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut notes = Vec::new();
        loop {
            let m = self.next().await;
            if m.get("id").is_none() {
                notes.push(m);
                continue;
            }
            assert_eq!(m["id"], json!(id), "an answer to another request: {m}");
            return (m, notes);
        }
    }

    async fn initialize(&mut self, version: &str) -> Value {
        self.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}),
        )
        .await;
        let (init, _) = self.answer(0).await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        init
    }

    async fn end(self) {
        drop(self.input);
        let _ = tokio::time::timeout(Duration::from_secs(20), self.serving).await;
    }
}

fn tool_call(id: u64, program: &str, token: Option<&str>) -> Value {
    let mut params = json!({"name": "query", "arguments": {"program": program}});
    if let Some(t) = token {
        params["_meta"] = json!({"progressToken": t});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// Over the protocol (stdio framing): progress while the closure runs, then
/// `notifications/cancelled`: no answer to the cancelled call, its slot free, the next
/// heavy call admitted and answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue28_over_stdio_cancelled_is_not_answered_and_progress_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let s = one_slot_server(dir.path());
    let mut c = Client::over(s.clone());
    let init = c.initialize("2025-06-18").await;
    assert_eq!(
        init["result"]["capabilities"]["tools"]["listChanged"],
        json!(true),
        "{init}"
    );
    c.send(tool_call(1, CLOSURE, Some("tok-1"))).await;
    // A progress notification after about a second, naming the token.
    let p = c.next().await;
    assert_eq!(p["method"], json!("notifications/progress"), "{p}");
    assert_eq!(p["params"]["progressToken"], json!("tok-1"), "{p}");
    assert!(p["params"]["progress"].as_f64().is_some(), "{p}");
    assert!(
        p["params"]["message"]
            .as_str()
            .unwrap()
            .contains("work units"),
        "{p}"
    );
    assert_eq!(running(&s), 1);
    c.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "the user pressed escape"}}),
    )
    .await;
    let freed = until("the slot is given back", || running(&s) == 0).await;
    eprintln!("notifications/cancelled to slot free: {freed:?}");
    // The next heavy call is admitted; the cancelled call is never answered (an answer to
    // id 1 would come first and fail `answer`).
    c.send(tool_call(2, CROSS, None)).await;
    let (next, notes) = c.answer(2).await;
    assert_eq!(next["result"]["isError"], json!(false), "{next}");
    assert!(
        notes
            .iter()
            .all(|n| n["method"] == json!("notifications/progress")),
        "{notes:?}"
    );
    // A quick call with a token hears no progress: it ends before the first second.
    c.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "schema", "arguments": {}, "_meta": {"progressToken": 7}}}),
    )
    .await;
    let (schema, notes) = c.answer(3).await;
    assert!(schema.get("result").is_some(), "{schema}");
    assert!(notes.is_empty(), "{notes:?}");
    c.end().await;
}

fn small_server(dir: &std::path::Path) -> Server {
    Server::new(calls_store(dir, 50), Pack::default(), Options::default()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue28_protocol_versions_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    let s = small_server(dir.path());
    let latest = rmcp::model::ProtocolVersion::LATEST.to_string();
    let mut answered = Vec::new();
    for asked in [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        latest.as_str(),
        "2099-01-01",
    ] {
        let mut c = Client::over(s.session());
        let init = c.initialize(asked).await;
        let version = init["result"]["protocolVersion"]
            .as_str()
            .unwrap_or_else(|| panic!("{asked}: {init}"))
            .to_owned();
        // The session works at the version agreed.
        c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await;
        let (list, _) = c.answer(1).await;
        assert!(list["result"]["tools"].is_array(), "{asked}: {list}");
        answered.push((asked.to_owned(), version));
        c.end().await;
    }
    let got = |v: &str| answered.iter().find(|(a, _)| a == v).unwrap().1.clone();
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        assert_eq!(got(v), v, "{answered:?}");
    }
    // A version rmcp does not know is answered with one it does.
    assert_eq!(got("2099-01-01"), "2025-11-25", "{answered:?}");
    eprintln!("asked and answered: {answered:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue28_bad_calls_and_unknown_methods_are_errors_with_their_id() {
    let dir = tempfile::tempdir().unwrap();
    let s = small_server(dir.path());
    let mut c = Client::over(s);
    c.initialize("2025-06-18").await;
    c.send(
        json!({"jsonrpc": "2.0", "id": 11, "method": "completion/complete",
        "params": {"ref": {"type": "ref/prompt", "name": "x"},
                   "argument": {"name": "a", "value": "b"}}}),
    )
    .await;
    let (e, _) = c.answer(11).await;
    assert_eq!(e["error"]["code"], json!(-32601), "{e}");
    assert_eq!(
        e["error"]["message"],
        json!("method not found: completion/complete"),
        "{e}"
    );
    c.send(json!({"jsonrpc": "2.0", "id": 12, "method": "no/such/method"}))
        .await;
    let (e, _) = c.answer(12).await;
    // rmcp answers an unknown method -32601 with the bare method name as the message.
    assert_eq!(e["error"]["code"], json!(-32601), "{e}");
    c.send(json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": [1, 2]}))
        .await;
    let (e, _) = c.answer(13).await;
    assert_eq!(e["error"]["code"], json!(-32602), "{e}");
    c.send(json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call",
        "params": {"name": 5}}))
        .await;
    let (e, _) = c.answer(14).await;
    assert_eq!(e["error"]["code"], json!(-32602), "{e}");
    // The session goes on.
    c.send(json!({"jsonrpc": "2.0", "id": 15, "method": "ping"}))
        .await;
    let (pong, _) = c.answer(15).await;
    assert!(pong.get("result").is_some(), "{pong}");
    c.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue28_tools_carry_the_answer_budget_and_a_pack_change_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let store = calls_store(dir.path(), 50);
    let s = Server::new(
        store,
        Pack::default(),
        Options {
            max_bytes: 40_000,
            ..Options::default()
        },
    )
    .unwrap();
    let mut c = Client::over(s);
    c.initialize("2025-06-18").await;
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await;
    let (list, _) = c.answer(1).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    assert!(!tools.is_empty());
    for t in tools {
        assert_eq!(
            t["_meta"]["anthropic/maxResultSizeChars"],
            json!(40_000),
            "{t}"
        );
    }
    // A new `strata.toml`: read at the next request, which is followed by
    // `notifications/tools/list_changed`.
    std::fs::write(
        dir.path().join("strata.toml"),
        "name = \"renamed\"\nabout = \"calls\"\n",
    )
    .unwrap();
    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "schema", "arguments": {}}}))
        .await;
    let (answer, notes) = c.answer(2).await;
    assert!(answer.get("result").is_some(), "{answer}");
    assert_eq!(
        notes,
        vec![json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})]
    );
    c.end().await;
}

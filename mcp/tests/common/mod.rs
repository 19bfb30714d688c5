//! Helpers the MCP adapter's integration tests share.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_mcp::serve::{MAX_STDIO_MESSAGE_BYTES, serve_lines};
use strata_mcp::{Options, Pack, Server};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// A server over a new, empty database in `dir`.
pub fn empty_server(dir: &Path) -> Server {
    let store = Store::open(
        dir,
        OpenOptions {
            create: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    Server::new(store, strata_mcp::Pack::default(), Options::default()).unwrap()
}

type Reader = Lines<BufReader<DuplexStream>>;

/// A client speaking JSON-RPC lines to a server, as over stdio.
pub struct Client {
    input: DuplexStream,
    lines: Reader,
    serving: tokio::task::JoinHandle<Result<(), strata_mcp::ServeError>>,
}

impl Client {
    /// A session of `server`.
    pub fn over(server: Server) -> Client {
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

    /// Writes one message.
    pub async fn send(&mut self, message: Value) {
        self.input
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The next message (at most 120 s away).
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
            .await
            .expect("a message")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// The answer to request `id`, and the notifications before it.
    pub async fn answer(&mut self, id: u64) -> (Value, Vec<Value>) {
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

    /// `initialize` at `version`, then `notifications/initialized`; the answer.
    pub async fn initialize(&mut self, version: &str) -> Value {
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

    /// Ends the input and waits for the session to end.
    pub async fn end(self) {
        drop(self.input);
        let _ = tokio::time::timeout(Duration::from_secs(20), self.serving).await;
    }
}

/// The transitive closure of the generated call graph without its cycles' ends, counted:
/// over [`FUNCTIONS`] functions it derives 25M pairs in rounds of joins, seconds of work in a
/// release build and many more in a debug one: the tests cancel it. The filter keeps it a
/// program of rounds: a plain closure is searched from each source, in a fraction of the
/// time, too soon over to cancel.
pub const CLOSURE: &str = "r(?a, ?b) :- calls(?a, ?b); \
                       r(?a, ?c) :- r(?a, ?b), calls(?b, ?c), ?c != ?a; \
                       r(?a, ?b) => count(?a)";

/// Heavy (past the light lane's 200,000 units of work: about 730,000 over 2,000
/// functions, growing with their number) but quick: paths of five calls.
pub const CROSS: &str = "calls(?a, ?b), calls(?b, ?c), calls(?c, ?d), calls(?d, ?e), \
                     calls(?e, ?f) => count(?a)";

/// The functions of the call graph [`CLOSURE`] runs over in the tests that cancel it. With
/// 2,000 (4M pairs) a release build finished it in 0.78 s, before the first progress
/// notification (after a second) or a cancel could reach it; 4,000 took 2.8 s.
pub const FUNCTIONS: u32 = 5_000;

/// A database of `n` generated functions and their calls.
pub fn calls_store(dir: &std::path::Path, n: u32) -> Store {
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
pub fn one_slot_server(dir: &std::path::Path) -> Server {
    Server::builder(calls_store(dir, FUNCTIONS), Pack::default())
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

/// How many heavy calls hold a slot.
pub fn running(s: &Server) -> usize {
    s.app().admission().expect("a gate").running()
}

/// Waits until `f` holds, at most 60 s; how long it took.
pub async fn until(what: &str, f: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(60), "never: {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    start.elapsed()
}

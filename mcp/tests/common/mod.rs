//! Helpers the MCP adapter's integration tests share.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use strata_mcp::serve::{MAX_STDIO_MESSAGE_BYTES, serve_lines};
use strata_mcp::{Options, Server};
use strata_store::{OpenOptions, Store};
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

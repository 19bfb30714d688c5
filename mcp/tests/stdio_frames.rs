//! Issue 20's stdio scenarios: a message past the 16 MiB limit and a line that is not JSON
//! are answered with JSON-RPC errors (rmcp alone drops both silently), and the session
//! goes on; the end of input ends the session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use serde_json::{Value, json};
use strata_mcp::serve::{MAX_STDIO_MESSAGE_BYTES, serve_lines};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

async fn next(lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("an answer")
        .unwrap()
        .expect("a line");
    serde_json::from_str(&line).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue20_stdio_oversized_and_garbage_lines_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::empty_server(dir.path());
    let (mut client, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, client_out) = tokio::io::duplex(1 << 16);
    let serving = tokio::spawn(serve_lines(
        server,
        BufReader::new(server_in),
        server_out,
        MAX_STDIO_MESSAGE_BYTES,
        std::future::pending(),
    ));
    let mut lines = BufReader::new(client_out).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    client
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    assert_eq!(next(&mut lines).await["id"], json!(1));
    client
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();

    // Garbage: a parse error.
    client.write_all(b"hello, not json\n").await.unwrap();
    let e = next(&mut lines).await;
    assert_eq!(e["error"]["code"], json!(-32700), "{e}");
    assert_eq!(e["id"], Value::Null);

    // A message past the limit: an error with its id, naming the limit.
    let big = "x".repeat(MAX_STDIO_MESSAGE_BYTES + 10);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{{"name":"query","arguments":{{"program":"{big}"}}}}}}"#
    );
    let writer = tokio::spawn(async move {
        client.write_all(huge.as_bytes()).await.unwrap();
        client.write_all(b"\n").await.unwrap();
        client
    });
    let e = next(&mut lines).await;
    let mut client = writer.await.unwrap();
    assert_eq!(e["id"], json!(42), "{e}");
    assert_eq!(e["error"]["code"], json!(-32600), "{e}");
    let m = e["error"]["message"].as_str().unwrap();
    assert!(m.contains(&MAX_STDIO_MESSAGE_BYTES.to_string()), "{m}");

    // The session goes on.
    client
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let pong = next(&mut lines).await;
    assert_eq!(pong["id"], json!(2), "{pong}");
    assert!(pong.get("result").is_some(), "{pong}");

    // The end of input ends the session.
    drop(client);
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("the session ends at the end of input")
        .unwrap()
        .unwrap();
}

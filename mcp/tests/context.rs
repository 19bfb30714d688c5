//! `context` through MCP (issue 32): a `tools/call` of `query` over the stdio transport
//! shows the cited sites' lines from the repository's checkout, and a `context` past 20 is
//! a tool error that says the range.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../store/tests/scip/support.rs"]
mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use strata_app::ingest::{DumpFiles, dump_specs, ingest};
use strata_mcp::serve::{MAX_STDIO_MESSAGE_BYTES, serve_lines};
use strata_mcp::{Options, Pack, Server};
use strata_store::{BatchOptions, OpenOptions, Store};
use support::{documents_field, len_field, metadata, varint, varint_field};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const A_PY: &str = "def f():\n    return 1\n\n\ndef g():\n    x = 1\n    y = 2\n    return f()\n";

fn packed(number: u64, values: &[u64]) -> Vec<u8> {
    let mut p = Vec::new();
    for v in values {
        p.extend(varint(*v));
    }
    len_field(number, &p)
}

fn occ(line: u64, symbol: &str, roles: u64, enclosing: Option<[u64; 4]>) -> Vec<u8> {
    let mut out = packed(1, &[line, 0, 3]);
    out.extend(len_field(2, symbol.as_bytes()));
    if roles != 0 {
        out.extend(varint_field(3, roles));
    }
    if let Some(e) = enclosing {
        out.extend(packed(7, &e));
    }
    out
}

/// A database of one SCIP index whose checkout `demo/` holds `src/a.py`, in which g calls f
/// on line 8.
fn server(dir: &Path) -> Server {
    let repo = dir.join("demo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/a.py"), A_PY).unwrap();
    let (f, g) = (
        "scip-python python demo 1 `a`/f().",
        "scip-python python demo 1 `a`/g().",
    );
    let mut doc = len_field(1, b"src/a.py");
    for o in [
        occ(0, f, 1, Some([0, 0, 1, 12])),
        occ(4, g, 1, Some([4, 0, 7, 14])),
        occ(7, f, 0, None),
    ] {
        doc.extend(len_field(2, &o));
    }
    let mut bytes = metadata(&format!("file://{}", repo.display()));
    bytes.extend(documents_field(&doc));
    let file = dir.join("index.scip");
    std::fs::write(&file, bytes).unwrap();
    let db = dir.join("db");
    let specs = dump_specs(&DumpFiles {
        files: vec![file],
        ..DumpFiles::default()
    })
    .unwrap();
    ingest(&db, &specs, BatchOptions::default(), |_, _| {}, || {}).unwrap();
    let store = Store::open(&db, OpenOptions::default()).unwrap();
    Server::new(store, Pack::load(&db).unwrap(), Options::default()).unwrap()
}

async fn next(lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("an answer")
        .unwrap()
        .expect("a line");
    serde_json::from_str(&line).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_context_through_mcp_shows_the_checkout_lines() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path());
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

    // The tool's schema offers the argument.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    client
        .write_all(format!("{list}\n").as_bytes())
        .await
        .unwrap();
    let tools = next(&mut lines).await;
    for name in ["query", "cypher"] {
        let tool = tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap();
        assert_eq!(
            tool["inputSchema"]["properties"]["context"]["type"], "integer",
            "{tool}"
        );
    }

    let program = "code.call_sites(?callee, ?caller, ?path, ?line) => ?caller, ?path, ?line";
    let call = |id: u64, context: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "query", "arguments": {"program": program, "context": context}}})
    };
    client
        .write_all(format!("{}\n", call(3, 1)).as_bytes())
        .await
        .unwrap();
    let answer = next(&mut lines).await;
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(
            "context (1 line either side):\n  demo/src/a.py:8\n    7 |     y = 2\n  > 8 |     return f()"
        ),
        "{text}"
    );
    let sites = &answer["result"]["structuredContent"]["context"]["sites"];
    assert_eq!(sites[0]["path"], "demo/src/a.py", "{answer}");
    assert_eq!(sites[0]["first"], 7, "{answer}");
    assert_eq!(sites[0]["lines"], json!(["    y = 2", "    return f()"]));

    client
        .write_all(format!("{}\n", call(4, 21)).as_bytes())
        .await
        .unwrap();
    let refused = next(&mut lines).await;
    assert_eq!(refused["result"]["isError"], json!(true), "{refused}");
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["kind"], "context",
        "{refused}"
    );
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("query: context 21 is out of range; pass from 0 to 20"),
        "{text}"
    );

    drop(client);
    let _ = tokio::time::timeout(Duration::from_secs(20), serving).await;
}

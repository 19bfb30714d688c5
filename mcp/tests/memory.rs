//! Issue 18 through the MCP tools: `max_memory` lowers the server's memory cap (a larger
//! value is lowered to it), and a runaway program is a tool error naming the limit and
//! where the memory went; past the gate of heavy calls a query is a tool error naming the
//! limit while `look` and `schema` answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use strata_eval::Cancel;
use strata_mcp::{Options, Pack, Server, ToolOutput};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

use strata_fixtures::runaway::CROSS;

fn calls_store(dir: &std::path::Path) -> Store {
    let store = Store::open(
        dir,
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )
    .unwrap();
    let dump = strata_fixtures::runaway::calls_edges(600);
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

fn server(dir: &std::path::Path, max_memory: Option<u64>) -> Server {
    let options = Options {
        max_memory,
        ..Options::default()
    };
    Server::new(calls_store(dir), Pack::default(), options).unwrap()
}

fn call(s: &Server, tool: &str, args: serde_json::Value) -> ToolOutput {
    s.call(tool, args.as_object().cloned(), &Cancel::new())
        .expect("a known tool")
}

#[test]
fn issue18_a_runaway_query_is_a_tool_error_naming_the_memory_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path(), Some(1 << 20));
    // Asking for more than the server's cap is lowered to it.
    for args in [
        json!({ "program": CROSS }),
        json!({ "program": CROSS, "max_memory": "64G" }),
    ] {
        let out = call(&s, "query", args);
        assert!(out.is_error, "{}", out.text);
        assert!(
            out.text.contains(
                "the program passed its memory limit of 1.0 MiB (1048576 bytes); it held"
            ),
            "{}",
            out.text
        );
    }
    let explain = call(
        &s,
        "explain",
        json!({ "program": CROSS, "max_memory": 1_048_576 }),
    );
    assert!(explain.is_error, "{}", explain.text);
    assert!(
        explain.text.contains("memory limit of 1.0 MiB"),
        "{}",
        explain.text
    );
}

#[test]
fn max_memory_lowers_the_cap_and_a_bad_size_is_a_tool_error() {
    let tmp = tempfile::tempdir().unwrap();
    let s = server(tmp.path(), None);
    let ok = call(&s, "query", json!({ "program": CROSS }));
    assert!(!ok.is_error, "{}", ok.text);
    let lowered = call(&s, "query", json!({ "program": CROSS, "max_memory": "2M" }));
    assert!(lowered.is_error);
    assert!(
        lowered.text.contains("memory limit of 2.0 MiB"),
        "{}",
        lowered.text
    );
    let bad = call(
        &s,
        "query",
        json!({ "program": CROSS, "max_memory": "lots" }),
    );
    assert!(bad.is_error);
    assert!(bad.text.contains("\"lots\" is not a size"), "{}", bad.text);
}

/// One heavy slot, held by an `explain` blocked in the host's base hook until the test
/// lets it go: a light query answers, a heavy one (past the light lane) is a tool error
/// naming the limit; `look` and `schema` answer.
#[test]
fn issue18_past_the_gate_a_query_is_refused_while_lookups_answer() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex, mpsc};

    let tmp = tempfile::tempdir().unwrap();
    let store = calls_store(tmp.path());
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let (entered_tx, released) = (Mutex::new(entered_tx), Mutex::new(released));
    let block = AtomicBool::new(true);
    let base = store.clone();
    let s = Server::builder(store, Pack::default())
        .options(Options {
            admission_wait: std::time::Duration::from_millis(100),
            ..Options::default()
        })
        .heavy_calls(1)
        .base_for(move |ctx, _| {
            if ctx.tool == "explain" && block.swap(false, Ordering::SeqCst) {
                entered_tx.lock().unwrap().send(()).unwrap();
                released.lock().unwrap().recv().unwrap();
            }
            let snap = base.snapshot().map_err(|e| e.to_string())?;
            Ok(Arc::new(snap) as strata_app::host::Source)
        })
        .build()
        .unwrap();
    // A light query finishes within the light lane's work; the cross product does not.
    let program = json!({ "program": "calls(?a, ?b) => count(?b)" });
    let heavy = json!({ "program": "calls(?a, ?b), calls(?c, ?d) => count(?a)" });
    std::thread::scope(|scope| {
        // explain always takes a slot: it holds the only one while its base hook waits.
        let first = scope.spawn(|| call(&s, "explain", program.clone()));
        entered.recv().unwrap();
        let light = call(&s, "query", program.clone());
        assert!(!light.is_error, "{}", light.text);
        let refused = call(&s, "query", heavy.clone());
        assert!(refused.is_error);
        assert!(
            refused
                .text
                .starts_with("query: the server is busy: it runs at most 1 heavy call"),
            "{}",
            refused.text
        );
        let look = call(&s, "look", json!({ "target": "calls" }));
        assert!(!look.is_error, "{}", look.text);
        let schema = call(&s, "schema", json!({}));
        assert!(!schema.is_error, "{}", schema.text);
        release.send(()).unwrap();
        let first = first.join().unwrap();
        assert!(!first.is_error, "{}", first.text);
    });
    assert!(!call(&s, "query", program).is_error);
}

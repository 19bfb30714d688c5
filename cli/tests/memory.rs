//! `strata query --max-memory` (issue 18): a runaway program stops at the cap with an exit
//! code of 1 and an error naming the limit and where the memory went; with room it answers
//! as without a cap; a size that is no size is refused before anything runs. `--cache`,
//! the store's page cache, takes a size too and changes no answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::BIN;

use strata_fixtures::runaway::{CROSS, calls_edges as calls};

fn strata(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn issue18_max_memory_stops_the_cross_product_with_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let db = common::db_with(tmp.path(), &calls(600));
    let db = db.to_str().unwrap();
    let (code, out, err) = strata(&["query", db, CROSS, "--max-memory", "1M"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("the program passed its memory limit of 1.0 MiB (1048576 bytes); it held"),
        "{err}"
    );
    assert!(err.contains("indexes"), "{err}");
    // Plain bytes are a size too; with room the answer is the one without a cap.
    let (code, roomy, err) = strata(&["query", db, CROSS, "--max-memory", "17179869184"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, default, err) = strata(&["query", db, CROSS]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(roomy, default);
    assert!(roomy.contains("600"), "{roomy}");
}

#[test]
fn a_bad_size_is_refused_saying_how_to_write_one() {
    let tmp = tempfile::tempdir().unwrap();
    let db = common::db_with(tmp.path(), &calls(10));
    let (code, _, err) = strata(&["query", db.to_str().unwrap(), CROSS, "--max-memory", "lots"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\"lots\" is not a size"), "{err}");
    assert!(err.contains("512M"), "{err}");
}

#[test]
fn the_page_cache_is_a_size_and_changes_no_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let db = common::db_with(tmp.path(), &calls(200));
    let db = db.to_str().unwrap();
    let (code, default, err) = strata(&["query", db, CROSS]);
    assert_eq!(code, Some(0), "{err}");
    for size in ["1M", "1G", "65536"] {
        let (code, out, err) = strata(&["query", db, CROSS, "--cache", size]);
        assert_eq!(code, Some(0), "--cache {size}: {err}");
        assert_eq!(out, default, "--cache {size}");
    }
    let (code, _, err) = strata(&["query", db, CROSS, "--cache", "big"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\"big\" is not a size"), "{err}");
}

/// Issue 30, finding 8: under an address-space limit (`prlimit --as`), the default memory
/// cap is read from it, so 20 calls of a heavy join on one server are each refused at the
/// gate or stopped at their cap, and the server never aborts (before: the cap came from the
/// machine's memory alone, and a refused allocation ended the process with SIGABRT).
#[cfg(target_os = "linux")]
#[test]
fn issue_30_heavy_joins_under_an_address_space_limit_never_abort() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let tmp = tempfile::tempdir().unwrap();
    // 20,000 functions: the cross product's 400M pairs need far more than the limit.
    let db = common::db_with(tmp.path(), &calls(20_000));
    let mut child = Command::new("prlimit")
        .args(["--as=3000000000", "--", BIN, "serve"])
        .arg(&db)
        .args([
            "--stdio",
            "--in-process",
            "--heavy-calls",
            "2",
            "--timeout",
            "10m",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux) runs the server");
    let mut input = child.stdin.take().unwrap();
    let mut send = |m: serde_json::Value| writeln!(input, "{m}").unwrap();
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}),
    );
    send(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    const CALLS: u64 = 20;
    for id in 1..=CALLS {
        send(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "query", "arguments": {"program": CROSS}}}),
        );
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut capped, mut busy) = (0, 0);
    let mut answered = 0;
    while answered < CALLS {
        let line = lines
            .next()
            .expect("the server answers every call (it did not abort)")
            .unwrap();
        let m: serde_json::Value = serde_json::from_str(&line).unwrap();
        let Some(id) = m["id"].as_u64().filter(|&i| i > 0) else {
            continue;
        };
        assert!(id <= CALLS, "{line}");
        answered += 1;
        let text = m["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        if text.contains("passed its memory limit") {
            capped += 1;
        } else if text.contains("heavy calls") || text.contains("busy") {
            busy += 1;
        } else {
            panic!("neither refused nor stopped at the cap: {line}");
        }
    }
    drop(input);
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{status:?}: {err}");
    assert!(capped >= 1, "{capped} stopped at the cap, {busy} refused");
    assert_eq!(capped + busy, CALLS);
}

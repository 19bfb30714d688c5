//! Ingesting while a daemon holds the database: `strata ingest DB ...` hands the batch to
//! the running `strata serve` over `DB/strata.sock`; calls that start after the commit see
//! the new facts. A malformed dump sent that way fails with `FILE:LINE` and stores nothing.
//! After a SIGKILL of the daemon, the stale socket is cleaned up by the next ingest (which
//! opens the database itself), nothing acknowledged is lost, and the daemon starts again.
//! A SCIP index sent that way prints the same documents line, and the bundled `code` module
//! it writes answers from the daemon's next call.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../store/tests/scip/support.rs"]
mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_strata");

fn strata(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run strata")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `strata serve DB --stdio --in-process` (it holds the database itself), spoken to with hand-written JSON-RPC lines.
struct Daemon {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Daemon {
    fn start(db: &Path) -> Daemon {
        let mut child = Command::new(BIN)
            .args(["serve", db.to_str().unwrap(), "--stdio", "--in-process"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start strata serve");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut d = Daemon {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        let init = d.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "daemon-test", "version": "0"}
            }),
        );
        assert!(init.get("result").is_some(), "{init}");
        d.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        // The socket is bound before the server reads its input.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !db.join("strata.sock").exists() {
            assert!(Instant::now() < deadline, "no socket in {}", db.display());
            std::thread::sleep(Duration::from_millis(20));
        }
        d
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let v: Value = serde_json::from_str(&line).expect("stdout is JSON-RPC");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// The text answer of a `query` call.
    fn query(&mut self, program: &str) -> String {
        let r = self.request(
            "tools/call",
            json!({"name": "query", "arguments": {"program": program}}),
        );
        assert_eq!(r["result"]["isError"], json!(false), "{r}");
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Closes its input: a clean shutdown.
    fn stop(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "strata serve exited with {status}");
                return;
            }
            assert!(Instant::now() < deadline, "strata serve did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A database under `dir` made by one ingest of one edge, `app IMPORTS api`.
fn one_edge_db(dir: &std::path::Path) -> std::path::PathBuf {
    let db = dir.join("db");
    let first = dir.join("first.edges.tsv");
    std::fs::write(&first, "app\tIMPORTS\tapi\n").unwrap();
    let out = strata(&["ingest", db.to_str().unwrap(), first.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    db
}

#[test]
fn ingest_goes_through_a_running_daemon_and_survives_its_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let db = one_edge_db(tmp.path());
    let dbs = db.to_str().unwrap();

    let mut daemon = Daemon::start(&db);
    let before = daemon.query(r#"imports(?a, ?b) => ?a"#);
    assert!(!before.contains("web"), "{before}");

    // A batch through the daemon: the same summary line, and the facts are visible.
    let second = tmp.path().join("second.edges.tsv");
    std::fs::write(&second, "web\tIMPORTS\tapi\nweb\tIMPORTS\tlog\n").unwrap();
    let out = strata(&[
        "ingest",
        dbs,
        second.to_str().unwrap(),
        "--label",
        "commit=abc",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with("batch 2: 2 facts read from 1 file, 2 new")
            && stdout.trim_end().ends_with("(via the running server)"),
        "{stdout}"
    );
    let after = daemon.query(r#"imports("web", ?b) => ?b"#);
    assert!(
        after.contains("1. api") && after.contains("2. log"),
        "{after}"
    );

    // Standard input goes through too.
    let mut child = Command::new(BIN)
        .args(["ingest", dbs, "-", "--format", "edges"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"cli\tIMPORTS\tweb\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("batch 3: 1 facts read"));
    assert!(
        daemon
            .query(r#"imports("cli", ?b) => ?b"#)
            .contains("1. web")
    );

    // A malformed dump through the daemon: FILE:LINE, exit 1, nothing stored.
    let bad = tmp.path().join("bad.edges.tsv");
    std::fs::write(&bad, "bad\tIMPORTS\tapi\nonly-one-field\n").unwrap();
    let out = strata(&["ingest", dbs, bad.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("{}:2: ", bad.display())),
        "{stderr}"
    );
    let all = daemon.query(r#"imports(?a, ?b) => ?a"#);
    assert!(!all.contains("bad"), "{all}");

    // kill -9: the socket stays behind, stale.
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    drop(daemon);
    let sock = db.join("strata.sock");
    assert!(sock.exists(), "a killed daemon leaves its socket");

    // The next ingest opens the database itself and removes the stale socket.
    let third = tmp.path().join("third.edges.tsv");
    std::fs::write(&third, "lib\tIMPORTS\tlog\n").unwrap();
    let out = strata(&["ingest", dbs, third.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with("batch 4: ") && !stdout.contains("via the running server"),
        "{stdout}"
    );
    assert!(!sock.exists(), "the stale socket is removed");

    // Everything acknowledged is there.
    let out = strata(&["query", dbs, "imports(?a, ?b) => ?a, ?b", "--no-witnesses"]);
    let rows = text(&out.stdout);
    for (a, b) in [
        ("app", "api"),
        ("web", "api"),
        ("web", "log"),
        ("cli", "web"),
        ("lib", "log"),
    ] {
        assert!(rows.contains(&format!("{a}, {b}")), "{a} {b} in\n{rows}");
    }
    assert!(!rows.contains("bad"), "{rows}");
    let out = strata(&["check", dbs]);
    assert!(out.status.success(), "{}", text(&out.stdout));

    // The daemon starts again over the same database, sees every batch, and removes its
    // socket at a clean shutdown.
    let mut daemon = Daemon::start(&db);
    let all = daemon.query(r#"imports(?a, "log") => ?a"#);
    assert!(all.contains("lib") && all.contains("web"), "{all}");
    daemon.stop();
    assert!(!sock.exists(), "a clean shutdown removes the socket");
}

#[test]
fn in_use_without_a_listening_server_keeps_the_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let dbs = db.to_str().unwrap();
    let dump = tmp.path().join("x.edges.tsv");
    std::fs::write(&dump, "a\tIMPORTS\tb\n").unwrap();
    let out = strata(&["ingest", dbs, dump.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // This process holds the database; a dead socket lies there.
    let store = strata_store::Store::open(&db, strata_store::OpenOptions::default()).unwrap();
    drop(std::os::unix::net::UnixListener::bind(db.join("strata.sock")).unwrap());
    let out = strata(&["ingest", dbs, dump.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("is in use by another process"), "{stderr}");
    drop(store);
}

#[test]
fn a_scip_index_through_the_daemon_brings_the_code_module() {
    use support::{document, documents_field, metadata, occurrence};
    const HELPER: &str = "t npm demo 1 src/`b.ts`/helper().";
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let dbs = db.to_str().unwrap();
    let dump = tmp.path().join("x.edges.tsv");
    std::fs::write(&dump, "a\tIMPORTS\tb\n").unwrap();
    let out = strata(&["ingest", dbs, dump.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut daemon = Daemon::start(&db);

    let mut index = metadata("file:///home/me/demo");
    index.extend(documents_field(&document(
        "src/a.ts",
        &[occurrence(3, HELPER, 0)],
    )));
    index.extend(documents_field(&document(
        "src/b.ts",
        &[occurrence(0, HELPER, 1)],
    )));
    let file = tmp.path().join("index.scip");
    std::fs::write(&file, &index).unwrap();
    let out = strata(&["ingest", dbs, file.to_str().unwrap(), "--replace"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("; 0 documents unchanged, 0 replaced, 2 added, 0 removed; ")
            && stdout.contains("(via the running server)")
            && stdout.contains("wrote the bundled code pack")
            && stdout.contains("the running server answers with the code.* rules"),
        "{stdout}"
    );
    assert!(db.join("modules/code.dl").exists() && db.join("strata.toml").exists());
    // The daemon, started without modules, answers with the code module now.
    let deps = daemon.query(r#"code.depends_on("demo/src/a.ts", ?d) => ?d"#);
    assert!(deps.contains("demo/src/b.ts"), "{deps}");

    // Again, unchanged: the same documents line as a local ingest prints.
    let out = strata(&["ingest", dbs, file.to_str().unwrap(), "--replace"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("; 2 documents unchanged, 0 replaced, 0 added, 0 removed; ")
            && stdout.contains("(via the running server)")
            && !stdout.contains("code pack"),
        "{stdout}"
    );
    daemon.stop();
}

#[test]
fn a_declared_index_goes_through_a_running_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let db = one_edge_db(tmp.path());
    let dbs = db.to_str().unwrap();
    let mut daemon = Daemon::start(&db);
    let calls = tmp.path().join("calls.edges.tsv");
    std::fs::write(&calls, "main\tCALLS\tparse\nparse\tCALLS\tlex\n").unwrap();
    let calls = calls.to_str().unwrap();
    let out = strata(&["ingest", dbs, calls, "--index", "calls=src"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("(via the running server)"), "{stdout}");
    // The server stored it as declared.
    let callers = daemon.query(r#"calls(?a, "lex") => ?a"#);
    assert!(callers.contains("1. parse"), "{callers}");
    // `strata index` goes through it too: the server builds `dst`'s postings, then drops
    // them.
    let out = strata(&["index", dbs, "calls=src,dst"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("(via the running server)\nbuilt the index of calls.dst: 2 values"),
        "{stdout}"
    );
    let callers = daemon.query(r#"calls(?a, "lex") => ?a"#);
    assert!(callers.contains("1. parse"), "{callers}");
    let out = strata(&["index", dbs, "calls=src"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("dropped the index of calls.dst"),
        "{stdout}"
    );
    let out = strata(&["index", dbs, "calls=dst"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("its first column, \"src\", is always indexed"),
        "{}",
        text(&out.stderr)
    );
    // It answers by its unindexed column.
    let callers = daemon.query(r#"calls(?a, "lex") => ?a"#);
    assert!(callers.contains("1. parse"), "{callers}");
    daemon.stop();
}

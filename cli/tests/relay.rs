//! One server per database, any number of clients (issue 28): `strata serve DB --stdio`
//! relays to the process serving the database on `DB/strata-mcp.sock`, starting a daemon
//! (`--daemon`) when none does. Two relays at once share one daemon; `strata ingest` goes
//! through it; a relay whose daemon is killed answers the call in flight and the next ones
//! with an error naming the loss (not a cancelled call), and the next relay starts a new
//! daemon; an idle daemon exits and releases the database; an
//! HTTP server is reached the same way.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::BIN;

/// `strata serve DB --stdio ARGS`, spoken to with JSON-RPC lines; its standard error is
/// kept to learn the server's pid.
struct Relay {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    errors: Receiver<String>,
    next_id: u64,
}

impl Relay {
    fn start(db: &Path, args: &[&str]) -> Relay {
        let mut child = Command::new(BIN)
            .arg("serve")
            .arg(db)
            .arg("--stdio")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start strata serve");
        let stdin = child.stdin.take();
        let (tx, lines) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (tx, errors) = channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Relay {
            child,
            stdin,
            lines,
            errors,
            next_id: 0,
        }
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
        let deadline = Instant::now() + Duration::from_secs(60);
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

    fn initialize(&mut self) -> Value {
        let init = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "relay-test", "version": "0"}
            }),
        );
        assert!(init.get("result").is_some(), "{init}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        init
    }

    fn tools(&mut self) -> Vec<String> {
        let r = self.request("tools/list", json!({}));
        r["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{r}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn call_query(&mut self, program: &str) -> Value {
        self.request(
            "tools/call",
            json!({"name": "query", "arguments": {"program": program}}),
        )
    }

    fn query(&mut self, program: &str) -> String {
        let r = self.call_query(program);
        assert_eq!(r["result"]["isError"], json!(false), "{r}");
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The pid of the server it relays to, from its "relaying to" line.
    fn server_pid(&self) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.errors.recv_timeout(left).expect("a relaying line");
            if let Some(rest) = line.split("(pid ").nth(1) {
                return rest.trim_end_matches(')').parse().unwrap();
            }
        }
    }

    /// Closes its input: it exits, successfully.
    fn stop(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "the relay exited with {status}");
                return;
            }
            assert!(Instant::now() < deadline, "the relay did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn alive(pid: u32) -> bool {
    // A zombie (a killed daemon whose parent relay still runs) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

fn signal(pid: u32, name: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

fn kill(pid: u32) {
    signal(pid, "KILL");
}

/// Waits (generously) until `done` holds.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether no process holds the database: `strata check` needs it alone (`stats` would be
/// answered by a server holding it).
fn released(db: &Path) -> bool {
    Command::new(BIN)
        .args(["check", db.to_str().unwrap()])
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn issue28_two_stdio_servers_on_one_database_share_a_daemon() {
    let tmp = tempfile::tempdir().unwrap();
    let db = common::db_with(tmp.path(), "app\tIMPORTS\tapi\n");
    let mut a = Relay::start(&db, &[]);
    let mut b = Relay::start(&db, &[]);
    a.initialize();
    b.initialize();
    let pid = a.server_pid();
    assert_eq!(pid, b.server_pid(), "both relay to one server");
    assert_ne!(pid, a.child.id());
    for r in [&mut a, &mut b] {
        assert!(r.tools().contains(&"query".to_owned()));
        let rows = r.query("imports(?a, ?b) => ?b");
        assert!(rows.contains("1. api"), "{rows}");
    }
    let mode = std::fs::metadata(db.join("strata-mcp.sock")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );

    // `strata ingest` goes through the daemon, and both sessions see the batch.
    let dump = tmp.path().join("more.edges.tsv");
    std::fs::write(&dump, "web\tIMPORTS\tlog\n").unwrap();
    let out = Command::new(BIN)
        .arg("ingest")
        .arg(&db)
        .arg(&dump)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("via the running server"), "{stdout}");
    for r in [&mut a, &mut b] {
        let rows = r.query(r#"imports("web", ?b) => ?b"#);
        assert!(rows.contains("1. log"), "{rows}");
    }
    // A server of its own cannot start meanwhile, and says which process holds the database.
    let out = Command::new(BIN)
        .arg("serve")
        .arg(&db)
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("is in use by another process")
            && stderr.contains(&format!("server of this database (pid {pid})")),
        "{stderr}"
    );
    a.stop();
    // The other session goes on.
    assert!(b.query("imports(?a, ?b) => ?a").contains("web"));
    b.stop();
    assert!(alive(pid), "the daemon waits for its idle time");
    // A database directory removed under the daemon ends it.
    drop(tmp);
    wait_for("the daemon to exit", || !alive(pid));
}

#[test]
fn issue28_a_killed_daemon_is_answered_as_gone_and_restarted() {
    let tmp = tempfile::tempdir().unwrap();
    let db = common::db_with(tmp.path(), "app\tIMPORTS\tapi\n");
    let mut a = Relay::start(&db, &[]);
    a.initialize();
    let pid = a.server_pid();
    assert!(a.query("imports(?a, ?b) => ?b").contains("api"));
    // Two calls in flight (the daemon stopped, so neither is answered), one cancelled; then
    // the daemon is killed.
    signal(pid, "STOP");
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "query", "arguments": {"program": "imports(?a, ?b) => ?b"}}})
    };
    a.send(&call(100));
    a.send(&call(101));
    a.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 101, "reason": "test"}}),
    );
    std::thread::sleep(Duration::from_millis(300));
    kill(pid);
    wait_for("the daemon to die", || !alive(pid));
    // The call in flight is answered with a tool error naming the loss; the cancelled one
    // is not answered.
    let line = a
        .lines
        .recv_timeout(Duration::from_secs(30))
        .expect("an answer to the call in flight");
    let r: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(r["id"], json!(100), "{r}");
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("went away"), "{text}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        a.lines.try_recv().is_err(),
        "the cancelled call is not answered"
    );

    // The next call is answered the same way; other requests with a JSON-RPC error.
    let r = a.call_query("imports(?a, ?b) => ?b");
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("went away"), "{text}");
    let r = a.request("tools/list", json!({}));
    let message = r["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(message.contains("went away"), "{message}");

    // A new client starts a new daemon.
    let mut b = Relay::start(&db, &[]);
    b.initialize();
    let restarted = b.server_pid();
    assert_ne!(restarted, pid);
    assert!(b.query("imports(?a, ?b) => ?b").contains("api"));
    a.stop();
    b.stop();
    kill(restarted);
}

#[test]
fn issue28_an_idle_daemon_exits_and_releases_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let db = common::db_with(tmp.path(), "app\tIMPORTS\tapi\n");
    let mut a = Relay::start(&db, &["--idle-exit", "1s"]);
    a.initialize();
    let pid = a.server_pid();
    assert!(a.query("imports(?a, ?b) => ?b").contains("api"));
    // While it runs, the database is held.
    assert!(!released(&db));
    a.stop();
    wait_for("the daemon to exit", || !alive(pid));
    assert!(released(&db), "the database is free again");
    assert!(!db.join("strata-mcp.sock").exists());
    assert!(!db.join("strata.sock").exists());
    // And a new relay starts it again.
    let mut b = Relay::start(&db, &["--idle-exit", "1s"]);
    b.initialize();
    assert_ne!(b.server_pid(), pid);
    assert!(b.query("imports(?a, ?b) => ?b").contains("api"));
    b.stop();
}

#[test]
fn issue28_a_relay_reaches_an_http_server() {
    let tmp = tempfile::tempdir().unwrap();
    let db = common::db_with(tmp.path(), "app\tIMPORTS\tapi\n");
    let mut http = Command::new(BIN)
        .arg("serve")
        .arg(&db)
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the MCP socket", || db.join("strata-mcp.sock").exists());
    let mut a = Relay::start(&db, &[]);
    a.initialize();
    assert_eq!(a.server_pid(), http.id());
    assert!(a.query("imports(?a, ?b) => ?b").contains("api"));
    a.stop();
    let _ = http.kill();
    let _ = http.wait();
}

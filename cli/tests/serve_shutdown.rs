//! `strata serve` stops cleanly, and releases the database, on SIGTERM, SIGINT and the end
//! of standard input, even when `DB/strata.sock` was removed while it ran (issue 20).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::BIN;

fn make_db(dir: &Path) -> std::path::PathBuf {
    common::db_with(dir, "app\tIMPORTS\tapi\n")
}

/// Starts `strata serve DB ARGS`, waits for its socket, and removes the socket file.
fn serve_without_socket(db: &Path, args: &[&str]) -> Child {
    let child = Command::new(BIN)
        .arg("serve")
        .arg(db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sock = db.join("strata.sock");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::remove_file(&sock).unwrap();
    child
}

/// Waits up to 10 s for `child` to exit, then checks the database opens again.
fn exits_and_releases(mut child: Child, db: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("strata serve did not exit after {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{what}: {status}");
    let out = Command::new(BIN)
        .args(["stats", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the database is still locked after {what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn signal(child: &Child, name: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn issue20_serve_exits_on_sigterm_without_its_socket() {
    let tmp = tempfile::tempdir().unwrap();
    let db = make_db(tmp.path());
    let child = serve_without_socket(&db, &["--stdio", "--in-process"]);
    signal(&child, "TERM");
    exits_and_releases(child, &db, "SIGTERM");
}

#[test]
fn issue20_serve_http_exits_on_sigint_without_its_socket() {
    let tmp = tempfile::tempdir().unwrap();
    let db = make_db(tmp.path());
    let child = serve_without_socket(&db, &["--http", "127.0.0.1:0"]);
    signal(&child, "INT");
    exits_and_releases(child, &db, "SIGINT");
}

#[test]
fn issue20_serve_stdio_exits_at_end_of_input_without_its_socket() {
    let tmp = tempfile::tempdir().unwrap();
    let db = make_db(tmp.path());
    let mut child = serve_without_socket(&db, &["--stdio", "--in-process"]);
    drop(child.stdin.take());
    exits_and_releases(child, &db, "the end of input");
}

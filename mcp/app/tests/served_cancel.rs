//! Issue 28: a command-line read that its client abandons (Ctrl-C on `strata query` while a
//! server holds the database) stops its evaluation, and the server's `after_cancel` hook
//! (`strata serve` passes the function that gives freed memory back to the system) runs
//! once the evaluation has dropped what it held; a read answered in full does not run it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use strata_app::ingest::{DumpFiles, dump_specs, ingest};
use strata_app::ingest_socket::{DatabaseId, IngestListener, ListenerOptions, socket_path};
use strata_app::pack::Pack;
use strata_app::read::{Limits, Read, What};
use strata_app::{App, Options};
use strata_store::{BatchOptions, OpenOptions, Store};

/// How many times the hook ran.
static AFTER_CANCEL: AtomicUsize = AtomicUsize::new(0);

fn after_cancel() {
    AFTER_CANCEL.fetch_add(1, Ordering::SeqCst);
}

/// A database of one chain of `n` `imports` edges, and the generated call graph of
/// [`FUNCTIONS`] functions (`calls`), whose closure the test abandons.
fn chain(dir: &Path, n: usize) {
    let file = dir.join("chain.edges.tsv");
    let text: String = (0..n)
        .map(|i| format!("n{i}\tIMPORTS\tn{}\n", i + 1))
        .collect();
    std::fs::write(&file, text).unwrap();
    let calls = dir.join("calls.edges.tsv");
    std::fs::write(&calls, strata_fixtures::runaway::calls_edges(FUNCTIONS)).unwrap();
    let specs = dump_specs(&DumpFiles {
        files: vec![file, calls],
        ..DumpFiles::default()
    })
    .unwrap();
    ingest(dir, &specs, BatchOptions::default(), |_, _| {}, || {}).unwrap();
}

/// A read's first line, as `strata query` sends it.
fn read_line(dir: &Path, program: &str) -> Vec<u8> {
    let read = Read {
        what: What::Query {
            program: program.to_owned(),
            binds: vec![],
        },
        json: true,
        limits: Limits {
            limit: 10,
            timeout: Duration::from_secs(120),
            witnesses: true,
            ..Limits::default()
        },
    };
    let header = serde_json::json!({"database": DatabaseId::of(dir).unwrap(), "read": read});
    let mut line = serde_json::to_vec(&header).unwrap();
    line.push(b'\n');
    line
}

/// A quick read over the socket, answered in full: the chain's 3,000 edges.
fn count_answered(dir: &Path) {
    let mut conn = UnixStream::connect(socket_path(dir)).unwrap();
    conn.write_all(&read_line(dir, "imports(?a, ?b) => count(?a)"))
        .unwrap();
    let mut answer = String::new();
    BufReader::new(&conn).read_line(&mut answer).unwrap();
    assert!(answer.contains("3000"), "{answer}");
}

/// The functions of the call graph [`CLOSURE`] runs over.
const FUNCTIONS: u32 = 5_000;

/// The closure of the call graph without its cycles' ends: 25M pairs in rounds of joins,
/// seconds of work in a release build too. (The closure of the 3,000-link chain, 4.5M
/// pairs, which this test abandoned before, was over within the 300 ms it waits in a
/// release build, and the hook never ran.)
const CLOSURE: &str = "reach(?a, ?b) :- calls(?a, ?b);\n\
                       reach(?a, ?c) :- reach(?a, ?b), calls(?b, ?c), ?c != ?a;\n\
                       reach(?a, ?b) => count(?a)";

#[test]
fn issue_28_a_cancelled_cli_read_gives_its_memory_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    chain(dir, 3000);
    let store = Store::open(dir, OpenOptions::default()).unwrap();
    let app = App::new(store, Pack::load(dir).unwrap(), Options::default()).unwrap();
    let options = ListenerOptions {
        after_cancel: Some(after_cancel),
        ..ListenerOptions::default()
    };
    let _listener = IngestListener::bind_serving(app, options).unwrap();

    // A quick read answered in full: the hook does not run.
    count_answered(dir);
    assert_eq!(AFTER_CANCEL.load(Ordering::SeqCst), 0);

    // The closure of the call graph, abandoned.
    let mut conn = UnixStream::connect(socket_path(dir)).unwrap();
    conn.write_all(&read_line(dir, CLOSURE)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(conn);
    let waited = Instant::now();
    while AFTER_CANCEL.load(Ordering::SeqCst) == 0 && waited.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        AFTER_CANCEL.load(Ordering::SeqCst),
        1,
        "the abandoned read never ran its hook"
    );

    // The server goes on answering.
    count_answered(dir);
    assert_eq!(AFTER_CANCEL.load(Ordering::SeqCst), 1);
}

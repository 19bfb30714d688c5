//! Issue 31: a process killed (SIGKILL) while it commits a batch and reclaims the space the
//! batches left unused leaves a database that opens, passes `check`, and holds its
//! acknowledged batches and the interrupted one whole or not at all; a retry with the same
//! batch id lands it once.
//!
//! The test runs itself as the child (`STRATA_RECLAIM_CHILD` set): it opens the database
//! reclaiming after every commit, commits one piece of the generated graph with a batch id,
//! and prints `acked`. Half the kills are timed between 30% and 110% of the last full run,
//! the other half up to 3 ms after the base file first grows shorter (the reclaim's
//! compaction cutting it); where they land depends on timing, so each iteration's outcome
//! is printed (`--nocapture`). `STRATA_RECLAIM_KILLS=N` runs N kills.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{everything, open_reclaiming as open, spec};
use strata_fixtures::codegraph::{self, Config};
use strata_store::dump::Format;
use strata_store::{BatchOptions, OpenOptions, Reclaim, Store};

const CHILD: &str = "STRATA_RECLAIM_CHILD";

/// The graph's edge dump in `n` pieces.
fn pieces(n: usize) -> Vec<String> {
    let cfg = Config::with_edges(40_000).units(true);
    let mut e = Vec::new();
    codegraph::write_edges(&cfg, &mut e).unwrap();
    let e = String::from_utf8(e).unwrap();
    let lines: Vec<&str> = e.lines().collect();
    lines
        .chunks(lines.len().div_ceil(n))
        .map(|c| c.join("\n") + "\n")
        .collect()
}

/// Reclaiming after every commit.
const EAGER: Option<Reclaim> = Some(Reclaim {
    share: 0.0,
    min_bytes: 0,
    background: false,
});

/// Commits `dump` as batch `id`; whether it was committed before.
fn commit(store: &Store, id: &str, dump: &str) -> bool {
    let mut batch = store
        .batch(BatchOptions {
            batch_id: Some(id.to_owned()),
            ..BatchOptions::default()
        })
        .unwrap();
    batch
        .read_dump(dump.as_bytes(), &spec("code.edges.tsv", Format::Edges))
        .unwrap();
    batch.commit().unwrap().already_committed
}

/// The child: commits piece `STRATA_RECLAIM_PIECE` into the database in `STRATA_RECLAIM_CHILD`.
#[test]
fn child() {
    let Ok(dir) = std::env::var(CHILD) else {
        return;
    };
    let i: usize = std::env::var("STRATA_RECLAIM_PIECE")
        .unwrap()
        .parse()
        .unwrap();
    let all = pieces(PIECES);
    let store = open(Path::new(&dir), EAGER);
    commit(&store, &format!("b{i}"), &all[i]);
    drop(store);
    println!("acked");
}

const PIECES: usize = 6;

/// When to kill the child.
#[derive(Clone, Copy, Debug)]
enum Kill {
    Never,
    /// This long after its start.
    After(Duration),
    /// This long after the base file first grows shorter: the reclaim's compaction cuts it.
    AfterShrink(Duration),
}

/// Runs the child on piece `i`, SIGKILLing it as `kill` says: whether it acknowledged the
/// batch, and how long it ran.
fn run_child(dir: &Path, i: usize, kill: Kill) -> (bool, Duration) {
    let base = dir.join("strata.redb");
    let len = || std::fs::metadata(&base).map_or(0, |m| m.len());
    let start = Instant::now();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD, dir)
        .env("STRATA_RECLAIM_PIECE", i.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut deadline = match kill {
        Kill::Never => None,
        Kill::After(d) => Some(start + d),
        Kill::AfterShrink(_) => None,
    };
    let mut longest = len();
    while !matches!(kill, Kill::Never) && child.try_wait().unwrap().is_none() {
        let now = len();
        if let (Kill::AfterShrink(extra), None) = (kill, deadline)
            && now < longest
        {
            deadline = Some(Instant::now() + extra);
        }
        longest = longest.max(now);
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    let out = child.wait_with_output().unwrap();
    let elapsed = start.elapsed();
    let acked = String::from_utf8_lossy(&out.stdout).contains("acked");
    assert!(
        acked || out.status.signal() == Some(9),
        "the child failed on its own: {:?}",
        out.status
    );
    (acked, elapsed)
}

#[test]
fn issue31_a_kill_while_reclaiming_keeps_exactly_the_acknowledged_batches() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    let kills: usize = std::env::var("STRATA_RECLAIM_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let tmp = tempfile::tempdir().unwrap();
    let all = pieces(PIECES);
    // What the database holds after each piece.
    let golden: Vec<Vec<String>> = {
        let store = open(&tmp.path().join("golden"), None);
        let mut states = vec![everything(&store)];
        for (i, p) in all.iter().enumerate() {
            commit(&store, &format!("b{i}"), p);
            states.push(everything(&store));
        }
        states
    };
    let dir = tmp.path().join("db");
    let (acked, mut last) = run_child(&dir, 0, Kill::Never);
    assert!(acked);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut landed_unacked = 0;
    for k in 0..kills {
        let i = 1 + k % (PIECES - 1);
        if k > 0 && i == 1 {
            // Start again from the first piece.
            std::fs::remove_dir_all(&dir).unwrap();
            assert!(run_child(&dir, 0, Kill::Never).0);
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Every other kill is timed by the file's first cut, the rest by the clock.
        let kill = if k % 2 == 1 {
            Kill::AfterShrink(Duration::from_micros(seed % 3000))
        } else {
            Kill::After(last.mul_f64(0.3 + 0.8 * (seed % 1000) as f64 / 1000.0))
        };
        let (acked, _) = run_child(&dir, i, kill);
        let store = Store::open(&dir, OpenOptions::default()).unwrap();
        let report = store.check().unwrap();
        assert!(report.ok(), "kill {k}: check after the kill:\n{report}");
        let now = everything(&store);
        let landed = if now == golden[i + 1] {
            true
        } else {
            assert!(!acked, "kill {k}: an acknowledged batch is missing");
            assert!(
                now == golden[i],
                "kill {k}: the database holds neither state"
            );
            false
        };
        if landed && !acked {
            landed_unacked += 1;
        }
        eprintln!(
            "kill {k}: piece {i}, {kill:?}: {}",
            match (acked, landed) {
                (true, _) => "acknowledged",
                (false, true) => "landed, killed after its commit (reclaiming)",
                (false, false) => "not landed",
            }
        );
        drop(store);
        // The retry lands it exactly once.
        let (acked, elapsed) = run_child(&dir, i, Kill::Never);
        assert!(acked);
        if !landed {
            // A full run (a retry of a landed batch is a no-op).
            last = elapsed;
        }
        let store = Store::open(&dir, OpenOptions::default()).unwrap();
        assert_eq!(
            everything(&store),
            golden[i + 1],
            "kill {k}: after the retry"
        );
    }
    eprintln!("{landed_unacked} of {kills} kills landed after the commit, while reclaiming");
    assert!(landed_unacked > 0, "no kill landed while reclaiming");
}

//! A full disk: the batch that does not fit fails with a clear error naming the database, and
//! everything stored before survives. Runs on a small tmpfs, which needs root (CI runs as
//! root); elsewhere it says it was skipped, except under CI (`CI` set), where a test that did
//! not run fails rather than passing silently.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn strata(args: &[&dyn AsRef<std::ffi::OsStr>]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    for a in args {
        cmd.arg(a);
    }
    cmd.output().unwrap()
}

fn write_edges(path: &Path, from: u64, n: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in from..from + n {
        // Long ids fill the disk with few lines; each starts differently, so that the
        // dictionary's front coding cannot share them away.
        let pad = format!("{:016x}", (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)).repeat(12);
        writeln!(
            f,
            "file:{pad}/src/module_{i}/lib.rs\tIMPORTS\tfile:{pad}/src/module_{}/mod.rs",
            i * 7
        )
        .unwrap();
    }
}

/// A tmpfs of `size` mounted under `root`, unmounted when dropped; `None` (said on stderr)
/// where none can be mounted, which fails under CI.
fn tmpfs(root: &Path, size: &str) -> Option<Mount> {
    let mnt = root.join("small");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&mnt)
        .output();
    if !matches!(&mounted, Ok(o) if o.status.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the disk-full test as root, but a tmpfs cannot be mounted: {mounted:?}"
        );
        eprintln!(
            "SKIPPED: cannot mount a tmpfs here (not root?), the disk-full test did not run: {mounted:?}"
        );
        return None;
    }
    Some(Mount(mnt))
}

#[test]
fn a_full_disk_fails_the_batch_and_keeps_what_was_stored() {
    let root = tempfile::tempdir().unwrap();
    let Some(guard) = tmpfs(root.path(), "6m") else {
        return;
    };
    let mnt = guard.0.clone();
    let db = mnt.join("db");
    let small = root.path().join("small.edges.tsv");
    let big = root.path().join("big.edges.tsv");
    write_edges(&small, 0, 1_000);
    write_edges(&big, 1_000, 40_000);

    ingest_ok(&db, &small);

    let out = strata(&[&"ingest", &db, &big]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the big batch should not fit: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains(&format!("{}: writing batch 2 failed", db.display())),
        "{stderr}"
    );
    assert!(stderr.to_lowercase().contains("no space left"), "{stderr}");
    eprintln!("the full disk said: {stderr}");

    // Copy the files off the full disk (opening may need room to write), then everything of
    // batch 1 is there and nothing of batch 2.
    let copy = root.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(&db).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    let out = strata(&[&"check", &copy]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("ok: 1 relations, 1000 facts"),
        "{stdout}"
    );
    let out = strata(&[&"stats", &copy]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("batch 1\n"), "{stdout}");
}

/// `strata ingest DB FILE`, which must succeed.
fn ingest_ok(db: &Path, file: &Path) {
    let out = strata(&[&"ingest", &db, &file]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `strata serve DB --stdio --in-process`: the server holding the database, which readers
/// and ingests reach over `DB/strata.sock`. Killed when dropped.
struct Server(std::process::Child);

impl Server {
    fn start(db: &Path) -> Server {
        let child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["serve", db.to_str().unwrap(), "--stdio", "--in-process"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while !db.join("strata.sock").exists() {
            assert!(start.elapsed().as_secs() < 30, "the server did not start");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Server(child)
    }

    /// Whether the same process still runs.
    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// How many `imports` facts a served `strata query` answers, or its stderr.
fn served_count(db: &Path) -> Result<u64, String> {
    let out = strata(&[&"query", &db, &"imports(?a, ?b) => count(?a)"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)));
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("1. ").and_then(|n| n.trim().parse().ok()))
        .ok_or_else(|| format!("no count in {stdout}"))
}

/// Fills the filesystem holding `dir` to the last byte with a file, returned to be removed.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![7u8; 64 << 10];
    while f.write_all(&block).is_ok() {}
    let mut byte = [7u8; 1];
    while f.write_all(&byte).is_ok() {
        byte[0] = 7;
    }
    path
}

#[test]
fn issue_30_a_full_disk_under_a_running_server_needs_no_restart() {
    let root = tempfile::tempdir().unwrap();
    let Some(guard) = tmpfs(root.path(), "20m") else {
        return;
    };
    let db = guard.0.join("db");
    let first = root.path().join("first.edges.tsv");
    let big = root.path().join("big.edges.tsv");
    write_edges(&first, 0, 1_000);
    write_edges(&big, 1_000, 40_000);
    ingest_ok(&db, &first);
    let mut server = Server::start(&db);
    // The batch that does not fit fails, through the server.
    let out = strata(&[&"ingest", &db, &big, &"--batch-id", &"big"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the big batch should not fit: {stderr}"
    );
    // The call that met the full disk says so; a later call of the same batch may meet
    // redb's latch first, which names the full disk too.
    let said = stderr.to_lowercase();
    assert!(
        said.contains("no space left") || said.contains("a full disk"),
        "{stderr}"
    );
    assert!(!said.contains("previous i/o error"), "{stderr}");
    // The server answers at once, from the last committed batch...
    assert_eq!(served_count(&db), Ok(1_000));
    // ... and takes the next batch that fits, with no restart.
    let small = root.path().join("small.edges.tsv");
    write_edges(&small, 50_000, 100);
    ingest_ok(&db, &small);
    assert_eq!(served_count(&db), Ok(1_100));
    assert!(server.alive(), "the server exited");
}

/// The soak of issue 30 (set `STRATA_SOAK=1`; about 20 seconds): a filesystem filled to the
/// last byte and freed again 50 times under a running server, with 4 clients querying all
/// the while and a batch sent at each fill and again after each free. Zero restarts, zero
/// acknowledged batches lost, and every answer a count of whole batches.
#[test]
fn issue_30_soak_fill_and_free_a_small_disk_50_times_under_a_server() {
    if std::env::var_os("STRATA_SOAK").is_none() {
        eprintln!("skipped: set STRATA_SOAK=1 to run the fill-and-free soak");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let Some(guard) = tmpfs(root.path(), "20m") else {
        return;
    };
    let db = guard.0.join("db");
    const BATCH: u64 = 200;
    let first = root.path().join("first.edges.tsv");
    write_edges(&first, 0, BATCH);
    ingest_ok(&db, &first);
    let mut server = Server::start(&db);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut answers, mut errors) = (0u64, Vec::new());
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    match served_count(&db) {
                        Ok(n) => {
                            assert_eq!(n % BATCH, 0, "an answer saw part of a batch: {n}");
                            answers += 1;
                        }
                        Err(e) => errors.push(e),
                    }
                }
                (answers, errors)
            })
        })
        .collect();
    let (mut acknowledged, mut failed_full, mut landed_full) = (1u64, 0u64, 0u64);
    for cycle in 0..50u64 {
        let batch = root.path().join(format!("b{cycle}.edges.tsv"));
        write_edges(&batch, (cycle + 1) * 1_000_000, BATCH);
        let id = format!("b{cycle}");
        let filler = fill(&guard.0);
        let out = strata(&[&"ingest", &db, &batch, &"--batch-id", &id]);
        if out.status.success() {
            landed_full += 1;
        } else {
            failed_full += 1;
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!stderr.contains("panicked"), "cycle {cycle}: {stderr}");
        }
        std::fs::remove_file(&filler).unwrap();
        let out = strata(&[&"ingest", &db, &batch, &"--batch-id", &id]);
        assert!(
            out.status.success(),
            "cycle {cycle}: the batch after freeing space: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        acknowledged += 1;
        assert_eq!(served_count(&db), Ok(acknowledged * BATCH), "cycle {cycle}");
        assert!(server.alive(), "cycle {cycle}: the server exited");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (mut answers, mut errors) = (0, Vec::new());
    for c in clients {
        let (a, e) = c.join().unwrap();
        answers += a;
        errors.extend(e);
    }
    eprintln!(
        "soak: 50 fills, {failed_full} batches refused on a full disk, {landed_full} fitted; \
         {acknowledged} batches acknowledged, all kept; {answers} answers, {} errors",
        errors.len()
    );
    for e in errors.iter().take(5) {
        eprintln!("  error: {e}");
    }
    assert!(server.alive());
}

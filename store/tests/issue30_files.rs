//! Issue 30: every file the store reads from a database directory is opened as what it must
//! be. A FIFO, a directory or a device in place of the base file, a tier file or a stamp is
//! refused (or, for a stamp, ignored) at once, never a hang; a format version of 0 is refused;
//! a database path that is a regular file says so.

#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use std::path::Path;

use strata_store::{OpenOptions, Store, layout};

mod common;

fn mkfifo(path: &Path) -> bool {
    std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn issue_30_a_fifo_stamp_is_no_stamp_and_never_hangs() {
    let dir = tempfile::tempdir().unwrap();
    common::build_small_as(dir.path(), layout::FORMAT_VERSION);
    let stamp = dir.path().join("strata.redb.stamp");
    let _ = std::fs::remove_file(&stamp);
    if !mkfifo(&stamp) {
        eprintln!("mkfifo is not available: skipped");
        return;
    }
    // Opened (verified, as the stamp says nothing) and closed, which stamps it anew.
    let store = Store::open(dir.path(), OpenOptions::default()).unwrap();
    assert!(store.check().unwrap().ok());
    drop(store);
    assert!(std::fs::metadata(&stamp).unwrap().is_file());
    // A FIFO at the stamp's temporary name does not block the close either.
    let tmp = dir.path().join("strata.redb.stamp.tmp");
    assert!(mkfifo(&tmp));
    drop(Store::open(dir.path(), OpenOptions::default()).unwrap());
    assert!(std::fs::metadata(&stamp).unwrap().is_file());
}

#[test]
fn issue_30_a_fifo_or_directory_as_a_database_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join(layout::BASE_FILE);
    if !mkfifo(&base) {
        eprintln!("mkfifo is not available: skipped");
        return;
    }
    let e = Store::open(dir.path(), OpenOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("strata.redb is a FIFO, not a regular file"),
        "{e}"
    );
    std::fs::remove_file(&base).unwrap();
    std::fs::create_dir(&base).unwrap();
    let e = Store::open(dir.path(), OpenOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("strata.redb is a directory"), "{e}");
}

#[test]
fn issue_30_a_database_path_that_is_a_file_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("db");
    std::fs::write(&file, "x").unwrap();
    for create in [false, true] {
        let e = Store::open(
            &file,
            OpenOptions {
                create,
                ..OpenOptions::default()
            },
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.ends_with(
                "db is a file, not a database directory; name the directory that holds strata.redb"
            ),
            "{e}"
        );
    }
}

#[test]
fn issue_30_format_version_0_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    common::build_small_as(dir.path(), layout::FORMAT_VERSION);
    let base = dir.path().join(layout::BASE_FILE);
    {
        let db = redb::Database::open(&base).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(layout::META)
            .unwrap()
            .insert("format_version", 0u32.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    let e = Store::open(dir.path(), OpenOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("has format version 0, which no strata writes (this one reads versions 1 to 6)"),
        "{e}"
    );
}

/// Commits `x.edges.tsv` into `tier`; answers the error's chain, if any.
fn ingest_tier(store: &Store, tier: &str) -> Result<(), String> {
    let mut batch = store
        .batch(strata_store::BatchOptions {
            tier: tier.to_owned(),
            ..Default::default()
        })
        .map_err(|e| common::chain(&e))?;
    batch
        .read_dump(
            &b"a\thotedge\tb\n"[..],
            &common::spec("x.edges.tsv", strata_store::dump::Format::Edges),
        )
        .map_err(|e| common::chain(&e))?;
    batch.commit().map(drop).map_err(|e| common::chain(&e))
}

#[test]
fn issue_30_another_databases_file_is_never_adopted_as_a_tier() {
    let other = tempfile::tempdir().unwrap();
    let mine = tempfile::tempdir().unwrap();
    common::build_small_as(other.path(), layout::FORMAT_VERSION);
    common::build_small_as(mine.path(), layout::FORMAT_VERSION);
    {
        let o = Store::open(other.path(), OpenOptions::default()).unwrap();
        ingest_tier(&o, "hot").unwrap();
    }
    // Another database's base file, then one of its tier files, under a tier's name.
    for (from, tier, why) in [
        ("strata.redb", "zzz", "it is a database's base file"),
        ("tier-hot.redb", "hot", "it belongs to another database"),
    ] {
        let target = mine.path().join(format!("tier-{tier}.redb"));
        std::fs::copy(other.path().join(from), &target).unwrap();
        let store = Store::open(mine.path(), OpenOptions::default()).unwrap();
        let e = ingest_tier(&store, tier).unwrap_err();
        assert!(
            e.contains(&format!(
                "tier-{tier}.redb: not a tier file of this database: {why}"
            )),
            "{e}"
        );
        drop(store);
        std::fs::remove_file(&target).unwrap();
    }
    // Its own tier files open as ever, and keep opening after a reopen.
    let store = Store::open(mine.path(), OpenOptions::default()).unwrap();
    ingest_tier(&store, "hot").unwrap();
    drop(store);
    let store = Store::open(mine.path(), OpenOptions::default()).unwrap();
    ingest_tier(&store, "hot").unwrap();
    assert!(store.check().unwrap().ok());
}

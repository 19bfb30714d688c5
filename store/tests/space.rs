//! Space on disk: `Store::space` accounts for a file's bytes by table, and `compact` gives
//! back what a retraction freed without changing an answer.

#![allow(clippy::unwrap_used)]

use std::ops::ControlFlow;
use std::path::Path;

use strata_eval::FactSource;
use strata_store::dump::Format;
use strata_store::{BatchOptions, CompactError, OpenError, OpenOptions, Store};

mod common;

use common::read_into;

/// Every row of `rel`, as values, sorted.
fn rows(store: &Store, rel: &str) -> Vec<String> {
    let snap = store.snapshot().unwrap();
    let mut out = Vec::new();
    snap.scan(rel, &mut |r| {
        out.push(format!(
            "{:?}",
            r.iter()
                .map(|t| snap.value(*t).unwrap())
                .collect::<Vec<_>>()
        ));
        ControlFlow::Continue(())
    })
    .unwrap();
    out.sort();
    out
}

/// Commits `edges` (an edge dump) into the base file as one batch.
fn commit_edges(store: &Store, edges: &str) {
    read_into(
        store,
        "default",
        "e.edges.tsv",
        Format::Edges,
        edges.as_bytes(),
    )
    .commit()
    .unwrap();
}

/// A new database in `dir` that never reclaims space by itself (these tests are of
/// `compact`).
fn kept(dir: &Path) -> Store {
    Store::open(
        dir,
        OpenOptions {
            create: true,
            reclaim: None,
            ..OpenOptions::default()
        },
    )
    .unwrap()
}

fn size(dir: &Path, file: &str) -> u64 {
    std::fs::metadata(dir.join(file)).unwrap().len()
}

#[test]
fn issue18_space_accounts_for_every_table_and_bytes_per_fact() {
    let tmp = tempfile::tempdir().unwrap();
    common::build_small(tmp.path());
    let store = Store::open(tmp.path(), OpenOptions::default()).unwrap();
    let space = store.space().unwrap();
    let facts: u64 = store
        .stats()
        .unwrap()
        .relations
        .iter()
        .map(|r| r.rows)
        .sum();
    assert_eq!(space.facts, facts);
    assert_eq!(
        space
            .files
            .iter()
            .map(|f| f.tier.as_str())
            .collect::<Vec<_>>(),
        ["default", "big"]
    );
    for f in &space.files {
        assert_eq!(f.bytes, std::fs::metadata(&f.path).unwrap().len());
        let tables: u64 = f.tables.iter().map(|t| t.total()).sum();
        assert!(tables <= f.bytes, "{f:?}");
        assert!(f.tables.iter().any(|t| t.name == "blocks" && t.stored > 0));
        assert!(
            f.tables
                .iter()
                .any(|t| t.name == "postings" && t.stored > 0)
        );
    }
    assert!(space.files[0].tables.iter().any(|t| t.name == "text_by_id"));
    assert!(!space.files[1].tables.iter().any(|t| t.name == "text_by_id"));
    let per_fact = space.bytes_per_fact();
    assert!(
        (per_fact - space.bytes() as f64 / facts as f64).abs() < 1e-9,
        "{per_fact}"
    );
    let shown = space.to_string();
    assert!(shown.contains("bytes per fact"), "{shown}");
}

#[test]
fn issue18_compact_gives_back_what_a_retraction_freed_and_keeps_every_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    {
        let store = kept(dir);
        let mut edges = String::new();
        for i in 0..60_000 {
            edges.push_str(&format!(
                "node{i}\tIMPORTS\ttarget{}\tunit{}\n",
                i % 997,
                i % 50
            ));
        }
        commit_edges(&store, &edges);
        let gone: Vec<String> = (0..45).map(|u| format!("unit{u}")).collect();
        store.retract(&gone, BatchOptions::default()).unwrap();
    }
    let before_rows = rows(
        &Store::open(dir, OpenOptions::default()).unwrap(),
        "imports",
    );
    assert_eq!(before_rows.len(), 6_000);
    let before = size(dir, "strata.redb");
    let report = strata_store::compact(dir).unwrap();
    assert_eq!(report.len(), 1);
    assert_eq!(report[0].before, before);
    let after = size(dir, "strata.redb");
    assert_eq!(report[0].after, after);
    // Removed rows keep their column blocks (rows never move), so what comes back is
    // their postings and owners: measured 4,702,208 -> 3,575,808 bytes.
    assert!(
        after * 10 < before * 9,
        "compaction gave back too little: {before} -> {after}"
    );
    // The same answers, a clean check, and the file trusted as compacted (stamped).
    let store = Store::open(dir, OpenOptions::default()).unwrap();
    assert_eq!(rows(&store, "imports"), before_rows);
    assert!(store.check().unwrap().ok());
    assert!(dir.join("strata.redb.stamp").exists());
}

#[test]
fn issue18_compact_refuses_a_database_in_use() {
    let tmp = tempfile::tempdir().unwrap();
    common::build_small(tmp.path());
    let _held = Store::open(tmp.path(), OpenOptions::default()).unwrap();
    let err = strata_store::compact(tmp.path()).unwrap_err();
    assert!(
        matches!(err, CompactError::Open(OpenError::InUse { .. })),
        "{err:?}"
    );
}

/// The fragmented bytes of `table` in the base file of `dir`.
fn fragmented(dir: &Path, table: &str) -> u64 {
    let store = Store::open(dir, OpenOptions::default()).unwrap();
    let space = store.space().unwrap();
    space.files[0]
        .tables
        .iter()
        .find(|t| t.name == table)
        .map_or(0, |t| t.fragmented)
}

#[test]
fn issue18_compact_repacks_postings_that_later_batches_rewrote() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    {
        let store = kept(dir);
        // Four batches over the same targets: each rewrites every postings chunk of the
        // target column with a grown value.
        for batch in 0..4 {
            let mut edges = String::new();
            for i in 0..40_000 {
                edges.push_str(&format!(
                    "node{batch}_{i}\tIMPORTS\ttarget{}\tunit{batch}_{}\n",
                    (i * 7919) % 20_011,
                    i % 400
                ));
            }
            commit_edges(&store, &edges);
        }
    }
    let before_rows = rows(
        &Store::open(dir, OpenOptions::default()).unwrap(),
        "imports",
    );
    assert_eq!(before_rows.len(), 160_000);
    let loose = fragmented(dir, "postings");
    let before = size(dir, "strata.redb");
    strata_store::compact(dir).unwrap();
    let after = size(dir, "strata.redb");
    let packed = fragmented(dir, "postings");
    eprintln!("postings fragmented {loose} -> {packed}, file {before} -> {after}");
    // Rewritten in key order, the leaves are full: measured 139,414 -> 46,080 fragmented
    // bytes of postings, the file 10,473,472 -> 5,570,560 bytes (391,016 and 17,252,352
    // before a batch's new keys went in through a cursor, `ascending.rs`, which fills the
    // leaves it writes). (redb's compaction alone moves pages and leaves each leaf as it
    // was.)
    assert!(
        packed * 2 < loose,
        "postings still fragmented: {loose} -> {packed}"
    );
    assert!(
        after * 3 < before * 2,
        "too little given back: {before} -> {after}"
    );
    let store = Store::open(dir, OpenOptions::default()).unwrap();
    assert_eq!(rows(&store, "imports"), before_rows);
    assert!(store.check().unwrap().ok());
}

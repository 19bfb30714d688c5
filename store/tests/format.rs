//! Format versions: databases of version 1 (values without checksums) and 2 (plain
//! encodings) still open, answer and take batches, in their own format; version 2 and later
//! files verify what they read; version 3 files are smaller, version 4 files smaller
//! still where a column is sorted, and version 5 files keep blocks in parts, in fewer pages.

#![allow(clippy::unwrap_used)]

use std::ops::ControlFlow;
use std::path::Path;

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use strata_eval::{FactSource, Value};
use strata_store::dump::Format;
use strata_store::{Store, layout};

mod common;

use common::read_into;

/// Every relation's rows, as values, sorted.
fn answers(store: &Store) -> Vec<String> {
    let snap = store.snapshot_with_tiers(&["big"]).unwrap();
    let mut out = Vec::new();
    for rel in ["imports", "calls", "size"] {
        snap.scan(rel, &mut |r| {
            let v: Vec<Value> = r.iter().map(|t| snap.value(*t).unwrap()).collect();
            out.push(format!("{rel} {v:?}"));
            ControlFlow::Continue(())
        })
        .unwrap();
    }
    let b3 = snap.term(&Value::text("b3")).unwrap().unwrap();
    snap.lookup("imports", &[(1, b3)], &mut |r| {
        out.push(format!("lookup {r:?}"));
        ControlFlow::Continue(())
    })
    .unwrap();
    out.sort();
    out
}

/// The shared small database in format `version`, with one retraction on top.
fn build(dir: &Path, version: u32) {
    common::build_small_as(dir, version);
    let store = Store::open(dir, strata_store::OpenOptions::default()).unwrap();
    store
        .retract(&["u3".to_owned()], strata_store::BatchOptions::default())
        .unwrap();
}

/// Rewrites a version 2 file as version 1 wrote it: each checksummed value without its
/// 4-byte checksum, and the version 1.
fn to_version_1(file: &Path, base: bool) {
    fn strip<K: redb::Key + 'static>(
        txn: &redb::WriteTransaction,
        def: TableDefinition<'_, K, &[u8]>,
    ) where
        for<'a> K::SelfType<'a>: Clone,
    {
        let mut t = txn.open_table(def).unwrap();
        let keys: Vec<_> = t
            .iter()
            .unwrap()
            .map(|e| {
                let (k, v) = e.unwrap();
                let v = v.value();
                (
                    K::as_bytes(&k.value()).as_ref().to_vec(),
                    v[..v.len() - 4].to_vec(),
                )
            })
            .collect();
        for (k, v) in keys {
            t.insert(K::from_bytes(&k), v.as_slice()).unwrap();
        }
    }
    let db = redb::Database::open(file).unwrap();
    let txn = db.begin_write().unwrap();
    strip(&txn, layout::BLOCKS);
    strip(&txn, layout::POSTINGS);
    strip(&txn, layout::DEAD);
    strip(&txn, layout::OWNERS);
    let meta = if base {
        strip(&txn, layout::TEXT_BY_ID);
        layout::META
    } else {
        layout::TIER_META
    };
    txn.open_table(meta)
        .unwrap()
        .insert("format_version", 1u32.to_le_bytes().as_slice())
        .unwrap();
    txn.commit().unwrap();
}

fn version(file: &Path, base: bool) -> u32 {
    let db = redb::Database::open(file).unwrap();
    let txn = db.begin_read().unwrap();
    let t = txn
        .open_table(if base {
            layout::META
        } else {
            layout::TIER_META
        })
        .unwrap();
    let v = t.get("format_version").unwrap().unwrap();
    layout::get_u32(v.value()).unwrap()
}

#[test]
fn a_version_1_database_opens_answers_and_takes_batches_in_its_format() {
    let root = tempfile::tempdir().unwrap();
    let (v1, v2, v3, v4, v5, v6) = (
        root.path().join("v1"),
        root.path().join("v2"),
        root.path().join("v3"),
        root.path().join("v4"),
        root.path().join("v5"),
        root.path().join("v6"),
    );
    build(&v1, 2);
    build(&v2, 2);
    build(&v3, 3);
    build(&v4, 4);
    build(&v5, 5);
    build(&v6, 6);
    to_version_1(&v1.join("strata.redb"), true);
    to_version_1(&v1.join("tier-big.redb"), false);
    let more = "a1\tIMPORTS\tz\tu1\nq\tCALLS\tr\nb3\tIMPORTS\tb3\n";
    for dir in [&v1, &v2, &v3, &v4, &v5, &v6] {
        // A check decodes every value in its file's own codec: a version 3 file this build
        // wrote into holds none of version 4's forms.
        let store = Store::open(dir, strata_store::OpenOptions::default()).unwrap();
        assert!(store.check().unwrap().ok());
        read_into(
            &store,
            "default",
            "m.edges.tsv",
            Format::Edges,
            more.as_bytes(),
        )
        .commit()
        .unwrap();
        store
            .retract(&["u5".to_owned()], strata_store::BatchOptions::default())
            .unwrap();
        let report = store.check().unwrap();
        assert!(report.ok(), "{dir:?}: {report}");
    }
    let (a1, a2, a3, a4, a5, a6) = (
        answers(&Store::open(&v1, strata_store::OpenOptions::default()).unwrap()),
        answers(&Store::open(&v2, strata_store::OpenOptions::default()).unwrap()),
        answers(&Store::open(&v3, strata_store::OpenOptions::default()).unwrap()),
        answers(&Store::open(&v4, strata_store::OpenOptions::default()).unwrap()),
        answers(&Store::open(&v5, strata_store::OpenOptions::default()).unwrap()),
        answers(&Store::open(&v6, strata_store::OpenOptions::default()).unwrap()),
    );
    assert_eq!(a1, a2);
    assert_eq!(a1, a3);
    assert_eq!(a1, a4);
    assert_eq!(a1, a5);
    assert_eq!(a1, a6);
    assert!(a1.len() > 300);
    // Each file kept its version.
    assert_eq!(version(&v1.join("strata.redb"), true), 1);
    assert_eq!(version(&v1.join("tier-big.redb"), false), 1);
    assert_eq!(version(&v2.join("strata.redb"), true), 2);
    assert_eq!(version(&v2.join("tier-big.redb"), false), 2);
    assert_eq!(version(&v3.join("strata.redb"), true), 3);
    assert_eq!(version(&v3.join("tier-big.redb"), false), 3);
    assert_eq!(version(&v4.join("strata.redb"), true), 4);
    assert_eq!(version(&v4.join("tier-big.redb"), false), 4);
    assert_eq!(version(&v5.join("strata.redb"), true), 5);
    assert_eq!(version(&v5.join("tier-big.redb"), false), 5);
    assert_eq!(
        version(&v6.join("strata.redb"), true),
        layout::FORMAT_VERSION
    );
    assert_eq!(layout::FORMAT_VERSION, 6);
}

#[test]
fn an_old_base_file_gains_a_tier_file_of_the_newest_version() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("db");
    build(&dir, 2);
    let store = Store::open(&dir, strata_store::OpenOptions::default()).unwrap();
    read_into(
        &store,
        "fresh",
        "f.edges.tsv",
        Format::Edges,
        b"x\tUSES\ty\nx\tUSES\tz\n",
    )
    .commit()
    .unwrap();
    assert!(store.check().unwrap().ok());
    let snap = store.snapshot_with_tiers(&["fresh"]).unwrap();
    let x = snap.term(&Value::text("x")).unwrap().unwrap();
    let mut n = 0;
    snap.lookup("uses", &[(0, x)], &mut |_| {
        n += 1;
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(n, 2);
    drop((snap, store));
    assert_eq!(version(&dir.join("strata.redb"), true), 2);
    assert_eq!(
        version(&dir.join("tier-fresh.redb"), false),
        layout::FORMAT_VERSION
    );
}

/// Payload bytes of the values each encoding changed, and the base file's length.
fn sizes(dir: &Path) -> (u64, u64) {
    let store = Store::open(dir, strata_store::OpenOptions::default()).unwrap();
    let space = store.space().unwrap();
    let base = &space.files[0];
    let stored = base
        .tables
        .iter()
        .filter(|t| {
            ["blocks", "postings", "owners", "dead", "text_by_id"].contains(&t.name.as_str())
        })
        .map(|t| t.stored)
        .sum();
    (stored, base.bytes)
}

#[test]
fn version_3_files_are_smaller_than_version_2_by_a_fixed_margin() {
    use strata_fixtures::codegraph::{self, Config};
    let root = tempfile::tempdir().unwrap();
    let mut dump = Vec::new();
    codegraph::write_edges(&Config::with_edges(60_000).seed(7).units(true), &mut dump).unwrap();
    let mut got = Vec::new();
    for v in [2, 3] {
        let dir = root.path().join(format!("v{v}"));
        let store = common::create_as(&dir, v);
        read_into(&store, "default", "code.edges.tsv", Format::Edges, &dump)
            .commit()
            .unwrap();
        assert!(store.check().unwrap().ok());
        drop(store);
        assert_eq!(version(&dir.join("strata.redb"), true), v);
        got.push(sizes(&dir));
    }
    let ((stored2, file2), (stored3, file3)) = (got[0], got[1]);
    eprintln!("version 2: {stored2} bytes stored, file {file2}; version 3: {stored3}, {file3}");
    assert!(stored3 * 100 < stored2 * 40, "{stored3} vs {stored2}");
    assert!(file3 * 100 < file2 * 60, "{file3} vs {file2}");
}

/// A database in format `version` of integer pairs (`i / 2`, `i × 7919 mod 100,003`) for
/// `i` in each of `batches`, one batch each, checked; sorted by their first column, two
/// rows a value (as the side-by-side suite's 10M pairs), the second column spread.
fn pairs_as(dir: &Path, version: u32, batches: &[(u32, u32)]) -> Store {
    let store = common::create_as(dir, version);
    for &(from, to) in batches {
        let mut dump = String::new();
        for i in from..to {
            dump.push_str(&format!("{}\t{}\n", i / 2, i * 7919 % 100_003));
        }
        read_into(
            &store,
            "default",
            "pair.facts",
            Format::Facts,
            dump.as_bytes(),
        )
        .commit()
        .unwrap();
    }
    // Every value decodes in the file's own codec (version 3's refuses version 4's forms).
    let report = store.check().unwrap();
    assert!(report.ok(), "version {version}: {report}");
    store
}

/// Every row of `pair`, in row order.
fn pair_rows(snap: &strata_store::Snapshot) -> Vec<Vec<strata_eval::Term>> {
    let mut rows = Vec::new();
    snap.scan("pair", &mut |r| {
        rows.push(r.to_vec());
        ControlFlow::Continue(())
    })
    .unwrap();
    rows
}

#[test]
fn version_4_files_hold_a_sorted_column_smaller_and_version_3_files_keep_their_forms() {
    let root = tempfile::tempdir().unwrap();
    let mut got = Vec::new();
    for v in [3, 4] {
        let dir = root.path().join(format!("v{v}"));
        let store = pairs_as(&dir, v, &[(0, 150_000), (150_000, 200_000)]);
        let snap = store.snapshot().unwrap();
        let mut rows = pair_rows(&snap);
        let seven = snap.term(&Value::Number(74_999.0)).unwrap().unwrap();
        snap.lookup("pair", &[(0, seven)], &mut |r| {
            rows.push(r.to_vec());
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(rows.len(), 200_002);
        drop((snap, store));
        assert_eq!(version(&dir.join("strata.redb"), true), v);
        got.push((rows, sizes(&dir)));
    }
    let ((rows3, (stored3, file3)), (rows4, (stored4, file4))) = (&got[0], &got[1]);
    assert_eq!(rows3, rows4);
    eprintln!("version 3: {stored3} bytes stored, file {file3}; version 4: {stored4}, {file4}");
    assert!(stored4 * 100 < stored3 * 75, "{stored4} vs {stored3}");
}

#[test]
fn a_flipped_byte_in_a_block_or_posting_is_damage_naming_file_relation_and_block() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("db");
    build(&dir, layout::FORMAT_VERSION);
    let flip =
        |def: TableDefinition<'_, (u32, u16, u32), &[u8]>, key: (u32, u16, u32), at: usize| {
            let db = redb::Database::open(dir.join("strata.redb")).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let mut t = txn.open_table(def).unwrap();
                let mut v = t.get(key).unwrap().unwrap().value().to_vec();
                v[at] ^= 0x01;
                t.insert(key, v.as_slice()).unwrap();
            }
            txn.commit().unwrap();
        };
    let base = dir.join("strata.redb").display().to_string();
    let id = {
        let store = Store::open(&dir, strata_store::OpenOptions::default()).unwrap();
        store.catalog().unwrap().relations["imports"].id
    };
    // The dst column's first block: its 10th term.
    flip(layout::BLOCKS, (id, 1, 0), 40);
    let store = Store::open(&dir, strata_store::OpenOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    let err = snap
        .scan("imports", &mut |_| ControlFlow::Continue(()))
        .unwrap_err();
    let shown = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(shown.contains(&base), "{shown}");
    assert!(
        shown.contains("relation imports, column 1: block 0"),
        "{shown}"
    );
    assert!(shown.contains("checksum"), "{shown}");
    let err = store.check().unwrap_err();
    let shown = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(
        shown.contains("relation imports, column 1: block 0"),
        "{shown}"
    );
    drop((snap, store));
    // Undo it, then flip a byte of the chunk holding b3's posting.
    flip(layout::BLOCKS, (id, 1, 0), 40);
    let store = Store::open(&dir, strata_store::OpenOptions::default()).unwrap();
    assert!(store.check().unwrap().ok());
    let snap = store.snapshot().unwrap();
    let b3 = snap.term(&Value::text("b3")).unwrap().unwrap();
    let chunk = strata_store::testing::index::chunk_of(b3.0).0;
    drop((snap, store));
    flip(layout::POSTINGS, (id, 1, chunk), 3);
    let store = Store::open(&dir, strata_store::OpenOptions::default()).unwrap();
    let snap = store.snapshot().unwrap();
    let err = snap
        .lookup("imports", &[(1, b3)], &mut |_| ControlFlow::Continue(()))
        .unwrap_err();
    let shown = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(shown.contains(&base), "{shown}");
    assert!(
        shown.contains(&format!(
            "relation imports, column 1: postings chunk {chunk}"
        )),
        "{shown}"
    );
    // An ingest that reads the damaged chunk commits nothing.
    drop(snap);
    let seq = store.catalog().unwrap().seq;
    let mut batch = store.batch(strata_store::BatchOptions::default()).unwrap();
    batch
        .read_dump(
            &b"x\tIMPORTS\tb3\n"[..],
            &common::spec("m.edges.tsv", Format::Edges),
        )
        .unwrap();
    assert!(batch.commit().is_err());
    drop(store);
    let store = Store::open(&dir, strata_store::OpenOptions::default()).unwrap();
    assert_eq!(store.catalog().unwrap().seq, seq);
}

/// The pages of the base file's `blocks` table.
fn block_pages(dir: &Path) -> u64 {
    let store = Store::open(dir, strata_store::OpenOptions::default()).unwrap();
    let space = store.space().unwrap();
    let blocks = space.files[0].tables.iter().find(|t| t.name == "blocks");
    blocks.unwrap().total()
}

#[test]
fn version_5_files_keep_blocks_in_parts_in_fewer_pages_and_answer_the_same() {
    // Pairs whose second column is spread (17 bits: a block of 8.7 KB, which version 4
    // stores in a page run of 16 KiB), in three batches: each later one appends to the
    // partly filled last blocks, whose parts grow.
    let root = tempfile::tempdir().unwrap();
    let mut got = Vec::new();
    for v in [4, 5] {
        let dir = root.path().join(format!("v{v}"));
        let batches = [(0, 150_000), (150_000, 151_000), (151_000, 200_000)];
        let store = pairs_as(&dir, v, &batches);
        let snap = store.snapshot().unwrap();
        let mut rows = pair_rows(&snap);
        // Lookups by each column: a few rows of a block, read from the parts holding them.
        let mut want = 200_000;
        for (col, n) in [(0, 74_999), (0, 75_321), (1, 7_919), (1, 99_999)] {
            want += (0..200_000u32)
                .filter(|&i| [i / 2, i * 7919 % 100_003][col] == n)
                .count();
            let t = snap.term(&Value::Number(f64::from(n))).unwrap().unwrap();
            snap.lookup("pair", &[(col, t)], &mut |r| {
                rows.push(r.to_vec());
                ControlFlow::Continue(())
            })
            .unwrap();
        }
        assert!(want > 200_000 + 6, "{want}");
        assert_eq!(rows.len(), want, "version {v}");
        drop((snap, store));
        assert_eq!(version(&dir.join("strata.redb"), true), v);
        got.push((rows, block_pages(&dir)));
    }
    let ((rows4, pages4), (rows5, pages5)) = (&got[0], &got[1]);
    assert_eq!(rows4, rows5);
    eprintln!("blocks' pages: version 4 {pages4} bytes, version 5 {pages5}");
    assert!(pages5 * 100 < pages4 * 70, "{pages5} vs {pages4}");
}

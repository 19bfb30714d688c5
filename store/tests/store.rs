//! The store's behaviour through its public API: formats, errors, tiers, snapshots, versions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;

use strata_eval::{FactSource, Value};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenError, OpenOptions, Store, StoreError};

fn create(dir: &Path) -> Store {
    Store::open(
        dir,
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )
    .unwrap()
}

fn spec(label: &str, format: Format) -> DumpSpec {
    DumpSpec {
        label: label.to_owned(),
        format,
        relation: None,
        unit: None,
        checkout: None,
    }
}

fn ingest(store: &Store, label: &str, format: Format, text: &str) -> Result<u64, StoreError> {
    ingest_with(store, label, format, text, BatchOptions::default())
}

fn ingest_with(
    store: &Store,
    label: &str,
    format: Format,
    text: &str,
    options: BatchOptions,
) -> Result<u64, StoreError> {
    let mut batch = store.batch(options)?;
    let mut s = spec(label, format);
    if format == Format::Facts {
        s.relation = Some(label.trim_end_matches(".facts").to_owned());
    }
    batch.read_dump(text.as_bytes(), &s)?;
    Ok(batch.commit()?.seq)
}

fn all(store: &Store, rel: &str) -> Vec<Vec<String>> {
    let snap = store.snapshot().unwrap();
    let mut rows = Vec::new();
    snap.scan(rel, &mut |r| {
        rows.push(r.to_vec());
        ControlFlow::Continue(())
    })
    .unwrap();
    let mut out: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|t| match snap.value(t).unwrap() {
                    Value::Text(s) => format!("{s:?}"),
                    v => v.to_string(),
                })
                .collect()
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_format_reads_its_fields() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    ingest(
        &store,
        "a.edges.tsv",
        Format::Edges,
        "# comment\n\napp\tIMPORTS\tapi\nx\\ty\tIMPORTS\t42\n",
    )
    .unwrap();
    ingest(
        &store,
        "a.attrs.tsv",
        Format::Attrs,
        "f\tlines\t120\nf\tpath\t\ng\tpath\t\\N\nh\tpath\t1.50\n",
    )
    .unwrap();
    ingest(&store, "a.nodes.tsv", Format::Nodes, "app\tPackage\n").unwrap();
    ingest(
        &store,
        "pkg.facts",
        Format::Facts,
        "# columns: name, license\napp\tMIT\napi\t\\N\nlog\t\n",
    )
    .unwrap();
    ingest(
        &store,
        "a.jsonl",
        Format::Jsonl,
        "{\"src\":\"a\",\"kind\":\"CALLS\",\"dst\":\"b\",\"unit\":\"f.rs\"}\n{\"node\":\"a\",\"key\":\"lines\",\"value\":7}\n{\"node\":\"a\",\"key\":\"doc\",\"value\":null}\n{\"id\":\"a\",\"label\":\"Fn\"}\n",
    )
    .unwrap();
    assert_eq!(
        all(&store, "imports"),
        [vec!["\"app\"", "\"api\""], vec!["\"x\\ty\"", "42"]]
    );
    assert_eq!(
        all(&store, "lines"),
        [vec!["\"a\"", "7"], vec!["\"f\"", "120"]]
    );
    assert_eq!(
        all(&store, "path"),
        [
            vec!["\"f\"", "\"\""],
            vec!["\"g\"", "absent"],
            vec!["\"h\"", "\"1.50\""]
        ]
    );
    assert_eq!(all(&store, "package"), [vec!["\"app\""]]);
    assert_eq!(all(&store, "fn"), [vec!["\"a\""]]);
    assert_eq!(all(&store, "calls"), [vec!["\"a\"", "\"b\""]]);
    assert_eq!(all(&store, "doc"), [vec!["\"a\"", "absent"]]);
    let pkg = store.catalog().unwrap().relations["pkg"].clone();
    assert_eq!(pkg.columns, ["name", "license"]);
    assert_eq!(
        all(&store, "pkg"),
        [
            vec!["\"api\"", "absent"],
            vec!["\"app\"", "\"MIT\""],
            vec!["\"log\"", "\"\""]
        ]
    );
}

#[test]
fn gzip_dumps_are_read_compressed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.edges.tsv.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(b"a\tIMPORTS\tb\nb\tIMPORTS\tc\n").unwrap();
    gz.finish().unwrap();
    assert_eq!(Format::from_path(&path), Some(Format::Edges));
    let store = create(&dir.path().join("db"));
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    batch
        .read_file(&path, &spec("g.edges.tsv.gz", Format::Edges))
        .unwrap();
    assert_eq!(batch.commit().unwrap().new, 2);
}

#[test]
fn a_fact_ingested_twice_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    batch
        .read_dump(
            "a\tX\tb\na\tX\tb\n".as_bytes(),
            &spec("x.edges.tsv", Format::Edges),
        )
        .unwrap();
    let s = batch.commit().unwrap();
    assert_eq!((s.facts_read, s.new, s.duplicates), (2, 1, 1));
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    batch
        .read_dump(
            "a\tX\tb\nb\tX\tc\n".as_bytes(),
            &spec("x.edges.tsv", Format::Edges),
        )
        .unwrap();
    let s = batch.commit().unwrap();
    assert_eq!((s.seq, s.new, s.duplicates), (2, 1, 1));
    assert_eq!(store.catalog().unwrap().relations["x"].rows, 2);
}

#[test]
fn a_retried_batch_id_is_a_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let opts = BatchOptions {
        batch_id: Some("b-1".into()),
        ..Default::default()
    };
    assert_eq!(
        ingest_with(
            &store,
            "x.edges.tsv",
            Format::Edges,
            "a\tX\tb\n",
            opts.clone()
        )
        .unwrap(),
        1
    );
    let mut batch = store.batch(opts).unwrap();
    batch
        .read_dump("c\tX\td\n".as_bytes(), &spec("x.edges.tsv", Format::Edges))
        .unwrap();
    let s = batch.commit().unwrap();
    assert!(s.already_committed);
    assert_eq!(s.seq, 1);
    assert_eq!(store.catalog().unwrap().seq, 1);
    assert_eq!(all(&store, "x").len(), 1);
}

fn malformed(format: Format, label: &str, text: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    ingest(&store, "ok.edges.tsv", Format::Edges, "a\tX\tb\n").unwrap();
    let before = store.stats().unwrap().relations;
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let mut s = spec(label, format);
    s.relation = Some("f".into());
    let err: StoreError = match batch.read_dump(text, &s) {
        Err(e) => e.into(),
        Ok(_) => batch.commit().expect_err("the batch must fail").into(),
    };
    assert_eq!(
        store.catalog().unwrap().seq,
        1,
        "nothing of the failed batch is stored"
    );
    assert_eq!(store.stats().unwrap().relations, before);
    err.to_string()
}

#[test]
fn malformed_lines_name_file_line_and_problem() {
    let cases: &[(Format, &str, &[u8], &str)] = &[
        (
            Format::Edges,
            "e.edges.tsv",
            b"a\tX\tb\na\tX\n",
            "e.edges.tsv:2: expected 3 or 4 tab-separated fields (src, kind, dst[, unit]), found 2",
        ),
        (
            Format::Edges,
            "e.edges.tsv",
            b"a\tX\tb\tu\textra\n",
            "e.edges.tsv:1: expected 3 or 4 tab-separated fields (src, kind, dst[, unit]), found 5",
        ),
        (
            Format::Edges,
            "e.edges.tsv",
            b"a\\q\tX\tb\n",
            "e.edges.tsv:1: field 1: bad escape \"\\q\" (write \\t, \\n, \\r or \\\\; a field that is exactly \\N is absent)",
        ),
        (
            Format::Edges,
            "e.edges.tsv",
            b"# c\na\tX\t\xff\n",
            "e.edges.tsv:2: invalid UTF-8 at byte 5 of the line",
        ),
        (
            Format::Edges,
            "e.edges.tsv",
            b"\tX\tb\n",
            "e.edges.tsv:1: field 1 (src) is empty",
        ),
        (
            Format::Edges,
            "e.edges.tsv",
            b"a\tX\t\\N\n",
            "e.edges.tsv:1: field 3 (dst) is \\N (absent); an id must be stated",
        ),
        (
            Format::Edges,
            "e.edges.tsv",
            b"a\tX Y\tb\n",
            "e.edges.tsv:1: kind \"X Y\" cannot name a relation: use letters, digits, `_` and `-`",
        ),
        (
            Format::Nodes,
            "n.nodes.tsv",
            b"a\tP\t\n",
            "n.nodes.tsv:1: the unit field is empty; leave it out instead",
        ),
        (
            Format::Facts,
            "f.facts",
            b"1\t2\n1\t2\t3\n",
            "f.facts:2: expected 2 tab-separated fields like the lines before, found 3",
        ),
        (
            Format::Jsonl,
            "j.jsonl",
            b"{\"src\":\"a\",\"kind\":\"X\"}\n",
            "j.jsonl:1: missing key \"dst\"",
        ),
        (
            Format::Jsonl,
            "j.jsonl",
            b"{\"src\":\"a\",\"kind\":\"X\",\"dst\":\"b\",\"weight\":1}\n",
            "j.jsonl:1: unexpected key \"weight\"; this object takes \"src\", \"kind\", \"dst\" and \"unit\"",
        ),
        (
            Format::Jsonl,
            "j.jsonl",
            b"[1]\n",
            "j.jsonl:1: expected a JSON object",
        ),
        (
            Format::Attrs,
            "a.attrs.tsv",
            b"a\tX\tb\n",
            "a.attrs.tsv:1: \"X\" (an attribute key) names the same relation \"x\" as the stored \"X\" (an edge kind); rename one of them",
        ),
    ];
    for (format, label, text, want) in cases {
        assert_eq!(&malformed(*format, label, text), want);
    }
}

#[test]
fn an_arity_or_tier_clash_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    ingest(&store, "r.facts", Format::Facts, "1\t2\n").unwrap();
    let err = ingest(&store, "r.facts", Format::Facts, "# c\n1\t2\t3\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "r.facts:2: relation \"r\" is stored with 2 columns (c1, c2), but this dump gives it 3"
    );
    let opts = BatchOptions {
        tier: "big".into(),
        ..Default::default()
    };
    let err = ingest_with(&store, "r.facts", Format::Facts, "5\t6\n", opts).unwrap_err();
    assert_eq!(
        err.to_string(),
        "r.facts:1: relation \"r\" lives in tier \"default\", not \"big\"; ingest it with --tier default"
    );
    assert_eq!(store.catalog().unwrap().seq, 1);
    assert!(
        !dir.path().join("tier-big.redb").exists()
            || store.catalog().unwrap().relations["r"].tier == "default"
    );
}

#[test]
fn a_query_on_the_default_tier_never_opens_another() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = create(dir.path());
        ingest(&store, "d.edges.tsv", Format::Edges, "a\tIMPORTS\tb\n").unwrap();
        let opts = BatchOptions {
            tier: "big".into(),
            ..Default::default()
        };
        ingest_with(
            &store,
            "x.edges.tsv",
            Format::Edges,
            "a\tCALLS\tb\nb\tCALLS\tc\n",
            opts,
        )
        .unwrap();
        assert!(dir.path().join("tier-big.redb").exists());
    }
    let store = Store::open(dir.path(), OpenOptions::default()).unwrap();
    assert_eq!(store.opened_tiers(), ["default"]);
    assert_eq!(all(&store, "imports").len(), 1);
    store.stats().unwrap();
    assert_eq!(
        store.opened_tiers(),
        ["default"],
        "reading default-tier relations opened another tier"
    );
    assert_eq!(all(&store, "calls").len(), 2);
    assert_eq!(store.opened_tiers(), ["big", "default"]);
    assert!(store.check().unwrap().ok());
}

#[test]
fn a_snapshot_never_sees_a_later_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    ingest(&store, "d.edges.tsv", Format::Edges, "a\tIMPORTS\tb\n").unwrap();
    let opts = BatchOptions {
        tier: "big".into(),
        ..Default::default()
    };
    ingest_with(
        &store,
        "x.edges.tsv",
        Format::Edges,
        "a\tCALLS\tb\n",
        opts.clone(),
    )
    .unwrap();
    let old = store.snapshot_with_tiers(&["big"]).unwrap();
    ingest(&store, "d.edges.tsv", Format::Edges, "b\tIMPORTS\tc\n").unwrap();
    ingest_with(&store, "x.edges.tsv", Format::Edges, "b\tCALLS\tc\n", opts).unwrap();
    let count = |s: &strata_store::Snapshot, rel: &str| {
        let mut n = 0;
        s.scan(rel, &mut |_| {
            n += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
        n
    };
    assert_eq!(
        (old.seq(), count(&old, "imports"), count(&old, "calls")),
        (2, 1, 1)
    );
    let new = store.snapshot().unwrap();
    assert_eq!(
        (new.seq(), count(&new, "imports"), count(&new, "calls")),
        (4, 2, 2)
    );
}

#[test]
fn labels_and_sequence_numbers_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut opts = BatchOptions::default();
    opts.labels.insert("commit".into(), "abc123".into());
    ingest_with(
        &store,
        "d.edges.tsv",
        Format::Edges,
        "a\tIMPORTS\tb\n",
        opts,
    )
    .unwrap();
    let snap = store.snapshot().unwrap();
    assert_eq!(snap.seq(), 1);
    assert_eq!(snap.last_batch().unwrap().labels["commit"], "abc123");
    let text = store.stats().unwrap().to_string();
    assert!(text.starts_with("batch 1 commit=abc123\n"), "{text}");
}

#[test]
fn a_newer_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(create(dir.path()));
    {
        let db = redb::Database::open(dir.path().join("strata.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(strata_store::layout::META)
            .unwrap()
            .insert("format_version", 99u32.to_le_bytes().as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    let err = Store::open(dir.path(), OpenOptions::default())
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            OpenError::NewerFormat {
                found: 99,
                supported: strata_store::layout::FORMAT_VERSION,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("has format version 99, but this strata reads version 6 at most")
    );
}

#[test]
fn a_database_in_use_is_named_so() {
    let dir = tempfile::tempdir().unwrap();
    let _held = create(dir.path());
    // redb refuses a second open of the same file, in this process as in another.
    let err = Store::open(dir.path(), OpenOptions::default())
        .err()
        .unwrap();
    assert!(matches!(err, OpenError::InUse { .. }), "{err}");
    assert!(err.to_string().contains("is in use by another process"));
}

#[test]
fn opening_a_missing_database_says_how_to_create_one() {
    let dir = tempfile::tempdir().unwrap();
    let err = Store::open(dir.path().join("nope"), OpenOptions::default())
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("is not a Strata database"),
        "{err}"
    );
}

use redb::ReadableTable;

/// Damages one table of a closed database through redb, then runs `check`.
fn damaged(damage: impl FnOnce(&redb::WriteTransaction)) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = create(dir.path());
        ingest(
            &store,
            "d.edges.tsv",
            Format::Edges,
            "a\tIMPORTS\tb\na\tIMPORTS\tc\nb\tIMPORTS\tc\n",
        )
        .unwrap();
        assert!(store.check().unwrap().ok());
    }
    {
        let db = redb::Database::open(dir.path().join("strata.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        damage(&txn);
        txn.commit().unwrap();
    }
    let store = Store::open(dir.path(), OpenOptions::default()).unwrap();
    let report = store.check().unwrap();
    assert!(!report.ok());
    report.problems
}

#[test]
fn check_reports_damage_by_relation_and_column() {
    use strata_store::layout;
    use strata_store::testing::{column, index};
    // A posting that lost a row.
    let problems = damaged(|txn| {
        let mut t = txn.open_table(layout::POSTINGS).unwrap();
        let key = t.iter().unwrap().next().unwrap().unwrap().0.value();
        let mut empty = roaring::RoaringBitmap::new();
        empty.insert(99);
        let bytes = index::stored_chunk(key, [(0u8, &mut empty)].into_iter());
        t.insert(key, bytes.as_slice()).unwrap();
    });
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("relation imports, column src: ")
                && p.contains("postings differ")),
        "{problems:?}"
    );
    // A column block whose values changed: postings and the duplicate check both see it.
    let problems = damaged(|txn| {
        let mut t = txn.open_table(layout::BLOCKS).unwrap();
        let first = t.get((0, 1, 0)).unwrap().unwrap().value().to_vec();
        let mut terms = column::from_stored((0, 1, 0), &first).unwrap();
        terms[1] = terms[0];
        t.insert(
            (0, 1, 0),
            column::stored((0, 1, 0), &terms).unwrap().as_slice(),
        )
        .unwrap();
    });
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("relation imports, column dst: ")),
        "{problems:?}"
    );
    // A catalog whose count is wrong.
    let problems = damaged(|txn| {
        let mut t = txn.open_table(layout::RELATIONS).unwrap();
        let mut meta: strata_store::RelationMeta =
            serde_json::from_slice(t.get(0).unwrap().unwrap().value()).unwrap();
        meta.rows = 7;
        t.insert(0, serde_json::to_vec(&meta).unwrap().as_slice())
            .unwrap();
    });
    assert_eq!(
        problems[0],
        "relation imports: the catalog says 7 facts, the columns hold 3"
    );
}

/// A second batch finds the texts the first stored, however it orders them: more of them
/// than the chunks a batch keeps decoded (256 chunks of 256 texts), looked up out of order,
/// each gets its stored id (no text is numbered twice) and reads back as itself.
#[test]
fn a_later_batch_finds_every_stored_text_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let n = 70_000u32;
    let name = |i: u32| format!("sym:pkg_{}/src/mod_{}.rs#item_{i}", i / 500, i / 50);
    let first: String = (0..n).map(|i| format!("{}\t{}\n", name(i), i)).collect();
    ingest(&store, "owns.facts", Format::Facts, &first).unwrap();
    let texts = store.catalog().unwrap().texts;
    // Out of order (a stride through the ids), and a few new texts among them.
    let mut second = String::new();
    for k in 0..n {
        let i = (k * 7919) % n;
        second.push_str(&format!("{}\t{}\n", name(i), name((i + 1) % n)));
    }
    second.push_str("new_a\tnew_b\n");
    ingest(&store, "next.facts", Format::Facts, &second).unwrap();
    assert_eq!(store.catalog().unwrap().texts, texts + 2);
    let rows = all(&store, "next");
    assert_eq!(rows.len(), n as usize + 1);
    assert!(rows.contains(&vec![format!("{:?}", name(5)), format!("{:?}", name(6))]));
}

#[test]
fn a_relation_read_in_parts_is_its_scan_in_order() {
    // 20,000 facts (five blocks a column), a third of them a unit's, retracted: the live
    // rows of every block, read in one to six parts, are the scan's.
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    for i in 0..20_000u32 {
        let fields = [
            strata_store::dump::Field::Number(f64::from(i / 3)),
            strata_store::dump::Field::Text(format!("t{}", i % 977).into()),
        ];
        let unit = (i % 3 == 1).then_some("gone");
        batch.add_fact("e", &fields, unit).unwrap();
    }
    batch.commit().unwrap();
    store
        .retract(&["gone".to_owned()], BatchOptions::default())
        .unwrap();
    let snap = store.snapshot().unwrap();
    let mut scanned = Vec::new();
    snap.scan("e", &mut |row| {
        scanned.extend_from_slice(row);
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(scanned.len(), 2 * (20_000 - 6_667));
    for parts in 1..=6 {
        let joined: Vec<_> = (0..parts)
            .flat_map(|p| snap.read_part("e", p, parts).unwrap())
            .collect();
        assert_eq!(joined, scanned, "in {parts} parts");
    }
    assert!(snap.read_part("e", 7, 6).unwrap().is_empty());
    assert!(snap.read_part("nothing", 0, 1).is_err());
}

//! Relations declared with postings for some columns only (`BatchOptions::indexes`,
//! `strata ingest --index REL=COLS`): they answer every lookup as a relation indexed on
//! every column does, through later batches, replacements and retractions, and `check`
//! finds them whole; declarations that cannot hold are refused, naming what is wrong.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use strata_eval::{FactSource, Term, Value};
use strata_store::dump::Format;
use strata_store::{BatchOptions, Store};

/// Options declaring relation `rel` indexed on columns `cols`.
fn declaring(rel: &str, cols: &[&str]) -> BatchOptions {
    BatchOptions {
        indexes: BTreeMap::from([(
            rel.to_owned(),
            cols.iter().map(|c| (*c).to_owned()).collect(),
        )]),
        ..BatchOptions::default()
    }
}

/// Options declaring `calls` indexed on `src` only.
fn declared() -> BatchOptions {
    declaring("calls", &["src"])
}

/// `calls` edges `from .. to`, each owned by one of seven units; a target is one of 37,
/// so it has many rows.
fn edges(from: u32, to: u32) -> String {
    let mut s = String::new();
    for i in from..to {
        s.push_str(&format!(
            "f{}\tCALLS\tg{}\tu{}\n",
            i % 211,
            i * 7 % 37,
            i % 7
        ));
    }
    s
}

/// A batch of `text` into `store`, declared or not.
fn batch(store: &Store, declare: bool, text: &str, replace: bool) -> strata_store::BatchSummary {
    let options = BatchOptions {
        replace,
        ..if declare {
            declared()
        } else {
            BatchOptions::default()
        }
    };
    common::commit_dump(store, options, "c.edges.tsv", Format::Edges, text)
}

/// Every lookup of `calls` a program could make: by each column's every value, by both,
/// and none, each answer's rows rendered and sorted.
fn lookups(store: &Store) -> Vec<(String, Vec<String>)> {
    let snap = store.snapshot().unwrap();
    let mut out = Vec::new();
    let mut run = |label: String, bound: &[(usize, Term)]| {
        let mut rows = Vec::new();
        snap.lookup("calls", bound, &mut |row| {
            rows.push(format!("{:?}", snap.values(row).unwrap()));
            ControlFlow::Continue(())
        })
        .unwrap();
        rows.sort();
        let estimate = snap.estimate("calls", bound).unwrap();
        assert!(estimate >= rows.len() as u64, "{label}");
        out.push((label, rows));
    };
    run("all".to_owned(), &[]);
    for i in 0..211 {
        let Some(f) = snap.term(&Value::text(format!("f{i}"))).unwrap() else {
            continue;
        };
        run(format!("src f{i}"), &[(0, f)]);
        for j in [0, 5, 36] {
            if let Some(g) = snap.term(&Value::text(format!("g{j}"))).unwrap() {
                run(format!("f{i} g{j}"), &[(0, f), (1, g)]);
            }
        }
    }
    for j in 0..37 {
        if let Some(g) = snap.term(&Value::text(format!("g{j}"))).unwrap() {
            run(format!("dst g{j}"), &[(1, g)]);
        }
    }
    out
}

#[test]
fn a_relation_indexed_on_its_first_column_answers_as_one_indexed_on_both() {
    let root = tempfile::tempdir().unwrap();
    let full = common::create(&root.path().join("full"));
    let part = common::create(&root.path().join("part"));
    let steps: [(&str, String, bool); 4] = [
        ("first batch", edges(0, 3000), false),
        // Half stored already, half new.
        ("overlapping batch", edges(1500, 4500), false),
        // Units u0..u6 restated with fewer facts.
        ("replacing batch", edges(0, 700), true),
        ("small batch", edges(9000, 9003), false),
    ];
    for (what, text, replace) in &steps {
        let a = batch(&full, false, text, *replace);
        let b = batch(&part, true, text, *replace);
        assert_eq!(
            (a.new, a.duplicates, a.removed),
            (b.new, b.duplicates, b.removed),
            "{what}"
        );
        assert_eq!(lookups(&full), lookups(&part), "{what}");
        let report = part.check().unwrap();
        assert!(report.ok(), "{what}: {report}");
        let rel = part.catalog().unwrap().relations["calls"].clone();
        assert_eq!(rel.unindexed, vec![1], "{what}");
        let exact = full.catalog().unwrap().relations["calls"].distinct[1];
        assert!(
            rel.distinct[1] >= exact && rel.distinct[1] <= rel.rows,
            "{what}"
        );
        if *what == "first batch" {
            assert_eq!(rel.distinct[1], exact, "exact after the first batch");
        }
    }
    for store in [&full, &part] {
        store
            .retract(&["u3".to_owned()], BatchOptions::default())
            .unwrap();
    }
    assert_eq!(lookups(&full), lookups(&part), "after a retraction");
    assert!(part.check().unwrap().ok());
    // The engine's answers agree too, whichever column binds.
    let stats = part.stats().unwrap();
    assert_eq!(stats.relations[0].unindexed, vec![1]);
    assert!(stats.to_string().contains("dst (at most"), "{stats}");
    // The file holds no postings of `dst`: fewer bytes of postings than the full index.
    let postings = |s: &Store| {
        s.space().unwrap().files[0]
            .tables
            .iter()
            .find(|t| t.name == "postings")
            .map(|t| t.stored)
            .unwrap()
    };
    assert!(postings(&part) < postings(&full));
}

#[test]
fn a_declaration_that_cannot_hold_is_refused_and_stores_nothing() {
    let root = tempfile::tempdir().unwrap();
    let store = common::create(&root.path().join("db"));
    let refused = |options: BatchOptions, text: &str| -> String {
        let mut b = store.batch(options).unwrap();
        let read = b.read_dump(text.as_bytes(), &common::spec("c.edges.tsv", Format::Edges));
        match read {
            Err(e) => common::chain(&e),
            Ok(_) => common::chain(&b.commit().unwrap_err()),
        }
    };
    let with = declaring;
    let e = refused(with("calls", &["dst"]), "a\tCALLS\tb\n");
    assert!(
        e.contains("its first column, \"src\", is always indexed"),
        "{e}"
    );
    assert!(e.contains("name it too: calls=src,dst"), "{e}");
    let e = refused(with("calls", &["src", "callee"]), "a\tCALLS\tb\n");
    assert!(
        e.contains("has no column \"callee\"; its columns are src, dst"),
        "{e}"
    );
    let e = refused(with("imports", &["src"]), "a\tCALLS\tb\n");
    assert!(
        e.contains("indexes are declared for relation \"imports\", which this batch does not"),
        "{e}"
    );
    assert_eq!(store.stats().unwrap().relations.len(), 0, "nothing stored");
    // Stored with the first column indexed only: a dump whose `# index:` line names the
    // second too is refused, with the flag that builds its index.
    let pairs = "# index: c1, c2\n1\t2\n";
    let mut b = store.batch(BatchOptions::default()).unwrap();
    b.read_dump(
        "# index: c1\n1\t2\n".as_bytes(),
        &common::spec("p.facts", Format::Facts),
    )
    .unwrap();
    b.commit().unwrap();
    let mut b = store.batch(BatchOptions::default()).unwrap();
    b.read_dump(pairs.as_bytes(), &common::spec("p.facts", Format::Facts))
        .unwrap();
    let e = common::chain(&b.commit().unwrap_err());
    assert!(
        e.contains("relation \"p\" is stored with an index on c1 only, and the dump's `# index:` line names c1, c2; give the batch --index p=c1,c2"),
        "{e}"
    );
    assert!(e.contains("p.facts:2"), "{e}");
    // With the flag, the batch builds it; a line naming fewer columns than are indexed is
    // fine.
    common::commit_dump(
        &store,
        declaring("p", &["c1", "c2"]),
        "p.facts",
        Format::Facts,
        pairs,
    );
    common::commit_dump(
        &store,
        BatchOptions::default(),
        "p.facts",
        Format::Facts,
        "# index: c1\n3\t4\n",
    );
    let rel = store.catalog().unwrap().relations["p"].clone();
    assert_eq!((rel.unindexed.len(), rel.rows), (0, 2));
    assert!(store.check().unwrap().ok());
}

#[test]
fn a_database_older_than_version_6_refuses_a_declaration() {
    let root = tempfile::tempdir().unwrap();
    let store = common::create_as(&root.path().join("db"), 5);
    let e = match store.batch(declared()) {
        Err(e) => common::chain(&e),
        Ok(_) => panic!("a version 5 database took a declaration"),
    };
    assert!(e.contains("format version 6"), "{e}");
}

#[test]
fn a_facts_file_declares_its_indexes_in_an_index_line() {
    let root = tempfile::tempdir().unwrap();
    let store = common::create(&root.path().join("db"));
    let mut text = String::from("# columns: from, to\n# index: from\n");
    for i in 0..500 {
        text.push_str(&format!("{i}\t{}\n", i * 3 % 17));
    }
    common::commit_dump(
        &store,
        BatchOptions::default(),
        "pairs.facts",
        Format::Facts,
        &text,
    );
    let rel = store.catalog().unwrap().relations["pairs"].clone();
    assert_eq!(rel.unindexed, vec![1]);
    assert!(store.check().unwrap().ok());
    // `--index` agreeing with the line is fine; disagreeing is refused, naming both.
    let with = |cols: &[&str]| declaring("pairs", cols);
    common::commit_dump(&store, with(&["from"]), "pairs.facts", Format::Facts, &text);
    let mut b = store.batch(with(&["from", "to"])).unwrap();
    b.read_dump(text.as_bytes(), &common::spec("pairs.facts", Format::Facts))
        .unwrap();
    let e = common::chain(&b.commit().unwrap_err());
    assert!(
        e.contains("--index declares from, to and the dump's `# index:` line from"),
        "{e}"
    );
    // A line naming no column, or the first column left out, is refused.
    let mut b = store.batch(BatchOptions::default()).unwrap();
    let e = b
        .read_dump(
            "# index:\n1\t2\n".as_bytes(),
            &common::spec("other.facts", Format::Facts),
        )
        .unwrap_err();
    assert!(
        common::chain(&e).contains("other.facts:1: an `# index:` line names the columns"),
        "{}",
        common::chain(&e)
    );
    drop(b);
    let mut b = store.batch(BatchOptions::default()).unwrap();
    b.read_dump(
        "# index: c2\n1\t2\n".as_bytes(),
        &common::spec("other.facts", Format::Facts),
    )
    .unwrap();
    let e = common::chain(&b.commit().unwrap_err());
    assert!(
        e.contains("its first column, \"c1\", is always indexed"),
        "{e}"
    );
    // Into a version 5 database: refused, nothing stored.
    let old = common::create_as(&root.path().join("v5"), 5);
    let mut b = old.batch(BatchOptions::default()).unwrap();
    b.read_dump(text.as_bytes(), &common::spec("pairs.facts", Format::Facts))
        .unwrap();
    let e = common::chain(&b.commit().unwrap_err());
    assert!(e.contains("format version 6"), "{e}");
    assert!(old.stats().unwrap().relations.is_empty());
}

/// The postings bytes stored for relation `calls` in `store`'s files.
fn postings_bytes(store: &Store) -> u64 {
    store
        .space()
        .unwrap()
        .files
        .iter()
        .flat_map(|f| f.tables.iter())
        .filter(|t| t.name == "postings")
        .map(|t| t.stored)
        .sum()
}

#[test]
fn issue31_an_index_declared_for_a_stored_relation_is_built_and_dropped_by_a_batch() {
    let root = tempfile::tempdir().unwrap();
    let full = common::create(&root.path().join("full"));
    let part = common::create(&root.path().join("part"));
    // Stored on `src` alone, through a replacement (dead rows) and a retraction.
    for (text, replace) in [(edges(0, 3000), false), (edges(0, 900), true)] {
        batch(&full, false, &text, replace);
        batch(&part, true, &text, replace);
    }
    for store in [&full, &part] {
        store
            .retract(&["u5".to_owned()], BatchOptions::default())
            .unwrap();
    }
    let unindexed = postings_bytes(&part);
    // A batch that declares both columns and appends facts: its rows and the stored ones
    // get `dst`'s postings as it commits.
    let both = declaring("calls", &["src", "dst"]);
    let a = batch(&full, false, &edges(5000, 5400), false);
    let b = common::commit_dump(
        &part,
        both.clone(),
        "c.edges.tsv",
        Format::Edges,
        &edges(5000, 5400),
    );
    assert_eq!((a.new, a.duplicates), (b.new, b.duplicates));
    let exact = full.catalog().unwrap().relations["calls"].distinct[1];
    assert_eq!(
        b.indexes,
        vec![strata_store::IndexChange {
            relation: "calls".to_owned(),
            column: "dst".to_owned(),
            built: true,
            values: exact,
        }]
    );
    let rel = part.catalog().unwrap().relations["calls"].clone();
    assert!(rel.unindexed.is_empty());
    assert_eq!(
        rel.distinct,
        full.catalog().unwrap().relations["calls"].distinct
    );
    assert_eq!(lookups(&full), lookups(&part), "built");
    let report = part.check().unwrap();
    assert!(report.ok(), "{report}");
    assert!(postings_bytes(&part) > unindexed);
    // Declaring it as it is now changes nothing.
    let again = common::commit_dump(&part, both, "c.edges.tsv", Format::Edges, "");
    assert!(again.indexes.is_empty());
    // A batch of no facts that declares `src` alone drops `dst`'s postings.
    let dropped = part.batch(declared()).unwrap().commit().unwrap();
    assert_eq!(dropped.indexes.len(), 1);
    assert!(!dropped.indexes[0].built);
    assert_eq!(dropped.indexes[0].values, exact);
    assert_eq!(
        part.catalog().unwrap().relations["calls"].unindexed,
        vec![1]
    );
    assert_eq!(lookups(&full), lookups(&part), "dropped");
    assert!(part.check().unwrap().ok());
    // Later batches keep it as declared, and it can be built again.
    batch(&full, false, &edges(7000, 7100), false);
    batch(&part, false, &edges(7000, 7100), false);
    assert_eq!(lookups(&full), lookups(&part), "a batch after the drop");
    let rebuilt = part
        .batch(declaring("calls", &["src", "dst"]))
        .unwrap()
        .commit()
        .unwrap();
    assert!(rebuilt.indexes[0].built);
    assert_eq!(
        part.catalog().unwrap().relations["calls"].distinct,
        full.catalog().unwrap().relations["calls"].distinct
    );
    assert_eq!(lookups(&full), lookups(&part), "built again");
    assert!(part.check().unwrap().ok());
}

#[test]
fn issue31_an_index_built_in_a_tier_file_lands_there_with_the_batch() {
    let root = tempfile::tempdir().unwrap();
    let store = common::create(&root.path().join("db"));
    let options = BatchOptions {
        tier: "refs".to_owned(),
        ..declared()
    };
    common::commit_dump(
        &store,
        options,
        "c.edges.tsv",
        Format::Edges,
        &edges(0, 2000),
    );
    let seq = store.catalog().unwrap().seq;
    // A batch dropped before its commit leaves the relation as it was.
    {
        let b = store.batch(declaring("calls", &["src", "dst"])).unwrap();
        drop(b);
    }
    assert_eq!(
        store.catalog().unwrap().relations["calls"].unindexed,
        vec![1]
    );
    let done = store
        .batch(declaring("calls", &["src", "dst"]))
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(done.seq, seq + 1);
    assert_eq!(done.indexes.len(), 1);
    let rel = store.catalog().unwrap().relations["calls"].clone();
    assert_eq!((rel.tier.as_str(), rel.unindexed.len()), ("refs", 0));
    assert!(store.check().unwrap().ok());
    drop(store);
    // Reopened, the tier holds the postings the base file's catalog promises.
    let store = Store::open(root.path().join("db"), strata_store::OpenOptions::default()).unwrap();
    assert!(store.check().unwrap().ok());
    let snap = store.snapshot().unwrap();
    let g = snap.term(&Value::text("g5")).unwrap().unwrap();
    let mut n = 0;
    snap.lookup("calls", &[(1, g)], &mut |_| {
        n += 1;
        ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(n, (0..2000u32).filter(|i| i * 7 % 37 == 5).count());
}

/// `pairs(c1, c2)` as a `.facts` file: `n` pairs, the second column one of 37 values.
fn pairs(n: u32) -> String {
    (0..n).map(|i| format!("{i}\t{}\n", i * 7 % 37)).collect()
}

/// Options for a batch that stores `.facts` relations of `rows` facts or more on demand.
fn on_demand(rows: u64) -> BatchOptions {
    BatchOptions {
        on_demand_rows: rows,
        ..BatchOptions::default()
    }
}

/// The rows of `pairs` whose second column holds `v`, as the store looks them up.
fn by_second(store: &Store, v: i64) -> usize {
    let snap = store.snapshot().unwrap();
    let Some(t) = snap.term(&Value::Number(v as f64)).unwrap() else {
        return 0;
    };
    let mut n = 0;
    snap.lookup("pairs", &[(1, t)], &mut |_| {
        n += 1;
        ControlFlow::Continue(())
    })
    .unwrap();
    n
}

#[test]
fn issue31_a_large_facts_relation_indexes_its_later_columns_on_demand() {
    let root = tempfile::tempdir().unwrap();
    let store = common::create(&root.path().join("db"));
    // Below the threshold: every column indexed, as always.
    common::commit_dump(
        &store,
        on_demand(1000),
        "small.facts",
        Format::Facts,
        &pairs(999),
    );
    let small = store.catalog().unwrap().relations["small"].clone();
    assert!(small.unindexed.is_empty() && small.on_demand.is_empty());
    // At it: the first column only, the second on demand.
    common::commit_dump(
        &store,
        on_demand(1000),
        "pairs.facts",
        Format::Facts,
        &pairs(1000),
    );
    let rel = store.catalog().unwrap().relations["pairs"].clone();
    assert_eq!(
        (rel.unindexed.clone(), rel.on_demand.clone()),
        (vec![1], vec![1])
    );
    assert!(store.check().unwrap().ok());
    let stats = store.stats().unwrap().to_string();
    assert!(
        stats.contains("c2 (at most 37 distinct; indexed when first looked up)"),
        "{stats}"
    );
    // Edges, and a declared relation, are never on demand.
    let edges_text = edges(0, 1500);
    common::commit_dump(
        &store,
        on_demand(1000),
        "c.edges.tsv",
        Format::Edges,
        &edges_text,
    );
    assert!(
        store.catalog().unwrap().relations["calls"]
            .on_demand
            .is_empty()
    );
    let declared_text = format!("# index: c1\n{}", pairs(1000));
    common::commit_dump(
        &store,
        on_demand(10),
        "kept.facts",
        Format::Facts,
        &declared_text,
    );
    let kept = store.catalog().unwrap().relations["kept"].clone();
    assert_eq!((kept.unindexed.clone(), kept.on_demand.len()), (vec![1], 0));
    // A lookup by the second column answers before the build, reading the relation.
    let before = by_second(&store, 5);
    assert_eq!(before, (0..1000u32).filter(|i| i * 7 % 37 == 5).count());
    // Demanding a declared column, or a column indexed already, builds nothing: no batch.
    let seq = store.catalog().unwrap().seq;
    let none = store
        .build_demanded(&[("kept".to_owned(), vec![1]), ("small".to_owned(), vec![1])])
        .unwrap();
    assert!(none.is_empty());
    assert_eq!(store.catalog().unwrap().seq, seq);
    // Demanding the on-demand column builds it, once.
    let built = store
        .build_demanded(&[
            ("pairs".to_owned(), vec![1]),
            ("nothing".to_owned(), vec![3]),
        ])
        .unwrap();
    assert_eq!(built.len(), 1);
    assert_eq!((built[0].column.as_str(), built[0].values), ("c2", 37));
    let rel = store.catalog().unwrap().relations["pairs"].clone();
    assert!(rel.unindexed.is_empty() && rel.on_demand.is_empty());
    assert_eq!(rel.distinct, vec![1000, 37]);
    assert!(store.check().unwrap().ok());
    assert_eq!(by_second(&store, 5), before);
    assert!(
        store
            .build_demanded(&[("pairs".to_owned(), vec![1])])
            .unwrap()
            .is_empty()
    );
    // A declaration makes an on-demand relation a declared one.
    common::commit_dump(
        &store,
        on_demand(10),
        "more.facts",
        Format::Facts,
        &pairs(100),
    );
    assert_eq!(
        store.catalog().unwrap().relations["more"].on_demand,
        vec![1]
    );
    let done = store
        .batch(declaring("more", &["c1"]))
        .unwrap()
        .commit()
        .unwrap();
    assert!(done.indexes.is_empty());
    let more = store.catalog().unwrap().relations["more"].clone();
    assert_eq!((more.unindexed.clone(), more.on_demand.len()), (vec![1], 0));
    assert!(store.check().unwrap().ok());
}

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
    assert!(e.contains("--index calls=src,dst"), "{e}");
    let e = refused(with("calls", &["src", "callee"]), "a\tCALLS\tb\n");
    assert!(
        e.contains("has no column \"callee\"; its columns are src, dst"),
        "{e}"
    );
    let e = refused(with("imports", &["src"]), "a\tCALLS\tb\n");
    assert!(
        e.contains("names relation \"imports\", which this batch does not hold"),
        "{e}"
    );
    assert_eq!(store.stats().unwrap().relations.len(), 0, "nothing stored");
    // Stored with both columns indexed: a later declaration of one is refused, and the
    // other way round.
    batch(&store, false, "a\tCALLS\tb\n", false);
    let e = refused(declared(), "c\tCALLS\td\n");
    assert!(
        e.contains("relation \"calls\" is stored with an index on src, dst"),
        "{e}"
    );
    let other = common::create(&root.path().join("other"));
    batch(&other, true, "a\tCALLS\tb\n", false);
    let mut b = other.batch(with("calls", &["src", "dst"])).unwrap();
    b.read_dump(
        "c\tCALLS\td\n".as_bytes(),
        &common::spec("c.edges.tsv", Format::Edges),
    )
    .unwrap();
    let e = common::chain(&b.commit().unwrap_err());
    assert!(
        e.contains("relation \"calls\" is stored with an index on src,"),
        "{e}"
    );
    assert!(e.contains("c.edges.tsv:1"), "{e}");
    // Declaring it as stored is fine, even in a batch that does not touch it.
    batch(&other, true, "c\tCALLS\td\n", false);
    let mut b = other.batch(declared()).unwrap();
    b.read_dump(
        "x\tIMPORTS\ty\n".as_bytes(),
        &common::spec("i.edges.tsv", Format::Edges),
    )
    .unwrap();
    b.commit().unwrap();
    assert_eq!(store.stats().unwrap().relations[0].rows, 1);
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

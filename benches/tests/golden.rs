//! The benches crate's regression guard: deterministic figures of a fixed small ingest (facts
//! read and stored, rows per relation, bytes on disk; the string edges and their nodes also as
//! two batches and as one, the side-by-side suite's two-batch file), the rows a fixed set of
//! lookups answers, and each compare workload's answer count at its smallest size, and each
//! side-by-side workload's, compared with
//! `tests/golden/figures.json`. A figure that moves by more than 10% fails the test unless
//! the golden file is updated in the same change (`STRATA_UPDATE_GOLDEN=1 cargo test -p
//! strata-benches --test golden` rewrites it; say why in the commit message). Counts of
//! facts and answers must not move at all. Timings are never asserted here; the engine's
//! work counts are guarded by `eval/tests/golden/work.json`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use strata_benches::engines::{Engine, Prepared};
use strata_benches::sidebyside::{self, Case, Size};
use strata_benches::workload::{Kind, Scale};
use strata_benches::{
    LookupSample, dumps_in, edges_spec, facts_spec, ingest_file, lookup_count, open_store,
};
use strata_eval::FactSource;
use strata_store::BatchOptions;
use strata_store::dump::{DumpSpec, Format};

type Figures = BTreeMap<String, BTreeMap<String, f64>>;

/// Figures that are counts of facts, rows or answers: they must not move at all.
const EXACT: &[&str] = &[
    "facts_read",
    "new",
    "duplicates",
    "rows",
    "answers",
    "lookup_rows",
];

fn bytes_on_disk(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            bytes_on_disk(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

fn ingest_figures(root: &Path, now: &mut Figures) {
    let d = dumps_in(root, 50_000, 1).unwrap();
    for (name, path, spec) in [
        ("ingest_string_edges", &d.edges, edges_spec(&d.edges)),
        ("ingest_numeric_facts", &d.facts, facts_spec(&d.facts)),
    ] {
        let db = root.join(name);
        let s = ingest_file(&db, path, &spec).unwrap();
        let store = open_store(&db).unwrap();
        let snap = store.snapshot().unwrap();
        let mut rows = 0;
        for r in &s.relations {
            rows += snap.relation(r).unwrap().unwrap().rows;
        }
        let mut f = BTreeMap::from([
            ("facts_read".to_owned(), s.facts_read as f64),
            ("new".to_owned(), s.new as f64),
            ("duplicates".to_owned(), s.duplicates as f64),
            ("relations".to_owned(), s.relations.len() as f64),
            ("rows".to_owned(), rows as f64),
        ]);
        if s.relations.iter().any(|r| r == "calls") {
            let sample = LookupSample::take(&snap, "calls", 50).unwrap();
            let mut n = 0;
            for &t in &sample.src {
                n += lookup_count(&snap, "calls", &[(0, t)]).unwrap();
            }
            f.insert("lookup_rows".to_owned(), n as f64);
        }
        drop(snap);
        drop(store);
        f.insert("bytes_on_disk".to_owned(), bytes_on_disk(&db) as f64);
        now.insert(name.to_owned(), f);
    }
}

/// The string edges and then their nodes as two batches (two opens, as two `strata ingest`
/// calls), and both as one batch: rows and bytes on disk.
fn batch_figures(root: &Path, now: &mut Figures) {
    let d = dumps_in(root, 50_000, 1).unwrap();
    let nodes = root.join("code.nodes.tsv");
    sidebyside::write_nodes(&d.edges, &nodes).unwrap();
    let nodes_spec = DumpSpec {
        label: nodes.display().to_string(),
        format: Format::Nodes,
        relation: None,
        unit: None,
        checkout: None,
    };
    let two = root.join("two_batches");
    ingest_file(&two, &d.edges, &edges_spec(&d.edges)).unwrap();
    ingest_file(&two, &nodes, &nodes_spec).unwrap();
    let one = root.join("one_batch");
    {
        let store = open_store(&one).unwrap();
        let mut batch = store.batch(BatchOptions::default()).unwrap();
        batch.read_file(&d.edges, &edges_spec(&d.edges)).unwrap();
        batch.read_file(&nodes, &nodes_spec).unwrap();
        batch.commit().unwrap();
    }
    for (name, db) in [
        ("ingest_edges_then_nodes_two_batches", &two),
        ("ingest_edges_and_nodes_one_batch", &one),
    ] {
        let store = open_store(db).unwrap();
        let snap = store.snapshot().unwrap();
        let mut rows = 0;
        for r in snap.relations().unwrap() {
            rows += r.rows;
        }
        drop(snap);
        drop(store);
        now.insert(
            name.to_owned(),
            BTreeMap::from([
                ("rows".to_owned(), rows as f64),
                ("bytes_on_disk".to_owned(), bytes_on_disk(db) as f64),
            ]),
        );
    }
}

#[test]
fn figures_match_the_golden_file() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/figures.json");
    let tmp = tempfile::tempdir().unwrap();
    let mut now = Figures::new();
    ingest_figures(tmp.path(), &mut now);
    batch_figures(tmp.path(), &mut now);
    // The same ingest again gives the same counts, and files within a few pages: a batch
    // writes its new texts on a thread of its own and each relation's encoded changes as
    // they come back, into one transaction, so the order redb hands out pages in follows
    // the threads' timing (two runs on a loaded machine ended 4 KiB apart).
    let again = tempfile::tempdir().unwrap();
    let mut twice = Figures::new();
    ingest_figures(again.path(), &mut twice);
    batch_figures(again.path(), &mut twice);
    let keys = |f: &Figures| -> Vec<(String, Vec<String>)> {
        f.iter()
            .map(|(n, v)| (n.clone(), v.keys().cloned().collect()))
            .collect()
    };
    assert_eq!(
        keys(&now),
        keys(&twice),
        "the ingest figures differ between two runs"
    );
    for (name, figures) in &now {
        for (k, v) in figures {
            let again = twice[name][k];
            let slack = if k == "bytes_on_disk" {
                4.0 * 4096.0
            } else {
                0.0
            };
            assert!(
                (v - again).abs() <= slack,
                "{name}.{k} differs between two runs: {v} and {again}"
            );
        }
    }
    for kind in Kind::ALL {
        let w = kind.make(Scale::Smoke, 0);
        let n = Prepared::new(Engine::strata(1, false), kind, &w)
            .unwrap()
            .run()
            .unwrap();
        now.insert(
            format!("compare_smoke_{}", kind.name()),
            BTreeMap::from([("answers".to_owned(), n as f64)]),
        );
    }
    for case in Case::ALL {
        let input = case.input(Size::Smoke, 0);
        let n = case
            .floor(&input.pairs)
            .map_or_else(|| sidebyside_count(case, &input.pairs), Ok)
            .unwrap();
        now.insert(
            format!("sidebyside_smoke_{}", case.name()),
            BTreeMap::from([
                ("answers".to_owned(), n as f64),
                ("rows".to_owned(), input.pairs.len() as f64),
            ]),
        );
    }
    if std::env::var_os("STRATA_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&now).unwrap() + "\n").unwrap();
        return;
    }
    let golden: Figures = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut moved = Vec::new();
    for (name, figures) in &now {
        let Some(old) = golden.get(name) else {
            moved.push(format!("{name}: not in the golden file"));
            continue;
        };
        for (k, v) in figures {
            let was = old.get(k).copied().unwrap_or(f64::NAN);
            let limit = if EXACT.contains(&k.as_str()) {
                0.0
            } else {
                0.10
            };
            if (v - was).abs() > limit * was.abs() || was.is_nan() {
                moved.push(format!("{name}.{k}: {was} -> {v}"));
            }
        }
    }
    for name in golden.keys().filter(|n| !now.contains_key(*n)) {
        moved.push(format!("{name}: in the golden file but no longer measured"));
    }
    assert!(
        moved.is_empty(),
        "figures moved (counts at all, sizes by more than 10%; update tests/golden/figures.json \
         with STRATA_UPDATE_GOLDEN=1 if intended, and say why in the commit):\n{}",
        moved.join("\n")
    );
}

/// A side-by-side workload's count through datafrog (same generation has no floor).
fn sidebyside_count(case: Case, pairs: &[(u32, u32)]) -> strata_benches::BenchResult<u64> {
    let w = strata_benches::workload::Workload {
        name: case.name().to_owned(),
        relations: vec![(case.relation().to_owned(), pairs.to_vec())],
        program: String::new(),
    };
    strata_benches::engines::run_native(Engine::Datafrog, case.kind(), &w)
}

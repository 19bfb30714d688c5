//! SCIP indexes written by real indexers (scip-typescript over rxjs 7.8.2's sources,
//! scip-python over packaging 24.2's), made by `store/tests/scip/make-indexes.sh` into
//! `target/scip/`, ingested into one store and compared with an independent reading of the
//! same bytes (`scip/reading.rs`): documents, definitions and references (with their lines),
//! `uses`, the file-level dependency closure, and the bundled `code` module's answers.
//!
//! Without the indexes the test is skipped with a message, unless `CI` is set: then it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "scip/reading.rs"]
mod reading;
#[path = "scip/support.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use strata_store::Store;
use support::*;

type Pairs = BTreeSet<(String, String)>;

const INDEXES: [&str; 2] = ["rxjs", "packaging"];

fn index_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/scip")
}

/// The indexes' bytes, or `None` (with a loud message) when they were not made and this is
/// not CI.
fn indexes() -> Option<Vec<(String, Vec<u8>)>> {
    let dir = index_dir();
    let mut out = Vec::new();
    for name in INDEXES {
        let path = dir.join(format!("{name}.scip"));
        match std::fs::read(&path) {
            Ok(bytes) => out.push((name.to_owned(), bytes)),
            Err(e) if std::env::var_os("CI").is_some() => panic!(
                "{}: {e}; CI must run store/tests/scip/make-indexes.sh before the tests",
                path.display()
            ),
            Err(_) => {
                // Past the harness's capture (it takes only the print macros), so a plain
                // `cargo test` shows the skip (issue 32).
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "\n*** SKIPPED: {} is missing; run store/tests/scip/make-indexes.sh \
                     (needs npm, pip and git) to test SCIP ingest with real indexers ***\n",
                    path.display()
                );
                return None;
            }
        }
    }
    Some(out)
}

/// What the independent reading expects of the store.
#[derive(Default)]
struct Expected {
    documents: BTreeSet<String>,
    defines: Pairs,
    references: Pairs,
    definition_at: BTreeSet<(String, String, i64)>,
    reference_at: BTreeSet<(String, String, i64)>,
    uses: Pairs,
    implements: Pairs,
}

fn global(s: &str) -> bool {
    !s.is_empty() && !s.starts_with("local ")
}

fn expect(indexes: &[(String, Vec<u8>)]) -> Expected {
    let mut x = Expected::default();
    for (name, bytes) in indexes {
        let r = reading::read(bytes);
        let repo = r
            .project_root
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap();
        assert_eq!(repo, name, "the index's project root names its repository");
        x.implements.extend(r.external_implements.iter().cloned());
        for doc in &r.docs {
            let path = format!("{repo}/{}", doc.path);
            x.documents.insert(path.clone());
            x.implements.extend(doc.implements.iter().cloned());
            let mut defs = Vec::new();
            for o in doc.occs.iter().filter(|o| global(&o.symbol)) {
                let line = o.start.0 + 1;
                if o.roles & 1 != 0 {
                    x.defines.insert((path.clone(), o.symbol.clone()));
                    x.definition_at
                        .insert((o.symbol.clone(), path.clone(), line));
                    if let Some(e) = o.enclosing {
                        defs.push((e, &o.symbol));
                    }
                } else {
                    x.references.insert((path.clone(), o.symbol.clone()));
                    x.reference_at
                        .insert((path.clone(), o.symbol.clone(), line));
                }
            }
            // uses: the smallest enclosing range holding the reference, by brute force.
            for o in doc
                .occs
                .iter()
                .filter(|o| global(&o.symbol) && o.roles & 1 == 0)
            {
                let inner = defs
                    .iter()
                    .filter(|((s, e), _)| *s <= o.start && o.start < *e)
                    .max_by(|a, b| a.0.0.cmp(&b.0.0).then(b.0.1.cmp(&a.0.1)));
                if let Some((_, from)) = inner {
                    x.uses.insert(((*from).clone(), o.symbol.clone()));
                }
            }
        }
    }
    x.implements.retain(|(s, t)| global(s) && global(t));
    x
}

fn pairs(rows: Vec<Vec<String>>) -> Pairs {
    rows.into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect()
}

fn triples(rows: Vec<Vec<String>>, line_at: usize) -> BTreeSet<(String, String, i64)> {
    rows.into_iter()
        .map(|r| {
            let line: i64 = r[line_at].parse().unwrap();
            let rest: Vec<&String> = (0..3).filter(|&i| i != line_at).map(|i| &r[i]).collect();
            (rest[0].clone(), rest[1].clone(), line)
        })
        .collect()
}

/// Runs a two-column program against the store with the `code` module.
fn answer(store: &Store, program: &str) -> Pairs {
    run(store, program)
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect()
}

/// Runs a one-column program with the first column bound to `first`, as pairs.
fn answer_from(store: &Store, first: &str, program: &str) -> Pairs {
    run(store, program)
        .into_iter()
        .map(|r| (first.to_owned(), r[0].clone()))
        .collect()
}

/// The transitive closure of `edges` from each of `from`.
fn closure(edges: &Pairs, from: impl IntoIterator<Item = String>) -> Pairs {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
    }
    let mut out = Pairs::new();
    for start in from {
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut todo: Vec<&str> = next.get(start.as_str()).cloned().unwrap_or_default();
        while let Some(n) = todo.pop() {
            if seen.insert(n) {
                todo.extend(next.get(n).into_iter().flatten());
            }
        }
        out.extend(seen.into_iter().map(|n| (start.clone(), n.to_owned())));
    }
    out
}

fn flip(p: &Pairs) -> Pairs {
    p.iter().map(|(a, b)| (b.clone(), a.clone())).collect()
}

#[test]
fn real_indexes_match_an_independent_reading() {
    let Some(indexes) = indexes() else {
        return;
    };
    let x = expect(&indexes);
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut batch = store.batch(Default::default()).unwrap();
    for (name, bytes) in &indexes {
        batch
            .read_dump(&bytes[..], &spec(&format!("{name}.scip"), None))
            .unwrap();
    }
    batch.commit().unwrap();

    let documents: BTreeSet<String> = rows(&store, "document")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(documents, x.documents);
    for name in INDEXES {
        assert!(
            documents
                .iter()
                .filter(|d| d.starts_with(&format!("{name}/")))
                .count()
                >= 10,
            "{name}: too few documents to test anything"
        );
    }
    assert_eq!(pairs(rows(&store, "defines")), x.defines, "defines");
    assert_eq!(
        pairs(rows(&store, "references")),
        x.references,
        "references"
    );
    assert_eq!(triples(rows(&store, "definition_at"), 2), x.definition_at);
    assert_eq!(triples(rows(&store, "reference_at"), 2), x.reference_at);
    assert_eq!(pairs(rows(&store, "uses")), x.uses, "uses");
    assert_eq!(
        pairs(rows(&store, "implements")),
        x.implements,
        "implements"
    );
    eprintln!(
        "{} documents, {} defines, {} references, {} definition_at, {} reference_at, {} uses, \
         {} implements",
        x.documents.len(),
        x.defines.len(),
        x.references.len(),
        x.definition_at.len(),
        x.reference_at.len(),
        x.uses.len(),
        x.implements.len()
    );

    // The file-level dependency closure.
    let mut step = Pairs::new();
    let mut definers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (path, sym) in &x.defines {
        definers.entry(sym).or_default().push(path);
    }
    for (a, sym) in &x.references {
        for b in definers.get(sym.as_str()).into_iter().flatten() {
            if a != b {
                step.insert((a.clone(), (*b).to_owned()));
            }
        }
    }
    let depends_on = closure(&step, x.documents.iter().cloned());
    assert!(depends_on.len() > 1000, "{} pairs", depends_on.len());
    assert_eq!(
        answer(&store, "code.depends_on(?a, ?b) => ?a, ?b"),
        depends_on,
        "code.depends_on"
    );
    eprintln!("dependency closure: {} pairs", depends_on.len());
    let dependents = flip(&depends_on);
    assert_eq!(
        answer(&store, "code.dependents(?b, ?a) => ?b, ?a"),
        dependents
    );
    // Bound goals, as the pack's examples ask them.
    for doc in [
        "rxjs/src/internal/Observable.ts",
        "packaging/packaging/version.py",
    ] {
        let mine: Pairs = dependents
            .iter()
            .filter(|(b, _)| b == doc)
            .cloned()
            .collect();
        assert!(!mine.is_empty(), "{doc} has no dependents");
        assert_eq!(
            answer_from(
                &store,
                doc,
                &format!("code.dependents(\"{doc}\", ?a) => ?a")
            ),
            mine
        );
        let mut impact = mine.clone();
        impact.insert((doc.to_owned(), doc.to_owned()));
        assert_eq!(
            answer_from(&store, doc, &format!("code.impact(\"{doc}\", ?p) => ?p")),
            impact,
            "code.impact({doc})"
        );
    }

    // uses as the independent reading has it (call questions: scip_calls.rs).
    assert_eq!(answer(&store, "uses(?s, ?c) => ?s, ?c"), x.uses);
    let implementations = closure(
        &flip(&x.implements),
        x.implements.iter().map(|p| p.1.clone()),
    );
    assert_eq!(
        answer(&store, "code.implementations(?t, ?s) => ?t, ?s"),
        implementations
    );
    assert_eq!(
        answer(&store, "code.defined_in(?s, ?p) => ?s, ?p"),
        flip(&x.defines)
    );
    eprintln!(
        "uses {} pairs, implementations {}",
        x.uses.len(),
        implementations.len()
    );
}

//! Fresh after every commit: a new index of a repository read with `--replace` after the old
//! one leaves the store as a fresh ingest of the new index would, rewriting only what changed,
//! and leaves other repositories alone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "scip/support.rs"]
mod support;

use proptest::prelude::*;
use protobuf::{Message, MessageField};
use scip::types::{Document, Index, Metadata, Occurrence};
use strata_store::scip::{DocumentChanges, RELATIONS};
use strata_store::{BatchOptions, Store};
use support::*;

/// One occurrence as generated: symbol number, definition or not, line, enclosing length.
type Occ = (u8, bool, u8, u8);

fn symbol(n: u8) -> String {
    format!("s npm p 1 f{}/x{}().", n % 4, n)
}

fn doc(path: &str, occs: &[Occ]) -> Document {
    Document {
        relative_path: path.to_owned(),
        language: "TypeScript".to_owned(),
        occurrences: occs
            .iter()
            .map(|&(s, def, line, span)| Occurrence {
                range: vec![i32::from(line), 0, 3],
                symbol: if s % 7 == 6 {
                    format!("local {s}")
                } else {
                    symbol(s)
                },
                symbol_roles: i32::from(def),
                enclosing_range: if def && span > 0 {
                    vec![i32::from(line), 0, i32::from(line) + i32::from(span), 0]
                } else {
                    Vec::new()
                },
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn index(root: &str, docs: &[Document]) -> Vec<u8> {
    Index {
        metadata: MessageField::some(Metadata {
            project_root: root.to_owned(),
            ..Default::default()
        }),
        documents: docs.to_vec(),
        ..Default::default()
    }
    .write_to_bytes()
    .unwrap()
}

fn occs() -> impl Strategy<Value = Vec<Occ>> {
    prop::collection::vec((0u8..20, any::<bool>(), 0u8..30, 0u8..8), 0..12)
}

/// Reads one index in a batch; answers the batch's document counts.
fn read(store: &Store, bytes: &[u8], replace: bool) -> DocumentChanges {
    let mut batch = store
        .batch(BatchOptions {
            replace,
            ..BatchOptions::default()
        })
        .unwrap();
    batch.read_dump(bytes, &spec("idx.scip", None)).unwrap();
    let changes = batch.documents();
    batch.commit().unwrap();
    changes
}

fn everything(store: &Store) -> Vec<(&'static str, Vec<Vec<String>>)> {
    RELATIONS
        .iter()
        .map(|r| (r.name, rows(store, r.name)))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn replacing_with_a_new_index_equals_a_fresh_ingest(
        docs in prop::collection::vec(occs(), 3..6),
        changed in occs(),
        added in occs(),
        which in 0usize..6,
    ) {
        let n = docs.len();
        let (change, remove) = (which % n, (which + 1) % n);
        let old: Vec<Document> =
            docs.iter().enumerate().map(|(i, o)| doc(&format!("src/d{i}.ts"), o)).collect();
        let mut new: Vec<Document> = old.clone();
        new[change] = doc(&format!("src/d{change}.ts"), &changed);
        new.remove(remove);
        new.push(doc("src/added.ts", &added));
        let other = index("file:///x/other", &old);

        let dir = tempfile::tempdir().unwrap();
        let store = create(dir.path());
        read(&store, &other, false);
        read(&store, &index("file:///x/repo", &old), false);
        let changes = read(&store, &index("file:///x/repo", &new), true);

        let fresh_dir = tempfile::tempdir().unwrap();
        let fresh = create(fresh_dir.path());
        read(&fresh, &other, false);
        read(&fresh, &index("file:///x/repo", &new), false);
        prop_assert_eq!(everything(&store), everything(&fresh));

        let same = old[change] == new[if change > remove { change - 1 } else { change }];
        prop_assert_eq!(
            changes,
            DocumentChanges {
                read: n as u64,
                unchanged: (n - 2) as u64 + u64::from(same),
                replaced: u64::from(!same),
                added: 1,
                removed: 1,
                repaired: 0,
                skipped: Vec::new(),
                merged: 0,
            }
        );
    }
}

#[test]
fn an_unchanged_index_rewrites_nothing() {
    let docs: Vec<Document> = (0..4)
        .map(|i| {
            doc(
                &format!("src/d{i}.ts"),
                &[(i, true, 1, 3), (i + 1, false, 2, 0)],
            )
        })
        .collect();
    let bytes = index("file:///x/repo", &docs);
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    read(&store, &bytes, true);
    let before = everything(&store);
    let mut batch = store
        .batch(BatchOptions {
            replace: true,
            ..BatchOptions::default()
        })
        .unwrap();
    batch
        .read_dump(&bytes[..], &spec("idx.scip", None))
        .unwrap();
    assert_eq!(
        batch.documents().to_string(),
        "4 documents unchanged, 0 replaced, 0 added, 0 removed"
    );
    let summary = batch.commit().unwrap();
    assert_eq!(
        (summary.facts_read, summary.new, summary.removed),
        (0, 0, 0)
    );
    assert_eq!(everything(&store), before);
}

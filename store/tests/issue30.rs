//! Issue 30: SCIP ingest is total and safe. Documents of one path merge deterministically
//! (a repeated `--replace` says "unchanged" every time and equals a fresh ingest), an index
//! with no documents never retracts a repository unless allowed, paths are normalized and
//! refused when they leave the repository, a project root names a repository only by the
//! rules of `--repo`, and a document with positions out of range is left out, named.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "scip/support.rs"]
mod support;

use proptest::prelude::*;
use protobuf::{Message, MessageField};
use scip::types::{Document, Index, Metadata, Occurrence};
use strata_store::scip::{DocumentChanges, RELATIONS};
use strata_store::{BatchOptions, Store, StoreError};
use support::*;

fn doc(path: &str, symbols: &[u8]) -> Document {
    Document {
        relative_path: path.to_owned(),
        language: "TypeScript".to_owned(),
        occurrences: symbols
            .iter()
            .enumerate()
            .map(|(i, &s)| Occurrence {
                range: vec![i as i32, 0, 3],
                symbol: format!("s npm p 1 f/x{s}()."),
                symbol_roles: i32::from(s % 2 == 0),
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

/// Reads one index in a batch (replacing or not, allowing an empty index or not) and
/// commits it; answers the batch's document counts.
fn read_with(
    store: &Store,
    bytes: &[u8],
    replace: bool,
    allow_empty: bool,
) -> Result<DocumentChanges, StoreError> {
    let mut batch = store.batch(BatchOptions {
        replace,
        allow_empty,
        ..BatchOptions::default()
    })?;
    batch.read_dump(bytes, &spec("idx.scip", None))?;
    let changes = batch.documents();
    batch.commit()?;
    Ok(changes)
}

fn read(store: &Store, bytes: &[u8], replace: bool) -> DocumentChanges {
    read_with(store, bytes, replace, false).unwrap()
}

fn everything(store: &Store) -> Vec<(&'static str, Vec<Vec<String>>)> {
    RELATIONS
        .iter()
        .map(|r| (r.name, rows(store, r.name)))
        .collect()
}

fn defined(store: &Store) -> Vec<Vec<String>> {
    rows(store, "defines")
}

fn assert_checks(store: &Store) {
    let report = store.check().unwrap();
    assert!(report.ok(), "{report}");
}

#[test]
fn issue_30_duplicate_paths_merge_and_replace_is_idempotent() {
    let bytes = index(
        "file:///x/repo",
        &[
            doc("src/a.ts", &[0, 1]),
            doc("src/b.ts", &[2]),
            doc("src/a.ts", &[4, 5]),
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let first = read(&store, &bytes, true);
    assert_eq!(
        first.to_string(),
        "0 documents unchanged, 0 replaced, 2 added, 0 removed, 1 document merged into an \
         earlier one of the same path"
    );
    // Both documents' facts are stored under the one path.
    assert_eq!(
        defined(&store),
        vec![
            vec!["repo/src/a.ts".to_owned(), "s npm p 1 f/x0().".to_owned()],
            vec!["repo/src/a.ts".to_owned(), "s npm p 1 f/x4().".to_owned()],
            vec!["repo/src/b.ts".to_owned(), "s npm p 1 f/x2().".to_owned()],
        ]
    );
    let stored = everything(&store);
    for _ in 0..4 {
        let again = read(&store, &bytes, true);
        assert_eq!(
            again.to_string(),
            "2 documents unchanged, 0 replaced, 0 added, 0 removed, 1 document merged into an \
             earlier one of the same path"
        );
        assert_eq!(everything(&store), stored);
        assert_checks(&store);
    }
    // As a fresh ingest of the index.
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = create(fresh_dir.path());
    assert_eq!(
        read(&fresh, &bytes, false).to_string(),
        "3 documents read, 1 document merged into an earlier one of the same path"
    );
    assert_eq!(everything(&fresh), stored);
}

#[test]
fn issue_30_a_changed_or_dropped_duplicate_replaces_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let merged = [doc("a.ts", &[0]), doc("a.ts", &[2]), doc("a.ts", &[4])];
    read(&store, &index("file:///x/repo", &merged), true);
    let cases: Vec<Vec<Document>> = vec![
        // The last copy changed.
        vec![doc("a.ts", &[0]), doc("a.ts", &[2]), doc("a.ts", &[6])],
        // A copy dropped: the path is read again from the other two, held back.
        vec![doc("a.ts", &[0]), doc("a.ts", &[6])],
        // Back to three, in another order.
        vec![doc("a.ts", &[4]), doc("a.ts", &[0]), doc("a.ts", &[2])],
        // One copy left, a new one added.
        vec![doc("a.ts", &[2]), doc("b.ts", &[8])],
        // The same copy twice.
        vec![doc("a.ts", &[2]), doc("a.ts", &[2]), doc("b.ts", &[8])],
    ];
    for docs in &cases {
        let bytes = index("file:///x/repo", docs);
        read(&store, &bytes, true);
        let fresh_dir = tempfile::tempdir().unwrap();
        let fresh = create(fresh_dir.path());
        read(&fresh, &bytes, false);
        assert_eq!(everything(&store), everything(&fresh), "{docs:?}");
        assert_checks(&store);
        let again = read(&store, &bytes, true);
        assert_eq!(again.replaced + again.added + again.removed, 0, "{again}");
        assert_eq!(everything(&store), everything(&fresh));
    }
}

#[test]
fn issue_30_empty_index_retracts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    read(
        &store,
        &index("file:///x/repo", &[doc("a.ts", &[0]), doc("b.ts", &[2])]),
        true,
    );
    let before = everything(&store);
    let mut batch = store
        .batch(BatchOptions {
            replace: true,
            ..BatchOptions::default()
        })
        .unwrap();
    // No bytes at all: no repository is known, nothing to retract.
    batch.read_dump(&b""[..], &spec("e.scip", None)).unwrap();
    assert_eq!(batch.documents().removed, 0);
    batch.commit().unwrap();
    assert_eq!(everything(&store), before);
    // No bytes, the repository named: refused.
    let mut batch = store
        .batch(BatchOptions {
            replace: true,
            ..BatchOptions::default()
        })
        .unwrap();
    let e = batch
        .read_dump(&b""[..], &spec("e.scip", Some("repo")))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "e.scip: the index holds no documents of repository repo, so --replace would retract \
         all 2 of its stored documents; nothing was changed. If the repository really has no \
         documents now, ingest again with --allow-empty"
    );
    drop(batch);
    // Only metadata: refused the same way.
    let meta_only = index("file:///x/repo", &[]);
    let e = read_with(&store, &meta_only, true, false).unwrap_err();
    assert!(e.to_string().contains("holds no documents"), "{e}");
    // Only documents that are left out: refused, naming them.
    let bad = index("file:///x/repo", &[doc("../a.ts", &[0]), doc("", &[1])]);
    let e = read_with(&store, &bad, true, false).unwrap_err();
    assert!(
        e.to_string()
            .contains("holds no document that can be read (2 left out)"),
        "{e}"
    );
    assert_eq!(everything(&store), before);
    assert_checks(&store);
    // Allowed: the repository's documents are retracted.
    let changes = read_with(&store, &meta_only, true, true).unwrap();
    assert_eq!(
        changes.to_string(),
        "0 documents unchanged, 0 replaced, 0 added, 2 removed"
    );
    assert!(rows(&store, "document").is_empty());
}

#[test]
fn issue_30_paths_are_normalized_and_refused_when_they_leave() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let docs = [
        doc("src//a.ts", &[0]),
        doc("./src/./a.ts", &[2]),
        doc("src/x/../b.ts", &[4]),
        doc("../../etc/passwd", &[6]),
        doc("src/../../x.ts", &[8]),
        doc("/abs/path.py", &[10]),
        doc("//abs/path.py", &[12]),
        doc("a\0b.ts", &[14]),
        doc("", &[16]),
        doc("./", &[18]),
    ];
    let changes = read(&store, &index("file:///x/r", &docs), true);
    let skipped: Vec<(u64, &str)> = changes
        .skipped
        .iter()
        .map(|s| (s.number, s.why.as_str()))
        .collect();
    assert_eq!(
        skipped,
        vec![
            (4, "its path leaves the repository"),
            (5, "its path leaves the repository"),
            (6, "its path is absolute"),
            (7, "its path is absolute"),
            (8, "its path holds a NUL byte"),
            (9, "its path is empty"),
            (10, "its path is empty"),
        ]
    );
    assert_eq!((changes.added, changes.merged), (2, 1));
    let paths: Vec<String> = rows(&store, "document")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(paths, vec!["r/src/a.ts", "r/src/b.ts"]);
}

#[test]
fn issue_30_project_root_follows_the_repo_rules() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    for root in ["file:///x/..", "file:///x/.", "file:///", "file:"] {
        let e = read_with(&store, &index(root, &[doc("a.ts", &[0])]), false, false).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "the index's metadata.project_root {root:?} names no repository"
            )),
            "{root}: {e}"
        );
    }
    // Trailing slashes are not a segment.
    read(
        &store,
        &index("file:///x/good//", &[doc("a.ts", &[0])]),
        false,
    );
    assert_eq!(rows(&store, "document")[0][0], "good/a.ts");
    // A repository given to the reader follows the same rules.
    for name in ["..", ".", "a/b", "a\0"] {
        let mut batch = store.batch(BatchOptions::default()).unwrap();
        let e = batch
            .read_dump(
                &index("file:///x/r", &[doc("a.ts", &[0])])[..],
                &spec("idx.scip", Some(name)),
            )
            .unwrap_err();
        assert!(
            e.to_string().contains("cannot name a repository"),
            "{name:?}: {e}"
        );
    }
    assert!(!rows(&store, "document").iter().any(|r| r[0].contains("..")));
}

#[test]
fn issue_30_positions_out_of_range_skip_their_document() {
    let mut negative = doc("neg.ts", &[0]);
    negative.occurrences[0].range = vec![-4, 0, 3];
    let mut backwards = doc("back.ts", &[0]);
    backwards.occurrences[0].range = vec![5, 2, 3, 0];
    let mut wrong_len = doc("len.ts", &[0]);
    wrong_len.occurrences[0].range = vec![1, 2];
    let mut enclosing = doc("enc.ts", &[0, 2]);
    enclosing.occurrences[1].enclosing_range = vec![1, 0, -1, 0];
    let docs = [
        doc("good.ts", &[0]),
        negative,
        backwards,
        wrong_len,
        enclosing,
        doc("fine.ts", &[2]),
    ];
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let changes = read(&store, &index("file:///x/r", &docs), false);
    let skipped: Vec<String> = changes
        .skipped
        .iter()
        .map(|s| format!("{} {}: {}", s.number, s.path, s.why))
        .collect();
    assert_eq!(
        skipped,
        vec![
            "2 neg.ts: occurrence 1 has a negative position in its range (line -4, character \
             0 to line -4, character 3)",
            "3 back.ts: occurrence 1's range ends (line 3, character 0) before it starts (line \
             5, character 2)",
            "4 len.ts: occurrence 1 has a range of 2 numbers, not 3 or 4",
            "5 enc.ts: occurrence 2 has a negative position in its enclosing range (line 1, \
             character 0 to line -1, character 0)",
        ]
    );
    let paths: Vec<String> = rows(&store, "document")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(paths, vec!["r/fine.ts", "r/good.ts"]);
    assert!(
        rows(&store, "definition_at")
            .iter()
            .all(|r| !r[2].starts_with('-'))
    );
    // Replacing with the refused document retracts the stored copy of its path, as a fresh
    // ingest of the index would not hold it.
    let mut bad_good = doc("good.ts", &[0]);
    bad_good.occurrences[0].range = vec![-1, 0, 3];
    let changes = read(
        &store,
        &index("file:///x/r", &[bad_good, doc("fine.ts", &[2])]),
        true,
    );
    assert_eq!(
        (changes.unchanged, changes.removed, changes.skipped.len()),
        (1, 1, 1)
    );
    let paths: Vec<String> = rows(&store, "document")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(paths, vec!["r/fine.ts"]);
    assert_checks(&store);
}

/// A document drawn from a few paths (so that indexes repeat paths) and a few symbols.
fn docs() -> impl Strategy<Value = Vec<(u8, Vec<u8>)>> {
    prop::collection::vec((0u8..4, prop::collection::vec(0u8..6, 0..3)), 0..7)
}

fn build(docs: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let docs: Vec<Document> = docs
        .iter()
        .map(|(p, s)| doc(&format!("d{p}.ts"), s))
        .collect();
    index("file:///x/repo", &docs)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever paths repeat, a replacing read equals a fresh ingest of the new index, and
    /// reading it again changes nothing and says so.
    #[test]
    fn issue_30_replacing_with_duplicates_equals_a_fresh_ingest(old in docs(), new in docs()) {
        let (old, new) = (build(&old), build(&new));
        let dir = tempfile::tempdir().unwrap();
        let store = create(dir.path());
        read(&store, &old, true);
        // An empty new index is refused (unless allowed), so allow it here.
        read_with(&store, &new, true, true).unwrap();
        let fresh_dir = tempfile::tempdir().unwrap();
        let fresh = create(fresh_dir.path());
        read(&fresh, &new, false);
        prop_assert_eq!(everything(&store), everything(&fresh));
        let again = read_with(&store, &new, true, true).unwrap();
        prop_assert_eq!(again.replaced + again.added + again.removed, 0, "{}", again);
        prop_assert_eq!(again.unchanged, rows(&store, "document").len() as u64);
        prop_assert_eq!(everything(&store), everything(&fresh));
    }
}

//! The tests of the persistent index: it answers as the scan does (random dictionaries,
//! the generated code graph), it follows batches, and a damaged or stale file is rebuilt.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use strata_store::dump::{DumpSpec, Format};
use strata_store::layout::DEFAULT_TIER;
use strata_store::{BatchOptions, OpenOptions, Store};

use super::file::{self, IndexFile, Texts};
use super::*;

/// A search's answer, comparable: each match's id, text, kind, distance and alignment,
/// and the total.
type Answer = (Vec<(u32, String, Kind, u32, bool)>, usize);

fn scanned(texts: &[String], q: &str, upto: u32, keep: usize) -> Answer {
    let mut ix = Index::new();
    for t in texts {
        ix.push(t);
    }
    let (found, total) = ix.search(q, upto, keep);
    let found = found
        .into_iter()
        .map(|m| {
            (
                m.id,
                ix.text(m.id).unwrap().to_owned(),
                m.kind,
                m.distance,
                m.aligned,
            )
        })
        .collect();
    (found, total)
}

fn indexed(file: &IndexFile, q: &str, upto: u32, keep: usize) -> Answer {
    let Some(query) = Query::new(q) else {
        return (Vec::new(), 0);
    };
    let found = file.search(&query, upto, keep).unwrap();
    let got = found
        .matches
        .iter()
        .map(|m| {
            let t = found.texts[&m.id].clone();
            (m.id, t, m.kind, m.distance, m.aligned)
        })
        .collect();
    (got, found.total)
}

fn write(dir: &std::path::Path, texts: &[String]) -> IndexFile {
    let mut t = Texts::default();
    for s in texts {
        t.push(s);
    }
    let path = dir.join(file::file_name(texts.len() as u32));
    file::write(&path, &t).unwrap();
    IndexFile::open(&path).unwrap()
}

/// Checks the index against the scan on `texts` for `queries`, keeping all, a few, none,
/// and hiding the newest texts.
fn agrees(texts: &[String], queries: &[String]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), texts);
    let n = texts.len() as u32;
    for q in queries {
        for (upto, keep) in [
            (n, usize::MAX),
            (n, 3),
            (n, 0),
            (n / 2, 5),
            (n / 2, usize::MAX),
        ] {
            prop_assert_eq!(
                indexed(&f, q, upto, keep),
                scanned(texts, q, upto, keep),
                "query {:?}, upto {}, keep {}",
                q,
                upto,
                keep
            );
        }
    }
    Ok(())
}

/// Names built from a small alphabet of words, separators, case and a few non-ASCII
/// letters (two whose lowercase changes length), so queries hit often.
fn name() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        Just("parse"),
        Just("Parse"),
        Just("args"),
        Just("ARGS"),
        Just("http"),
        Just("HTTPServer"),
        Just("arse"),
        Just("pars"),
        Just("a"),
        Just("3"),
        Just("0"),
        Just("src"),
        Just("sync"),
        Just("é"),
        Just("Σa"),
        Just("İx"),
    ];
    let sep = prop_oneof![
        Just(""),
        Just("_"),
        Just("/"),
        Just("#"),
        Just(":"),
        Just("."),
        Just("-"),
        Just(" "),
    ];
    prop::collection::vec((part, sep), 1..5)
        .prop_map(|v| v.into_iter().map(|(p, s)| format!("{p}{s}")).collect())
}

/// Queries: names, slices of names starting mid-word, misspellings and word lists.
fn queries(texts: &[String], mut seed: u64) -> Vec<String> {
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n.max(1) as u64) as usize
    };
    let mut out = vec![
        "parse args".to_owned(),
        "arse_ar".to_owned(),
        "prase".to_owned(),
        "http server".to_owned(),
        "src/sync".to_owned(),
        "/".to_owned(),
        "é".to_owned(),
        "σa".to_owned(),
        "a 3 parse sync http args src pars arse".to_owned(),
        "zzz".to_owned(),
    ];
    for _ in 0..12 {
        let t = &texts[next(texts.len())];
        let chars: Vec<char> = t.chars().collect();
        let a = next(chars.len());
        let b = a + next(chars.len() - a + 1);
        let mut q: Vec<char> = chars[a..b].to_vec();
        if q.len() > 3 && next(3) == 0 {
            q.swap(1, 2);
        }
        let q: String = q.into_iter().collect();
        out.push(q.to_uppercase());
        out.push(q);
    }
    out
}

#[test]
fn the_index_agrees_with_the_scan_on_random_dictionaries() {
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 48,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let dict = prop::collection::btree_set(name(), 1..60);
    runner
        .run(&(dict, any::<u64>()), |(dict, seed)| {
            let texts: Vec<String> = dict.into_iter().collect();
            let qs = queries(&texts, seed | 1);
            agrees(&texts, &qs)
        })
        .unwrap();
}

#[test]
fn the_index_agrees_with_the_scan_on_the_code_graph() {
    let ix = super::tests::codegraph();
    let texts: Vec<String> = (1..=ix.len())
        .map(|id| ix.text(id).unwrap().to_owned())
        .collect();
    let qs: Vec<String> = [
        "parse_entry_3",
        "parse entry",
        "prase_entry",
        "lexer table",
        "sync_0/src/http",
        "the config loader of the http client",
        "zq",
        "src",
        "rse_en",
        "ync_0/src/ht",
        "Client",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    agrees(&texts, &qs).unwrap();
}

#[test]
fn a_damaged_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let texts: Vec<String> = ["alpha", "beta_gamma", "sym:a/b.rs#delta"]
        .map(String::from)
        .to_vec();
    let f = write(dir.path(), &texts);
    let path = f.path().to_owned();
    drop(f);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 9;
    bytes[last] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();
    assert!(IndexFile::open(&path).is_err());
    bytes.truncate(100);
    std::fs::write(&path, &bytes).unwrap();
    assert!(IndexFile::open(&path).is_err());
    std::fs::write(&path, b"").unwrap();
    assert!(IndexFile::open(&path).is_err());
}

/// A new store in `dir`.
fn created(dir: &std::path::Path) -> Store {
    let options = OpenOptions {
        create: true,
        ..OpenOptions::default()
    };
    Store::open(dir, options).unwrap()
}

fn commit(store: &Store, edges: &str) {
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: format!("{DEFAULT_TIER}.edges.tsv"),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    batch.read_dump(edges.as_bytes(), &spec).unwrap();
    batch.commit().unwrap();
}

fn names(finder: &Finder, q: &str, upto: u32) -> Vec<String> {
    let a = finder.search(q, upto, 100).unwrap();
    a.matches
        .iter()
        .map(|m| a.text(m.id).unwrap().to_owned())
        .collect()
}

fn index_files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("find-"))
        .collect();
    v.sort();
    v
}

#[test]
fn the_finder_follows_batches_and_rebuilds_a_damaged_or_stale_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = created(dir.path());
    commit(&store, "app\tIMPORTS\tparse_args\n");
    let snap = store.snapshot().unwrap();
    let mut finder = Finder::open(dir.path(), &snap).unwrap();
    finder.set_min_delta(50);
    let n = snap.text_count();
    assert_eq!(finder.covered(), n);
    assert_eq!(index_files(dir.path()), [file::file_name(n)]);
    assert_eq!(names(&finder, "parse", n), ["parse_args"]);

    // A second batch: its texts are found, from memory, not yet from a file.
    commit(&store, "lib\tIMPORTS\tparse_argz\n");
    let snap = store.snapshot().unwrap();
    finder.extend_from(&snap).unwrap();
    assert_eq!(finder.covered(), n);
    assert_eq!(
        names(&finder, "parse", snap.text_count()),
        ["parse_args", "parse_argz"]
    );
    // The older snapshot does not see them.
    assert_eq!(names(&finder, "parse", n), ["parse_args"]);
    // Reopened, the file is used, the newer texts read again.
    let again = Finder::open(dir.path(), &snap).unwrap();
    assert_eq!(again.covered(), n);
    assert_eq!(
        names(&again, "parse", snap.text_count()),
        ["parse_args", "parse_argz"]
    );

    // Past the limit, the file is rebuilt over all texts and the old one removed, with the
    // temporary file of a build that crashed.
    std::fs::write(dir.path().join("find-9.tmp4294967295"), b"partial").unwrap();
    let many: String = (0..60).map(|i| format!("x{i}\tIMPORTS\ty\n")).collect();
    commit(&store, &many);
    let snap = store.snapshot().unwrap();
    let count = snap.text_count();
    finder.extend_from(&snap).unwrap();
    // The rebuild runs on a thread of its own: meanwhile the old file and the texts in
    // memory answer.
    assert!(finder.rebuilding());
    assert_eq!(finder.covered(), n);
    assert_eq!(names(&finder, "x42", count)[0], "x42");
    finder.finish_rebuild(&snap).unwrap();
    assert!(!finder.rebuilding());
    assert_eq!(finder.covered(), count);
    assert_eq!(index_files(dir.path()), [file::file_name(count)]);
    assert_eq!(names(&finder, "x42", count)[0], "x42");

    // A damaged file is removed and rebuilt.
    let path = dir.path().join(file::file_name(count));
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let rebuilt = Finder::open(dir.path(), &snap).unwrap();
    assert_eq!(rebuilt.covered(), count);
    assert!(IndexFile::open(&path).is_ok());
    assert_eq!(names(&rebuilt, "parse_argz", count)[0], "parse_argz");

    // A file of another dictionary (same count, other texts) is stale: rebuilt.
    let other = tempfile::tempdir().unwrap();
    let texts: Vec<String> = (0..count).map(|i| format!("other{i}")).collect();
    let foreign = write(other.path(), &texts);
    std::fs::copy(foreign.path(), &path).unwrap();
    let rebuilt = Finder::open(dir.path(), &snap).unwrap();
    assert_eq!(names(&rebuilt, "parse_args", count)[0], "parse_args");
    assert!(names(&rebuilt, "other1", count).is_empty());
}

#[test]
fn issue_30_a_file_truncated_while_in_use_does_not_fault() {
    let dir = tempfile::tempdir().unwrap();
    let texts: Vec<String> = (0..3000)
        .map(|i| format!("pkg/mod{i}.py#Class{i}.method"))
        .collect();
    let f = write(dir.path(), &texts);
    let before = indexed(&f, "Class12", 3000, 50);
    assert!(before.1 > 0);
    // Shortened under the open index (a mapped file would fault on the pages past its end).
    let len = std::fs::metadata(f.path()).unwrap().len();
    assert!(len > 8192, "{len}");
    std::fs::OpenOptions::new()
        .write(true)
        .open(f.path())
        .unwrap()
        .set_len(4096)
        .unwrap();
    assert_eq!(indexed(&f, "Class12", 3000, 50), before);
    assert_eq!(
        indexed(&f, "metho", 3000, 5).1,
        before_total(&texts, "metho")
    );
    // Opened again, the short file is refused (and rebuilt by its finder).
    let e = IndexFile::open(f.path()).unwrap_err().to_string();
    assert!(e.contains("truncated or of the wrong length"), "{e}");
}

fn before_total(texts: &[String], q: &str) -> usize {
    scanned(texts, q, texts.len() as u32, 5).1
}

#[cfg(unix)]
#[test]
fn issue_30_a_fifo_as_the_index_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file::file_name(3));
    let made = std::process::Command::new("mkfifo").arg(&path).status();
    if !made.is_ok_and(|s| s.success()) {
        return;
    }
    let e = IndexFile::open(&path).unwrap_err().to_string();
    assert!(e.contains("is a FIFO, not a regular file"), "{e}");
}

#[test]
fn issue_31_a_deferred_finder_never_builds_inside_a_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = created(dir.path());
    commit(&store, "app\tIMPORTS\tparse_args\n");
    let snap = store.snapshot().unwrap();
    let n = snap.text_count();
    // No file yet: it is built on a thread of its own, and the texts (fewer than the
    // limit) answer from memory meanwhile.
    let mut finder = Finder::open_deferred(dir.path(), &snap).unwrap();
    assert!(finder.rebuilding());
    assert_eq!(finder.covered(), 0);
    assert_eq!(names(&finder, "parse", n), ["parse_args"]);
    assert_eq!(finder.search("parse", n, 10).unwrap().unsearched, 0);
    finder.finish_rebuild(&snap).unwrap();
    assert_eq!(finder.covered(), n);
    assert_eq!(index_files(dir.path()), [file::file_name(n)]);

    // A batch past the limit: the rebuild starts, and only the limit's worth of newer
    // texts is read in the call; the rest are said to be unsearched.
    finder.set_min_delta(50);
    let many: String = (0..200).map(|i| format!("x{i}\tIMPORTS\ty\n")).collect();
    commit(&store, &many);
    let snap = store.snapshot().unwrap();
    let count = snap.text_count();
    finder.extend_from(&snap).unwrap();
    assert!(finder.rebuilding());
    assert_eq!(finder.len(), n + 50);
    let partial = finder.search("x1", count, 500).unwrap();
    assert_eq!(partial.unsearched, count - n - 50);
    assert_eq!(finder.unsearched(&snap), count - n - 50);
    assert!(!names(&finder, "x199", count).contains(&"x199".to_owned()));
    finder.finish_rebuild(&snap).unwrap();
    assert_eq!(finder.covered(), count);
    assert_eq!(finder.unsearched(&snap), 0);
    assert_eq!(names(&finder, "x199", count)[0], "x199");

    // Reopened deferred over a file far behind: the file is taken, not rebuilt inline.
    let stale = tempfile::tempdir().unwrap();
    let store2 = created(stale.path());
    commit(&store2, "app\tIMPORTS\tparse_args\n");
    Finder::open(stale.path(), &store2.snapshot().unwrap()).unwrap();
    let lots: String = (0..300).map(|i| format!("z{i}\tIMPORTS\ty\n")).collect();
    commit(&store2, &lots);
    let snap2 = store2.snapshot().unwrap();
    let mut deferred = Finder::open_deferred(stale.path(), &snap2).unwrap();
    assert_eq!(deferred.covered(), n);
    assert!(
        !deferred.rebuilding(),
        "300 new texts are within the 100,000 limit"
    );
    assert_eq!(deferred.unsearched(&snap2), 0);
    deferred.finish_rebuild(&snap2).unwrap();
}

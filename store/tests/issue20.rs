//! Issue 20's store-side items: nothing a caller sends may crash the store, hang it or eat
//! the machine, and what it refuses it refuses with FILE:LINE.

#![allow(clippy::unwrap_used)]

use std::io::{BufReader, Read, Write};
use std::ops::ControlFlow;

use strata_eval::{FactSource, Value};
mod common;

use common::{create, read_into, spec};
use strata_store::dump::{self, Fact, FactSink, Format, MAX_LINE_BYTES};
use strata_store::{BatchOptions, CommitError, IngestError, Store};

/// Counts the facts a dump yields, without a store.
struct Count(u64);

impl FactSink for Count {
    fn fact(&mut self, _: &Fact<'_>) -> Result<(), IngestError> {
        self.0 += 1;
        Ok(())
    }
}

/// Reads `text` as a dump into a fresh store and commits it.
fn ingest(store: &Store, label: &str, format: Format, text: &[u8]) -> Result<u64, String> {
    let mut batch = store
        .batch(BatchOptions::default())
        .map_err(|e| e.to_string())?;
    batch
        .read_dump(text, &spec(label, format))
        .map_err(|e| e.to_string())?;
    let s = batch.commit().map_err(|e| e.to_string())?;
    Ok(s.new)
}

fn refused(label: &str, format: Format, text: &[u8]) -> String {
    dump::read(text, &spec(label, format), &mut Count(0))
        .unwrap_err()
        .to_string()
}

fn rows(store: &Store, rel: &str) -> Vec<Vec<Value>> {
    let snap = store.snapshot().unwrap();
    let mut out = Vec::new();
    snap.scan(rel, &mut |r| {
        out.push(r.iter().map(|t| snap.value(*t).unwrap()).collect());
        ControlFlow::Continue(())
    })
    .unwrap();
    out.sort_by_key(|r| format!("{r:?}"));
    out
}

#[test]
fn issue20_a_line_longer_than_the_cap_is_refused_with_file_and_line() {
    let mut text = b"a\tX\tb\n".to_vec();
    text.extend(std::iter::repeat_n(b'y', 100));
    text.extend(b"\tX\tb\n");
    let err = dump::read_limited(
        &text[..],
        &spec("e.edges.tsv", Format::Edges),
        &mut Count(0),
        64,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "e.edges.tsv:2: line longer than 64 bytes");
    // The cap counts the line, not its line break: a line of exactly the cap is read.
    let exact = [&[b'z'; 60][..], b"\tX\tb\n"].concat();
    let mut n = Count(0);
    dump::read_limited(&exact[..], &spec("e.edges.tsv", Format::Edges), &mut n, 64).unwrap();
    assert_eq!(n.0, 1);
}

#[test]
fn issue20_an_endless_line_stops_at_the_cap_without_holding_it() {
    // `/dev/zero` as a dump: no line break ever. Reading stops after the cap, having read
    // little more than it.
    struct Counted<R>(R, u64);
    impl<R: Read> Read for Counted<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.read(buf)?;
            self.1 += n as u64;
            Ok(n)
        }
    }
    for format in [Format::Edges, Format::Jsonl, Format::Facts] {
        let mut input = BufReader::new(Counted(std::io::repeat(0), 0));
        let err = dump::read(&mut input, &spec("zero.facts", format), &mut Count(0)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("zero.facts:1: line longer than {MAX_LINE_BYTES} bytes"),
            "{format:?}"
        );
        assert!(input.get_ref().1 <= MAX_LINE_BYTES as u64 + (64 << 10));
    }
    // Through gzip too: a bomb of zeros is cut at the cap.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0u8; 8 * MAX_LINE_BYTES]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.edges.tsv.gz");
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    let store = create(&dir.path().join("db"));
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let err = batch
        .read_file(&path, &spec("bomb.edges.tsv.gz", Format::Edges))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("bomb.edges.tsv.gz:1: line longer than {MAX_LINE_BYTES} bytes")
    );
}

#[test]
fn issue20_jsonl_integers_above_2_53_stay_exact() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let jsonl = b"{\"src\":\"a\",\"kind\":\"k\",\"dst\":9007199254740993}\n\
                  {\"src\":\"a\",\"kind\":\"k\",\"dst\":9007199254740992}\n\
                  {\"src\":\"a\",\"kind\":\"k\",\"dst\":-9007199254740993}\n\
                  {\"src\":\"a\",\"kind\":\"k\",\"dst\":18446744073709551615}\n\
                  {\"src\":\"a\",\"kind\":\"k\",\"dst\":12}\n";
    assert_eq!(ingest(&store, "j.jsonl", Format::Jsonl, jsonl), Ok(5));
    let tsv = b"b\tk\t9007199254740993\nb\tk\t9007199254740992\n";
    assert_eq!(ingest(&store, "t.edges.tsv", Format::Edges, tsv), Ok(2));
    let dsts: Vec<Value> = rows(&store, "k")
        .into_iter()
        .map(|r| r[1].clone())
        .collect();
    // As the TSV reader does: exact in a double is a number, past that the digits as text.
    for v in [
        Value::Number(9007199254740992.0),
        Value::text("9007199254740993"),
        Value::text("-9007199254740993"),
        Value::text("18446744073709551615"),
        Value::Number(12.0),
    ] {
        assert!(dsts.contains(&v), "{v:?} in {dsts:?}");
    }
    let a_and_b = |v: &Value| dsts.iter().filter(|d| *d == v).count();
    assert_eq!(
        a_and_b(&Value::text("9007199254740993")),
        2,
        "JSONL and TSV agree"
    );
    assert_eq!(a_and_b(&Value::Number(9007199254740992.0)), 2);
}

#[test]
fn issue20_header_and_blank_line_mistakes_are_file_line_errors() {
    assert_eq!(
        refused("r.facts", Format::Facts, b"# columns: a, a\nx\ty\n"),
        "r.facts:1: column \"a\" is named twice in the `# columns:` line (columns 1 and 2)"
    );
    assert_eq!(
        refused(
            "r.facts",
            Format::Facts,
            b"# columns: a, b\n# columns: c, d\nx\ty\n"
        ),
        "r.facts:2: a second `# columns:` line (the first is line 1); a file names its columns once"
    );
    assert_eq!(
        refused(
            "r.facts",
            Format::Facts,
            b"# columns: a, b\nx\ty\n# columns: c, d\n"
        ),
        "r.facts:3: a second `# columns:` line (the first is line 1); a file names its columns once"
    );
    assert_eq!(
        refused("e.edges.tsv", Format::Edges, b"a\tX\tb\n\t\n"),
        "e.edges.tsv:2: the line holds only tabs and spaces: write its fields, or leave it empty"
    );
    assert_eq!(
        refused(
            "j.jsonl",
            Format::Jsonl,
            b"{\"src\":\"a\",\"kind\":\"X\",\"dst\":\"b\",\"dst\":\"c\"}\n"
        ),
        "j.jsonl:1: invalid JSON: key \"dst\" is given twice at line 1 column 42"
    );
    // Blank lines and lines of spaces are still skipped.
    let mut n = Count(0);
    dump::read(
        &b"a\tX\tb\n\n   \nc\tX\td\n"[..],
        &spec("e.edges.tsv", Format::Edges),
        &mut n,
    )
    .unwrap();
    assert_eq!(n.0, 2);
}

#[test]
fn issue20_a_byte_order_mark_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let text = b"\xEF\xBB\xBFapp\tIMPORTS\tapi\n";
    assert_eq!(ingest(&store, "e.edges.tsv", Format::Edges, text), Ok(1));
    assert_eq!(
        rows(&store, "imports"),
        [vec![Value::text("app"), Value::text("api")]]
    );
    let json = b"\xEF\xBB\xBF{\"id\":\"x\",\"label\":\"Pkg\"}\n";
    assert_eq!(ingest(&store, "n.jsonl", Format::Jsonl, json), Ok(1));
    // Only at the start of the input: elsewhere it is part of the field.
    let later = b"a\tIMPORTS\tb\n\xEF\xBB\xBFc\tIMPORTS\td\n";
    assert_eq!(ingest(&store, "e.edges.tsv", Format::Edges, later), Ok(2));
}

#[test]
fn issue20_relations_named_not_or_absent_are_refused() {
    assert_eq!(
        refused("e.edges.tsv", Format::Edges, b"a\tNOT\tb\n"),
        "e.edges.tsv:1: kind \"NOT\" cannot name a relation: \"not\" is a word of the query \
         language, so no query could read it; rename it"
    );
    assert_eq!(
        refused(
            "n.jsonl",
            Format::Jsonl,
            b"{\"id\":\"a\",\"label\":\"absent\"}\n"
        ),
        "n.jsonl:1: label \"absent\" cannot name a relation: \"absent\" is a word of the query \
         language, so no query could read it; rename it"
    );
    assert_eq!(
        refused("not.facts", Format::Facts, b"a\n"),
        "not.facts: \"not\" cannot name a relation: it is a word of the query language, so no \
         query could read it; rename the file"
    );
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let err = batch
        .add_fact("absent", &[dump::Field::Number(1.0)], None)
        .unwrap_err();
    assert!(matches!(err, IngestError::Invalid(_)), "{err}");
}

#[test]
fn issue20_kinds_spelled_differently_are_one_relation() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let text = b"a\tIMPORTS\tb\nc\timports\td\ne\tImports\tb\n";
    assert_eq!(ingest(&store, "e.edges.tsv", Format::Edges, text), Ok(3));
    // Across batches too; the relation keeps the spelling it was first stored with.
    assert_eq!(
        ingest(&store, "f.edges.tsv", Format::Edges, b"x\timports\ty\n"),
        Ok(1)
    );
    assert_eq!(rows(&store, "imports").len(), 4);
    assert_eq!(
        store.catalog().unwrap().relations["imports"].spelled,
        "IMPORTS"
    );
    // Another origin still clashes.
    assert_eq!(
        ingest(&store, "a.attrs.tsv", Format::Attrs, b"a\tIMPORTS\tb\n").unwrap_err(),
        "a.attrs.tsv:1: \"IMPORTS\" (an attribute key) names the same relation \"imports\" as \
         the stored \"IMPORTS\" (an edge kind); rename one of them"
    );
}

#[test]
fn issue20_a_failed_first_ingest_leaves_nothing_behind() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("db");
    {
        let store = create(&dir);
        let err = ingest(&store, "e.edges.tsv", Format::Edges, b"a\tX\tb\nbroken\n").unwrap_err();
        assert!(err.starts_with("e.edges.tsv:2: "), "{err}");
    }
    assert!(
        !dir.exists(),
        "the failed first ingest left {}",
        dir.display()
    );
    // Into a directory that existed: the directory stays, the files go.
    std::fs::create_dir(&dir).unwrap();
    {
        let store = create(&dir);
        let batch = read_into(&store, "big", "e.edges.tsv", Format::Edges, b"a\tX\tb\n");
        batch.commit().unwrap();
        // A later failure does not remove what committed.
        assert!(ingest(&store, "e.edges.tsv", Format::Edges, b"broken\n").is_err());
    }
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "strata.redb",
            "strata.redb.stamp",
            "tier-big.redb",
            "tier-big.redb.stamp"
        ],
        "the files and their stamps stay"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    {
        let store = create(&dir);
        let mut batch = read_into(&store, "big", "e.edges.tsv", Format::Edges, b"a\tX\tb\n");
        // The dump is read, the tier file opened; the batch is dropped on an error later.
        assert!(
            batch
                .read_file(
                    &dir.join("missing.tsv"),
                    &spec("missing.tsv", Format::Edges)
                )
                .is_err()
        );
    }
    assert!(dir.exists());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // A database created and left without any batch is kept, as before.
    drop(create(&dir));
    assert!(dir.join("strata.redb").exists());
}

#[test]
fn issue20_retracting_only_unknown_units_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    ingest(&store, "e.edges.tsv", Format::Edges, b"a\tX\tb\tu1\n").unwrap();
    let seq = store.catalog().unwrap().seq;
    let err = store
        .retract(&["nosuch".to_owned()], BatchOptions::default())
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Batch(IngestError::UnknownUnits { .. })),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "no fact is stated by unit \"nosuch\": nothing to retract, nothing was committed"
    );
    assert_eq!(store.catalog().unwrap().seq, seq, "no batch committed");
    // One known unit among unknown ones: it is retracted, the others are listed.
    let s = store
        .retract(
            &["u1".to_owned(), "nosuch".to_owned()],
            BatchOptions::default(),
        )
        .unwrap();
    assert_eq!((s.removed, s.unknown_units), (1, vec!["nosuch".to_owned()]));
    // A unit whose facts are all gone owns nothing either.
    let seq = store.catalog().unwrap().seq;
    let err = store
        .retract(&["u1".to_owned()], BatchOptions::default())
        .unwrap_err();
    assert!(
        matches!(err, CommitError::Batch(IngestError::UnknownUnits { .. })),
        "{err}"
    );
    assert_eq!(store.catalog().unwrap().seq, seq);
    // With a batch id the empty batch commits, so a retry of it is recognised.
    let with_id = || BatchOptions {
        batch_id: Some("r1".into()),
        ..BatchOptions::default()
    };
    let s = store.retract(&["u1".to_owned()], with_id()).unwrap();
    assert_eq!((s.seq, s.removed), (seq + 1, 0));
    let s = store.retract(&["u1".to_owned()], with_id()).unwrap();
    assert!(s.already_committed);
}

#[test]
fn issue20_empty_batch_ids_and_units_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let err = store
        .batch(BatchOptions {
            batch_id: Some(String::new()),
            ..BatchOptions::default()
        })
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "the batch id is empty; give a non-empty id, or none"
    );
    let err = store
        .retract(&[String::new()], BatchOptions::default())
        .unwrap_err();
    assert_eq!(err.to_string(), "the unit to retract is empty; name a unit");
    let mut with_unit = spec("e.edges.tsv", Format::Edges);
    with_unit.unit = Some(String::new());
    let err = dump::read(&b"a\tX\tb\n"[..], &with_unit, &mut Count(0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "e.edges.tsv: the unit is empty; name a unit or give none"
    );
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    assert!(
        batch
            .add_fact("r", &[dump::Field::Number(1.0)], Some(""))
            .is_err()
    );
}

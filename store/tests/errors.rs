//! The store's errors: one type per operation, each cause kept as its source.

#![allow(clippy::unwrap_used)]

use std::error::Error;
use std::io::Write;

mod common;

use common::{create, spec};
use strata_store::dump::{self, Format};
use strata_store::{
    BatchOptions, CheckError, Damage, IngestError, OpenError, OpenOptions, ReadError, Store,
    StoreError,
};

/// The error's messages from the outside in, as `{:#}` renders them.
fn chain(e: &dyn Error) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut s = e.source();
    while let Some(c) = s {
        out.push(c.to_string());
        s = c.source();
    }
    out
}

#[test]
fn a_dump_that_cannot_be_opened_keeps_the_os_error_as_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nosuch.edges.tsv");
    let err = dump::open(&missing).err().unwrap();
    let IngestError::Open { path, source } = &err else {
        panic!("{err}");
    };
    assert_eq!(path, &missing);
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    let c = chain(&err);
    assert_eq!(
        c[0],
        missing.display().to_string(),
        "the cause is not repeated"
    );
    assert_eq!(c.len(), 2, "{c:?}");
}

#[test]
fn a_truncated_gzip_names_its_file_and_line_with_the_decoders_error_as_source() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(&dir.path().join("db"));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for i in 0..20000 {
        writeln!(gz, "a{i}\tX\tb{i}").unwrap();
    }
    let bytes = gz.finish().unwrap();
    let path = dir.path().join("t.edges.tsv.gz");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let err = batch
        .read_file(&path, &spec("t.edges.tsv.gz", Format::Edges))
        .unwrap_err();
    let IngestError::Read { file, line, source } = &err else {
        panic!("{err}");
    };
    assert_eq!(file, "t.edges.tsv.gz");
    assert!(*line > 1);
    assert!(!source.to_string().is_empty());
    assert!(
        err.to_string()
            .starts_with(&format!("t.edges.tsv.gz:{line}: cannot read")),
        "{err}"
    );
}

#[test]
fn every_operation_has_its_own_error_and_the_umbrella_takes_each() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let err: ReadError = store.snapshot().unwrap().meta("nosuch").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no relation named \"nosuch\" in this database"
    );
    let umbrella = StoreError::from(err);
    assert!(matches!(
        umbrella,
        StoreError::Read(ReadError::UnknownRelation(_))
    ));
    let err: IngestError = store
        .batch(BatchOptions {
            tier: "Not A Tier".into(),
            ..BatchOptions::default()
        })
        .err()
        .unwrap();
    assert!(matches!(err, IngestError::Invalid(_)), "{err}");
    let err = store
        .retract(
            &[],
            BatchOptions {
                tier: "Not A Tier".into(),
                ..BatchOptions::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            strata_store::CommitError::Batch(IngestError::Invalid(_))
        ),
        "{err}"
    );
    let err: OpenError = Store::open(dir.path().join("nope"), OpenOptions::default())
        .err()
        .unwrap();
    assert!(matches!(err, OpenError::NotADatabase { .. }), "{err}");
}

#[test]
fn a_read_error_reaches_the_engine_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = create(dir.path());
    let snap = store.snapshot().unwrap();
    let err =
        strata_eval::FactSource::scan(
            &snap,
            "nosuch",
            &mut |_| std::ops::ControlFlow::Continue(()),
        )
        .unwrap_err();
    assert!(
        matches!(err, strata_eval::SourceError::UnknownRelation(ref r) if r == "nosuch"),
        "{err}"
    );
    // Damage keeps its type (and so its chain) through the engine's error.
    let damaged = ReadError::Damaged {
        path: dir.path().join("strata.redb"),
        source: Damage::Format("a column block does not validate".into()),
    };
    let err = strata_eval::SourceError::from(damaged);
    let c = chain(&err);
    assert!(c[0].contains("strata.redb is damaged"), "{c:?}");
    assert_eq!(c.last().unwrap(), "a column block does not validate");
}

#[test]
fn a_check_error_does_not_send_the_user_to_check() {
    let err = CheckError::Damaged {
        path: "db/strata.redb".into(),
        source: Damage::Format("x".into()),
    };
    assert!(!err.to_string().contains("strata check"), "{err}");
}

//! What the SCIP tests share: a store, a batch reading an index, rows as text, a program
//! run with the `code` module, and a hand encoder of protobuf bytes.

#![allow(dead_code)]

use std::ops::ControlFlow;
use std::path::Path;

use strata_eval::answer::Cell;
use strata_eval::{FactSource, Query, RunOptions, Value, Vocabulary};
use strata_store::dump::{DumpSpec, Format};
use strata_store::scip::CODE_MODULE;
use strata_store::{BatchOptions, BatchSummary, OpenOptions, Store, StoreError};

pub fn create(dir: &Path) -> Store {
    Store::open(
        dir,
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )
    .expect("open")
}

pub fn spec(label: &str, unit: Option<&str>) -> DumpSpec {
    DumpSpec {
        label: label.to_owned(),
        format: Format::Scip,
        relation: None,
        unit: unit.map(str::to_owned),
        checkout: None,
    }
}

/// Reads `bytes` as one SCIP index into one batch and commits it.
pub fn ingest(
    store: &Store,
    bytes: &[u8],
    unit: Option<&str>,
    replace: bool,
) -> Result<BatchSummary, StoreError> {
    let mut batch = store.batch(BatchOptions {
        replace,
        ..BatchOptions::default()
    })?;
    batch.read_dump(bytes, &spec("idx.scip", unit))?;
    Ok(batch.commit()?)
}

/// Every row of `rel`, each value printed (text quoted), sorted; empty when the relation
/// does not exist.
pub fn rows(store: &Store, rel: &str) -> Vec<Vec<String>> {
    let snap = store.snapshot().expect("snapshot");
    let mut raw = Vec::new();
    if snap
        .scan(rel, &mut |r| {
            raw.push(r.to_vec());
            ControlFlow::Continue(())
        })
        .is_err()
    {
        return Vec::new();
    }
    let mut out: Vec<Vec<String>> = raw
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|t| match snap.value(t).expect("value") {
                    Value::Text(s) => s.to_string(),
                    v => v.to_string(),
                })
                .collect()
        })
        .collect();
    out.sort();
    out
}

/// A value as the tests compare it: text as is, a number as an integer, absent as `absent`.
pub fn show(v: &Value) -> String {
    match v {
        Value::Text(t) => t.to_string(),
        Value::Number(n) => format!("{}", *n as i64),
        Value::Absent => "absent".to_owned(),
    }
}

/// Runs a program against the store with the bundled `code` module; every row of its
/// answer (one page, however many rows) as text ([`show`]).
pub fn run(store: &Store, program: &str) -> Vec<Vec<String>> {
    let snap = store.snapshot().expect("snapshot");
    let vocab = Vocabulary::from_sources(
        snap.relations().expect("relations"),
        &[("code", CODE_MODULE)],
    )
    .expect("the code module loads");
    let q = Query::prepare(&vocab, program, &[]).unwrap_or_else(|e| panic!("{program}: {e}"));
    let out = q
        .run(
            &snap,
            &RunOptions {
                limit: u64::MAX,
                ..RunOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert_eq!(
        out.answer.rows.len() as u64,
        out.answer.total,
        "{program}: one page"
    );
    out.answer
        .rows
        .iter()
        .map(|r| {
            r.cells
                .iter()
                .map(|c| match c {
                    Cell::Value(v) => show(v),
                    other => panic!("{program}: {other:?}"),
                })
                .collect()
        })
        .collect()
}

/// A protobuf varint.
pub fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

/// A length-delimited field.
pub fn len_field(number: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = varint(number << 3 | 2);
    out.extend(varint(payload.len() as u64));
    out.extend_from_slice(payload);
    out
}

/// A varint field.
pub fn varint_field(number: u64, value: u64) -> Vec<u8> {
    let mut out = varint(number << 3);
    out.extend(varint(value));
    out
}

/// `Index.metadata` with this project root.
pub fn metadata(root: &str) -> Vec<u8> {
    len_field(1, &len_field(3, root.as_bytes()))
}

/// An occurrence: range `[line, start, end]`, symbol, roles.
pub fn occurrence(line: u64, symbol: &str, roles: u64) -> Vec<u8> {
    let mut range = varint(line);
    range.extend(varint(0));
    range.extend(varint(5));
    let mut out = len_field(1, &range);
    out.extend(len_field(2, symbol.as_bytes()));
    if roles != 0 {
        out.extend(varint_field(3, roles));
    }
    out
}

/// A document with a path and some occurrences (already encoded).
pub fn document(path: &str, occurrences: &[Vec<u8>]) -> Vec<u8> {
    let mut doc = len_field(1, path.as_bytes());
    for o in occurrences {
        doc.extend(len_field(2, o));
    }
    doc
}

/// `Index.documents` holding `doc`.
pub fn documents_field(doc: &[u8]) -> Vec<u8> {
    len_field(2, doc)
}

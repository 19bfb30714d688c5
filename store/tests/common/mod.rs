//! Helpers shared by the store's newer integration tests.

#![allow(clippy::unwrap_used, dead_code)]

use std::ops::ControlFlow;
use std::path::Path;

use strata_eval::FactSource;

use strata_store::dump::{DumpSpec, Format};
use strata_store::{Batch, BatchOptions, BatchSummary, OpenOptions, Reclaim, Store};

/// Opens the database in `dir`, creating it.
pub fn create(dir: &Path) -> Store {
    create_as(dir, strata_store::layout::FORMAT_VERSION)
}

/// Opens the database in `dir`, creating its files in format version `version`.
pub fn create_as(dir: &Path, version: u32) -> Store {
    Store::open(
        dir,
        OpenOptions {
            create: true,
            format_version: version,
            ..OpenOptions::default()
        },
    )
    .unwrap()
}

/// Opens the database in `dir`, creating it, reclaiming space as `reclaim` says (`None`:
/// never).
pub fn open_reclaiming(dir: &Path, reclaim: Option<Reclaim>) -> Store {
    Store::open(
        dir,
        OpenOptions {
            create: true,
            reclaim,
            ..OpenOptions::default()
        },
    )
    .unwrap()
}

/// How to read a dump named `label` (a `.facts` file's relation from its name).
pub fn spec(label: &str, format: Format) -> DumpSpec {
    DumpSpec {
        label: label.to_owned(),
        format,
        relation: (format == Format::Facts).then(|| label.trim_end_matches(".facts").to_owned()),
        unit: None,
        checkout: None,
    }
}

/// A batch into `tier` holding the dump `text`, read but not committed.
pub fn read_into<'s>(
    store: &'s Store,
    tier: &str,
    label: &str,
    format: Format,
    text: &[u8],
) -> Batch<'s> {
    let mut batch = store
        .batch(BatchOptions {
            tier: tier.into(),
            ..BatchOptions::default()
        })
        .unwrap();
    batch.read_dump(text, &spec(label, format)).unwrap();
    batch
}

/// Commits the dump `text` (named `label`) as one batch with `options`.
pub fn commit_dump(
    store: &Store,
    options: BatchOptions,
    label: &str,
    format: Format,
    text: &str,
) -> BatchSummary {
    let mut batch = store.batch(options).unwrap();
    batch
        .read_dump(text.as_bytes(), &spec(label, format))
        .unwrap();
    batch.commit().unwrap()
}

/// A small database: two edge kinds in the base file, one attribute in tier `big`, units.
pub fn build_small(dir: &Path) {
    build_small_as(dir, strata_store::layout::FORMAT_VERSION);
}

/// [`build_small`], its files in format version `version`.
pub fn build_small_as(dir: &Path, version: u32) {
    let store = create_as(dir, version);
    let mut edges = String::new();
    for i in 0..600 {
        edges.push_str(&format!("a{i}\tIMPORTS\tb{}\tu{}\n", i % 40, i % 7));
        edges.push_str(&format!("b{i}\tCALLS\ta{}\n", i % 55));
    }
    read_into(
        &store,
        "default",
        "e.edges.tsv",
        Format::Edges,
        edges.as_bytes(),
    )
    .commit()
    .unwrap();
    let mut attrs = String::new();
    for i in 0..300 {
        attrs.push_str(&format!("a{i}\tsize\t{}\n", i * 3));
    }
    read_into(
        &store,
        "big",
        "a.attrs.tsv",
        Format::Attrs,
        attrs.as_bytes(),
    )
    .commit()
    .unwrap();
}

/// An error and its causes, on one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Every relation's rows, rendered and sorted.
pub fn everything(store: &Store) -> Vec<String> {
    let catalog = store.catalog().unwrap();
    let snap = store.snapshot().unwrap();
    let mut out = Vec::new();
    for rel in catalog.relations.keys() {
        snap.scan(rel, &mut |r| {
            let v: Vec<_> = r.iter().map(|t| snap.value(*t).unwrap()).collect();
            out.push(format!("{rel}{v:?}"));
            ControlFlow::Continue(())
        })
        .unwrap();
    }
    out.sort();
    out
}

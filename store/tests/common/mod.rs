//! Helpers shared by the store's newer integration tests.

#![allow(clippy::unwrap_used, dead_code)]

pub mod faulty;

use std::path::Path;

use strata_store::dump::{DumpSpec, Format};
use strata_store::{Batch, BatchOptions, OpenOptions, Store};

/// Opens the database in `dir`, creating it.
pub fn create(dir: &Path) -> Store {
    Store::open(
        dir,
        OpenOptions {
            create: true,
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

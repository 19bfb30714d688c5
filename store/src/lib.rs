//! Strata's on-disk fact store.
//!
//! A database is a directory: `strata.redb` holds the catalog, the dictionary and the default
//! tier's relations; every other tier is a redb file of its own (`tier-NAME.redb`), opened
//! only when a read or a write needs one of its relations. Relations are stored by column in
//! blocks of 4096 rows, with the rows of each (column, value) indexed, so a lookup with any
//! bound columns is a bitmap intersection. See `docs/design.md` for the byte layout of each
//! format version.
//!
//! ```
//! use strata_store::{BatchOptions, OpenOptions, Store};
//! use strata_store::dump::{DumpSpec, Format};
//! use strata_eval::{FactSource, Value};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path(), OpenOptions { create: true, ..Default::default() }).unwrap();
//! let mut batch = store.batch(BatchOptions::default()).unwrap();
//! let dump = "app\tIMPORTS\tapi\napi\tIMPORTS\tlog\n";
//! let spec = DumpSpec { label: "deps.edges.tsv".into(), format: Format::Edges, relation: None, unit: None, checkout: None };
//! batch.read_dump(dump.as_bytes(), &spec).unwrap();
//! let summary = batch.commit().unwrap();
//! assert_eq!(summary.new, 2);
//!
//! let snap = store.snapshot().unwrap();
//! let api = snap.term(&Value::text("api")).unwrap().unwrap();
//! let mut rows = Vec::new();
//! snap.lookup("imports", &[(0, api)], &mut |row| { rows.push(row.to_vec()); std::ops::ControlFlow::Continue(()) }).unwrap();
//! assert_eq!(snap.value(rows[0][1]).unwrap(), Value::text("log"));
//! ```

mod ascending;
#[doc(hidden)]
pub mod backend;
mod bits;
mod blocks;
pub mod catalog;
pub mod check;
mod column;
mod db;
pub mod dump;
mod error;
#[doc(hidden)]
pub mod fuzz;
mod guard;
mod heal;
mod identity;
mod index;
mod ingest;
mod intern;
pub mod layout;
mod reclaim;
mod regular;
mod relwriter;
pub mod scip;
mod seal;
mod shrinking;
mod snapshot;
mod space;
mod stamp;
mod stats;
#[doc(hidden)]
pub mod testing;

pub use catalog::{BatchRecord, Catalog, RelationMeta};
pub use check::CheckReport;
pub use db::{DEFAULT_CACHE_BYTES, MIN_CACHE_BYTES, OpenOptions, Store, scaled_cache_bytes};
pub use error::{
    CheckError, CommitError, CompactError, Damage, IngestError, OpenError, ReadError, StoreError,
};
pub use guard::{catch_damage, quiet_caught_panics};
pub use ingest::{BUFFER_FACTS, Batch, BatchOptions, BatchSummary, IndexChange, ON_DEMAND_ROWS};
pub use reclaim::Reclaim;
pub use snapshot::{Snapshot, TermUse};
pub use space::{Compacted, FileSpace, Space, TableSpace, compact};
pub use stamp::Verify;
pub use stats::{RelationStats, Stats};

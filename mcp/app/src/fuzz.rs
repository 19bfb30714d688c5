//! Fuzz targets of the application core: what a client sends the ingest socket, and the
//! find index file of a database directory, each a function of arbitrary bytes that must
//! answer or refuse with a clear error, never panic, hang or allocate what the bytes claim.
//!
//! Both runners call these: the cargo-fuzz targets of `fixtures/fuzz` on nightly and the
//! bounded property runs of `mcp/app/tests/fuzz.rs` on stable (see `docs/testing.md`).

pub use crate::find::fuzzing::{FindOutcome, QUERIES, Searched, find_index, find_outcome, seal};

#[cfg(unix)]
mod ingest;
#[cfg(unix)]
pub use ingest::{Received, database, frames, ingest_outcome, ingest_request};

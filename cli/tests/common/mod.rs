//! Helpers the CLI's integration tests share.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `strata` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_strata");

/// Writes `edges` (an edges dump) into `dir` and ingests it into a new database `dir/db`.
pub fn db_with(dir: &Path, edges: &str) -> PathBuf {
    let db = dir.join("db");
    let dump = dir.join("base.edges.tsv");
    std::fs::write(&dump, edges).unwrap();
    let out = Command::new(BIN)
        .args(["ingest", db.to_str().unwrap(), dump.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    db
}

//! The side-by-side suite at its quick size, as CI runs it: every engine, each a whole
//! process, gives the same count on every workload (counts only; times are never asserted).
//! DuckDB joins in only when `python3` (or the suite's virtualenv) already imports it: CI
//! installs nothing. Needs the `strata` binary beside the bench binaries, which `cargo test
//! --workspace` builds (`cargo build -p strata-cli` before `cargo test -p strata-benches`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn every_engine_agrees_at_quick_size() {
    let data = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sidebyside"))
        .args([
            "--quick",
            "--counts-only",
            "--runs",
            "1",
            "--no-install",
            "--timeout",
            "300",
        ])
        .env("STRATA_BENCH_DATA", data.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "sidebyside --quick --counts-only failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for workload in [
        "reach from node 0",
        "Go-like dependency graph",
        "closure of G(1000, 2000)",
        "closure of a 1,000-node chain",
        "same generation, G(1000, 1500)",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.contains(workload))
            .unwrap_or_else(|| panic!("no row for {workload}:\n{stdout}"));
        assert!(!row.contains("DIFFER") && !row.contains("failed"), "{row}");
    }
}

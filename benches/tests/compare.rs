//! The comparison in its smallest size, as CI runs it: every engine gives the same answer
//! count on every workload (counts only; times are never asserted).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use strata_benches::engines::{Engine, Prepared, souffle_available};
use strata_benches::workload::{self, Kind, Scale};

#[test]
fn every_engine_gives_the_same_count_in_process() {
    let tmp = tempfile::tempdir().unwrap();
    let souffle = souffle_available();
    for kind in Kind::ALL {
        let w = kind.make(Scale::Smoke, 0);
        let dir = tmp.path().join(kind.name());
        workload::write_facts(&w, &dir).unwrap();
        let mut counts = Vec::new();
        for engine in Engine::for_kind(kind) {
            let prepared = match engine {
                Engine::Souffle if !souffle => continue,
                Engine::Souffle => Prepared::souffle(kind, &dir, &dir.join("out")).unwrap(),
                e => Prepared::new(e, kind, &w).unwrap(),
            };
            counts.push((engine.name(), prepared.run().unwrap()));
        }
        let first = counts[0].1;
        assert!(first > 0, "{}: no answers", kind.name());
        assert!(
            counts.iter().all(|&(_, n)| n == first),
            "{}: engines disagree: {counts:?}",
            kind.name()
        );
    }
}

#[test]
fn the_compare_binary_agrees_at_smoke_size() {
    let out = Command::new(env!("CARGO_BIN_EXE_compare"))
        .args(["--smoke", "--runs", "1", "--timeout", "120"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "compare --smoke failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for kind in Kind::ALL {
        for engine in [
            "strata-1t-plain",
            "strata-2t-witnesses",
            "datafrog",
            "ascent",
            "crepe",
        ] {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.starts_with(&format!("| {} (", kind.name())) && l.contains(engine)),
                "no {engine} row for {}:\n{stdout}",
                kind.name()
            );
        }
    }
    assert!(!stdout.contains("DIFFERS") && !stdout.contains("failed"));
}

//! `strata query --max-memory` (issue 18): a runaway program stops at the cap with an exit
//! code of 1 and an error naming the limit and where the memory went; with room it answers
//! as without a cap; a size that is no size is refused before anything runs. `--cache`,
//! the store's page cache, takes a size too and changes no answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::BIN;

use strata_fixtures::runaway::{CROSS, calls_edges as calls};

fn strata(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn issue18_max_memory_stops_the_cross_product_with_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let db = common::db_with(tmp.path(), &calls(600));
    let db = db.to_str().unwrap();
    let (code, out, err) = strata(&["query", db, CROSS, "--max-memory", "1M"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("the program passed its memory limit of 1.0 MiB (1048576 bytes); it held"),
        "{err}"
    );
    assert!(err.contains("indexes"), "{err}");
    // Plain bytes are a size too; with room the answer is the one without a cap.
    let (code, roomy, err) = strata(&["query", db, CROSS, "--max-memory", "17179869184"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, default, err) = strata(&["query", db, CROSS]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(roomy, default);
    assert!(roomy.contains("600"), "{roomy}");
}

#[test]
fn a_bad_size_is_refused_saying_how_to_write_one() {
    let tmp = tempfile::tempdir().unwrap();
    let db = common::db_with(tmp.path(), &calls(10));
    let (code, _, err) = strata(&["query", db.to_str().unwrap(), CROSS, "--max-memory", "lots"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\"lots\" is not a size"), "{err}");
    assert!(err.contains("512M"), "{err}");
}

#[test]
fn the_page_cache_is_a_size_and_changes_no_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let db = common::db_with(tmp.path(), &calls(200));
    let db = db.to_str().unwrap();
    let (code, default, err) = strata(&["query", db, CROSS]);
    assert_eq!(code, Some(0), "{err}");
    for size in ["1M", "1G", "65536"] {
        let (code, out, err) = strata(&["query", db, CROSS, "--cache", size]);
        assert_eq!(code, Some(0), "--cache {size}: {err}");
        assert_eq!(out, default, "--cache {size}");
    }
    let (code, _, err) = strata(&["query", db, CROSS, "--cache", "big"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\"big\" is not a size"), "{err}");
}

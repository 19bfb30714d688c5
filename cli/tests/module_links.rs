//! A module or pack file that is a link leading outside the database directory is refused,
//! and the refusal does not quote the file it leads to (issue 20).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;

use common::BIN;

const SECRET: &str = "root:x:0:0:root:/root:/bin/bash";

fn strata(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn make_db(dir: &Path) -> std::path::PathBuf {
    common::db_with(dir, "app\tIMPORTS\tapi\n")
}

fn refused(out: &Output, link: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(link) && stderr.contains("leads outside the database directory"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(SECRET) && !stdout.contains(SECRET),
        "{stderr}"
    );
}

#[test]
fn issue20_module_link_outside_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = make_db(tmp.path());
    let secret = tmp.path().join("passwd");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    let modules = db.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    // A link inside the database is fine.
    std::fs::write(modules.join("a.dl"), "uses(?x) :- imports(?x, _);\n").unwrap();
    std::os::unix::fs::symlink(modules.join("a.dl"), modules.join("b.dl")).unwrap();
    let dbs = db.to_str().unwrap();
    let out = strata(&["query", dbs, "a.uses(?x) => ?x"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One outside is refused, by the server at startup and by a query.
    std::os::unix::fs::symlink(&secret, modules.join("evil.dl")).unwrap();
    refused(&strata(&["serve", dbs, "--stdio"]), "evil.dl");
    refused(&strata(&["query", dbs, "imports(?x, _) => ?x"]), "evil.dl");
}

#[test]
fn issue20_pack_link_outside_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = make_db(tmp.path());
    let secret = tmp.path().join("passwd");
    std::fs::write(&secret, format!("{SECRET}\n")).unwrap();
    std::os::unix::fs::symlink(&secret, db.join("strata.toml")).unwrap();
    refused(
        &strata(&["serve", db.to_str().unwrap(), "--stdio"]),
        "strata.toml",
    );
}

//! `strata hook install` in a throwaway git repository: the script it writes, a commit that
//! runs it (with `cp` of a fixture index standing in for the indexer) and the database's
//! snapshot then labelled with that commit; a foreign hook refused, kept with `--force` and
//! put back by `uninstall`.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../store/tests/scip/support.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::{document, documents_field, metadata, occurrence};

const BIN: &str = env!("CARGO_BIN_EXE_strata");
const HELPER: &str = "t npm demo 1 src/`b.ts`/helper().";

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = run(Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn strata(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run strata")
}

fn index(paths: &[&str]) -> Vec<u8> {
    let mut bytes = metadata("file:///home/me/demo");
    for p in paths {
        bytes.extend(documents_field(&document(p, &[occurrence(0, HELPER, 1)])));
    }
    bytes
}

/// The labels of the snapshot an answer of the database in `db` names.
fn snapshot_commit(db: &str) -> String {
    let out = strata(&["query", db, "document(?p, _) => ?p", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    j["snapshot"]["labels"]["commit"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_commit_reindexes_and_labels_the_snapshot_with_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let fixture = tmp.path().join("fixture.scip");
    std::fs::write(&fixture, index(&["src/a.ts", "src/b.ts"])).unwrap();
    let db = tmp.path().join("db");
    let dbs = db.to_str().unwrap();
    let indexer = format!("cp '{}' index.scip", fixture.display());
    let install = |extra: &[&str]| {
        let mut args = vec![
            "hook",
            "install",
            "--repo-dir",
            repo.to_str().unwrap(),
            dbs,
            "--indexer",
            &indexer,
            "--repo",
            "mine",
        ];
        args.extend_from_slice(extra);
        strata(&args)
    };
    let out = install(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hook = repo.join(".git/hooks/post-commit");
    let script = std::fs::read_to_string(&hook).unwrap();
    assert!(script.starts_with("#!/bin/sh\n# strata-hook: "), "{script}");
    assert!(script.contains(&format!("\n{indexer}\n")), "{script}");
    assert!(
        script.contains(
            "\"$STRATA\" ingest \"$DB\" \"$INDEX\" --replace --label \"commit=$commit\" --repo 'mine'"
        ),
        "{script}"
    );
    assert!(script.contains(&format!("DB='{dbs}'")), "{script}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&hook).unwrap().permissions().mode() & 0o111,
        0o111
    );
    // Installing again rewrites its own hook.
    let out = install(&[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), script);

    // A commit runs it: the database holds the index, labelled with the commit.
    std::fs::write(repo.join("a.txt"), "one\n").unwrap();
    git(&repo, &["add", "a.txt"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let first = git(&repo, &["rev-parse", "HEAD"]);
    assert_eq!(snapshot_commit(dbs), first);
    let out = strata(&["query", dbs, "document(?p, _) => ?p"]);
    let rows = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        rows.contains("mine/src/a.ts") && rows.contains("mine/src/b.ts"),
        "{rows}"
    );

    // The next commit's index lacks b.ts; committed with hooks off, the hook run by hand.
    std::fs::write(&fixture, index(&["src/a.ts"])).unwrap();
    std::fs::write(repo.join("a.txt"), "two\n").unwrap();
    let no_hooks = tmp.path().join("no-hooks");
    std::fs::create_dir(&no_hooks).unwrap();
    let off = format!("core.hooksPath={}", no_hooks.display());
    git(&repo, &["-c", &off, "commit", "-q", "-a", "-m", "second"]);
    assert_eq!(snapshot_commit(dbs), first, "the hook did not run");
    let second = git(&repo, &["rev-parse", "HEAD"]);
    assert_ne!(first, second);
    let out = run(Command::new(&hook).current_dir(&repo));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("1 documents unchanged, 0 replaced, 0 added, 1 removed"),
        "{said}"
    );
    assert_eq!(snapshot_commit(dbs), second);
    let out = strata(&["query", dbs, "document(?p, _) => ?p"]);
    let rows = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!rows.contains("mine/src/b.ts"), "{rows}");

    let out = strata(&["hook", "uninstall", "--repo-dir", repo.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!hook.exists());
}

#[test]
fn a_foreign_hook_is_refused_kept_with_force_and_put_back() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let hook = repo.join(".git/hooks/post-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    let theirs = "#!/bin/sh\necho theirs\n";
    std::fs::write(&hook, theirs).unwrap();
    let rd = repo.to_str().unwrap();
    let db = tmp.path().join("db");
    let args = [
        "hook",
        "install",
        "--repo-dir",
        rd,
        db.to_str().unwrap(),
        "--indexer",
        "scip-typescript index",
    ];
    let out = strata(&args);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not written by strata") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), theirs);
    // Uninstall leaves it alone too.
    let out = strata(&["hook", "uninstall", "--repo-dir", rd]);
    assert!(!out.status.success());
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), theirs);

    let mut forced = args.to_vec();
    forced.push("--force");
    let out = strata(&forced);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read_to_string(&hook)
            .unwrap()
            .contains("scip-typescript index")
    );
    assert_eq!(
        std::fs::read_to_string(repo.join(".git/hooks/post-commit.before-strata")).unwrap(),
        theirs
    );
    let out = strata(&["hook", "uninstall", "--repo-dir", rd]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), theirs);

    // Not a repository: a clear error.
    let out = strata(&[
        "hook",
        "install",
        "--repo-dir",
        tmp.path().to_str().unwrap(),
        "db",
        "--indexer",
        "x",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not inside a git repository"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn issue_30_the_hook_refuses_a_missing_or_empty_index() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    let fixture = tmp.path().join("fixture.scip");
    std::fs::write(&fixture, index(&["src/a.ts"])).unwrap();
    let db = tmp.path().join("db");
    let dbs = db.to_str().unwrap();
    let indexer = format!("cp '{}' index.scip", fixture.display());
    let no_hooks = tmp.path().join("no-hooks");
    std::fs::create_dir(&no_hooks).unwrap();
    let off = format!("core.hooksPath={}", no_hooks.display());
    let rows = || {
        let out = strata(&["query", dbs, "document(?p, _) => ?p"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let commit = |text: &str| {
        std::fs::write(repo.join("a.txt"), text).unwrap();
        git(&repo, &["add", "a.txt"]);
        git(&repo, &["-c", &off, "commit", "-q", "-m", text]);
    };
    let install = |indexer: &str| {
        let out = strata(&[
            "hook",
            "install",
            "--repo-dir",
            repo.to_str().unwrap(),
            dbs,
            "--indexer",
            indexer,
        ]);
        assert!(out.status.success(), "{out:?}");
    };
    let hook = repo.join(".git/hooks/post-commit");
    install(&indexer);
    commit("one");
    run(Command::new(&hook).current_dir(&repo));
    assert!(rows().contains("demo/src/a.ts"), "{}", rows());

    // An indexer that writes nothing (the index of the last run is removed first), one that
    // writes an empty file, and one that writes only metadata: each refused, nothing retracted.
    for (i, bad) in [
        "true".to_owned(),
        ": > index.scip".to_owned(),
        format!(
            "printf '{}' > index.scip",
            metadata("file:///home/me/demo")
                .iter()
                .map(|b| format!("\\{b:03o}"))
                .collect::<String>()
        ),
    ]
    .iter()
    .enumerate()
    {
        install(bad);
        commit(&format!("bad {i}"));
        let out = Command::new(&hook).current_dir(&repo).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}: {err}");
        if i < 2 {
            assert!(
                err.contains("strata hook: the indexer wrote no index at index.scip"),
                "{bad}: {err}"
            );
        } else {
            assert!(
                err.contains("holds no documents of repository demo")
                    && err.contains("--allow-empty"),
                "{bad}: {err}"
            );
        }
        assert!(rows().contains("demo/src/a.ts"), "{bad}: {}", rows());
    }
    // Asked for, an empty index retracts the repository.
    let empty = tmp.path().join("meta.scip");
    std::fs::write(&empty, metadata("file:///home/me/demo")).unwrap();
    let out = strata(&["ingest", dbs, empty.to_str().unwrap(), "--allow-empty"]);
    assert!(!out.status.success(), "--allow-empty needs --replace");
    let out = strata(&[
        "ingest",
        dbs,
        empty.to_str().unwrap(),
        "--replace",
        "--allow-empty",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 removed"),
        "{out:?}"
    );
    assert!(!rows().contains("demo/src/a.ts"), "{}", rows());
}

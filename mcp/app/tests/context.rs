//! `context: N` (issue 32): a SCIP index's source files are hashed at ingest from the
//! repository's checkout, and an answer shows N lines either side of each site it cites
//! while the file is unchanged, else says why not; reading never leaves the checkout.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../store/tests/scip/support.rs"]
mod support;

use std::path::{Path, PathBuf};

use strata_app::ingest::{DumpFiles, dump_specs, ingest};
use strata_app::pack::Pack;
use strata_app::{App, Call, CallError, Options, Page, QueryRequest, Render};
use strata_eval::Cancel;
use strata_store::{BatchOptions, OpenOptions, Store};
use support::{documents_field, len_field, metadata, varint, varint_field};

const F: &str = "scip-python python demo 1 `a`/f().";
const G: &str = "scip-python python demo 1 `a`/g().";

const A_PY: &str =
    "def f():\n    return 1\n\n\ndef g():\n    x = 1\n    y = 2\n    return f()\n\n# end\n";

/// Packed int32s.
fn packed(number: u64, values: &[u64]) -> Vec<u8> {
    let mut p = Vec::new();
    for v in values {
        p.extend(varint(*v));
    }
    len_field(number, &p)
}

/// An occurrence at 0-based `line`, with an enclosing range when given.
fn occ(line: u64, symbol: &str, roles: u64, enclosing: Option<[u64; 4]>) -> Vec<u8> {
    let mut out = packed(1, &[line, 0, 3]);
    out.extend(len_field(2, symbol.as_bytes()));
    if roles != 0 {
        out.extend(varint_field(3, roles));
    }
    if let Some(e) = enclosing {
        out.extend(packed(7, &e));
    }
    out
}

/// An index of `src/a.py` (f defined on line 1, g on line 5, g calling f on line 8) with
/// this project root.
fn index(root: &str) -> Vec<u8> {
    let mut doc = len_field(1, b"src/a.py");
    for o in [
        occ(0, F, 1, Some([0, 0, 1, 12])),
        occ(4, G, 1, Some([4, 0, 7, 14])),
        occ(7, F, 0, None),
    ] {
        doc.extend(len_field(2, &o));
    }
    let mut bytes = metadata(root);
    bytes.extend(documents_field(&doc));
    bytes
}

/// A checkout `demo/` holding `src/a.py`, and the index file beside it.
fn checkout(tmp: &Path) -> (PathBuf, PathBuf) {
    let repo = tmp.join("demo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/a.py"), A_PY).unwrap();
    let file = tmp.join("index.scip");
    std::fs::write(&file, index(&format!("file://{}", repo.display()))).unwrap();
    (repo, file)
}

/// Ingests `file` into `db` (with `--checkout` when given); answers the summary line.
fn ingest_index(db: &Path, file: &Path, checkout: Option<&Path>, replace: bool) -> String {
    let specs = dump_specs(&DumpFiles {
        files: vec![file.to_owned()],
        checkout: checkout.map(Path::to_owned),
        ..DumpFiles::default()
    })
    .unwrap();
    let options = BatchOptions {
        replace,
        ..BatchOptions::default()
    };
    let done = ingest(db, &specs, options, |_, _| {}, || {}).unwrap();
    done.summary.documents.unwrap().to_string()
}

fn app(db: &Path, options: Options) -> App {
    let store = Store::open(db, OpenOptions::default()).unwrap();
    App::new(store, Pack::load(db).unwrap(), options).unwrap()
}

const CALL_SITES: &str = "code.call_sites(?callee, ?caller, ?path, ?line) => ?caller, ?path, ?line";

fn ask(app: &App, context: u32) -> Result<strata_app::QueryResponse, CallError> {
    let r = QueryRequest {
        program: CALL_SITES.to_owned(),
        binds: Vec::new(),
        page: Page {
            context,
            ..Page::default()
        },
    };
    app.query(&Call::plain("query"), &r, &Cancel::new())
}

/// The `context.sites` of an answer's JSON.
fn sites(out: &strata_app::QueryResponse) -> Vec<serde_json::Value> {
    let j = out.json();
    j["context"]["sites"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn issue_32_context_shows_the_lines_of_each_cited_site() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, file) = checkout(tmp.path());
    let db = tmp.path().join("db");
    let summary = ingest_index(&db, &file, None, false);
    let dir = repo.canonicalize().unwrap();
    assert_eq!(
        summary,
        format!(
            "1 document read, 1 source file hashed (checkout {})",
            dir.display()
        )
    );
    let app = app(&db, Options::default());
    let out = ask(&app, 2).unwrap();
    let text = out.text();
    assert!(
        text.contains(
            "\ncontext (2 lines either side):\n  demo/src/a.py:8\n     6 |     x = 1\n     7 |     y = 2\n  >  8 |     return f()\n     9 |\n    10 | # end"
        ),
        "{text}"
    );
    // g's definition site, from `defined at:`.
    assert!(
        text.contains("  demo/src/a.py:5\n    3 |\n    4 |\n  > 5 | def g():\n    6 |     x = 1"),
        "{text}"
    );
    let lines: Vec<&str> = A_PY.lines().collect();
    let sites = sites(&out);
    assert_eq!(sites.len(), 2, "{sites:?}");
    for s in &sites {
        let first = s["first"].as_u64().unwrap() as usize;
        let shown: Vec<&str> = s["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        assert_eq!(shown, lines[first - 1..first - 1 + shown.len()], "{s}");
    }
    assert_eq!(sites[0]["line"], 8);
    assert_eq!(sites[0]["first"], 6);
    // Without context, nothing is read.
    let plain = ask(&app, 0).unwrap();
    assert!(!plain.text().contains("context ("));
    assert!(plain.json().get("context").is_none());
}

#[test]
fn issue_32_a_changed_file_is_stale_until_a_replacing_ingest() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, file) = checkout(tmp.path());
    let db = tmp.path().join("db");
    ingest_index(&db, &file, None, false);
    // An edit that moves no occurrence: the index's bytes stay the same.
    std::fs::write(repo.join("src/a.py"), A_PY.replace("# end", "# the end")).unwrap();
    {
        let app = app(&db, Options::default());
        let text = ask(&app, 1).unwrap().text();
        assert!(
            text.contains("  demo/src/a.py:8 (stale: file changed since ingest)"),
            "{text}"
        );
        let s = sites(&ask(&app, 1).unwrap());
        assert_eq!(s[0]["status"], "stale: file changed since ingest");
        assert!(s[0].get("lines").is_none());
    }
    // The same index again with --replace: its document is rewritten for its new file.
    let summary = ingest_index(&db, &file, None, true);
    assert!(
        summary.starts_with(
            "0 documents unchanged, 1 replaced, 0 added, 0 removed, 1 source file hashed"
        ),
        "{summary}"
    );
    let app = app(&db, Options::default());
    let text = ask(&app, 2).unwrap().text();
    assert!(text.contains("    10 | # the end"), "{text}");
    // And again: nothing changed, nothing rewritten.
    drop(app);
    let summary = ingest_index(&db, &file, None, true);
    assert!(
        summary.starts_with("1 documents unchanged, 0 replaced"),
        "{summary}"
    );
}

#[test]
fn issue_32_without_a_checkout_the_answer_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("index.scip");
    std::fs::write(&file, index("https://example.com/demo")).unwrap();
    let db = tmp.path().join("db");
    assert_eq!(ingest_index(&db, &file, None, false), "1 document read");
    let app = app(&db, Options::default());
    let text = ask(&app, 2).unwrap().text();
    assert!(text.contains("  demo/src/a.py:8 (no checkout)"), "{text}");
}

#[test]
fn issue_32_a_checkout_given_at_ingest_and_at_serve() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _) = checkout(tmp.path());
    // An index made elsewhere: its project root is not here.
    let file = tmp.path().join("index.scip");
    std::fs::write(&file, index("file:///somewhere/else/demo")).unwrap();
    let db = tmp.path().join("db");
    let summary = ingest_index(&db, &file, Some(&repo), false);
    assert!(summary.contains("1 source file hashed"), "{summary}");
    let text = ask(&app(&db, Options::default()), 1).unwrap().text();
    assert!(text.contains("  >  8 |     return f()"), "{text}");

    // A copy given at serve wins over the recorded checkout; a copy with another file there
    // is stale.
    let copy = tmp.path().join("copy");
    std::fs::create_dir_all(copy.join("src")).unwrap();
    std::fs::write(copy.join("src/a.py"), A_PY).unwrap();
    std::fs::write(repo.join("src/a.py"), "changed\n").unwrap();
    let mut options = Options::default();
    options.checkouts.insert("demo".to_owned(), copy.clone());
    let text = ask(&app(&db, options.clone()), 1).unwrap().text();
    assert!(text.contains("  >  8 |     return f()"), "{text}");
    std::fs::write(copy.join("src/a.py"), "other\n").unwrap();
    let text = ask(&app(&db, options), 1).unwrap().text();
    assert!(
        text.contains("(stale: file changed since ingest)"),
        "{text}"
    );
}

#[cfg(unix)]
#[test]
fn issue_32_a_symlink_out_of_the_checkout_is_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, file) = checkout(tmp.path());
    let db = tmp.path().join("db");
    ingest_index(&db, &file, None, false);
    // The same bytes, outside the checkout, behind a symlink.
    let outside = tmp.path().join("outside.py");
    std::fs::write(&outside, A_PY).unwrap();
    std::fs::remove_file(repo.join("src/a.py")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("src/a.py")).unwrap();
    let text = ask(&app(&db, Options::default()), 1).unwrap().text();
    assert!(
        text.contains("  demo/src/a.py:8 (not shown: outside the checkout)"),
        "{text}"
    );
    assert!(!text.contains("return f()\n"), "{text}");
}

#[cfg(unix)]
#[test]
fn issue_32_a_symlink_out_at_ingest_is_not_hashed() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, file) = checkout(tmp.path());
    let outside = tmp.path().join("outside.py");
    std::fs::write(&outside, A_PY).unwrap();
    std::fs::remove_file(repo.join("src/a.py")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("src/a.py")).unwrap();
    let db = tmp.path().join("db");
    let summary = ingest_index(&db, &file, None, false);
    assert!(
        summary.contains(", 0 source files hashed (checkout "),
        "{summary}"
    );
    assert!(summary.ends_with(", 1 not readable"), "{summary}");
    let text = ask(&app(&db, Options::default()), 1).unwrap().text();
    assert!(
        text.contains("(not hashed at ingest: the file could not be read then)"),
        "{text}"
    );
}

#[test]
fn issue_32_context_past_twenty_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, file) = checkout(tmp.path());
    let db = tmp.path().join("db");
    ingest_index(&db, &file, None, false);
    let app = app(&db, Options::default());
    assert!(ask(&app, 20).is_ok());
    let e = ask(&app, 21).unwrap_err();
    assert_eq!(e.kind(), "context");
    assert_eq!(
        e.to_string(),
        "query: context 21 is out of range; pass from 0 to 20 (lines of source shown either \
         side of each cited site), or leave it out for none"
    );
}

/// packaging 24.2's index and its sources as `store/tests/scip/make-indexes.sh` leaves them,
/// or `None` (said loudly) when they were not made and this is not CI.
fn packaging() -> Option<(PathBuf, PathBuf)> {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
    let index = target.join("scip/packaging.scip");
    let checkout = target.join("scip-tools/packaging/packaging");
    if index.is_file() && checkout.join("packaging/__init__.py").is_file() {
        return Some((index, checkout));
    }
    let what = format!(
        "{} or the sources in {}",
        index.display(),
        checkout.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{what} missing; CI must run store/tests/scip/make-indexes.sh before the tests");
    }
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "\n*** SKIPPED: {what} missing; run store/tests/scip/make-indexes.sh (needs npm, pip \
         and git) to test context over a real index ***\n"
    );
    None
}

#[test]
fn issue_32_a_real_index_shows_its_checkout_lines() {
    let Some((index, checkout)) = packaging() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let summary = ingest_index(&db, &index, Some(&checkout), false);
    // Every document's file is there: all hashed, none unreadable.
    let read: u64 = summary.split(' ').next().unwrap().parse().unwrap();
    assert!(read > 10, "{summary}");
    assert!(
        summary.contains(&format!(", {read} source files hashed (checkout ")),
        "{summary}"
    );
    assert!(!summary.contains("not readable"), "{summary}");
    let app = app(&db, Options::default());
    let r = QueryRequest {
        program: CALL_SITES.to_owned(),
        binds: Vec::new(),
        page: Page {
            limit: Some(20),
            context: 2,
            ..Page::default()
        },
    };
    let out = app
        .query(&Call::plain("query"), &r, &Cancel::new())
        .unwrap();
    let sites = sites(&out);
    assert!(sites.len() >= 10, "{sites:?}");
    for s in &sites {
        let path = s["path"].as_str().unwrap();
        let relative = path.strip_prefix("packaging/").unwrap();
        let file = std::fs::read_to_string(checkout.join(relative)).unwrap();
        let lines: Vec<&str> = file.lines().collect();
        let line = s["line"].as_u64().unwrap() as usize;
        let first = s["first"].as_u64().unwrap_or_else(|| panic!("{s}")) as usize;
        let shown: Vec<&str> = s["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        assert_eq!(first, line.saturating_sub(2).max(1), "{s}");
        assert_eq!(shown.len(), (line + 2).min(lines.len()) + 1 - first, "{s}");
        assert_eq!(shown, lines[first - 1..first - 1 + shown.len()], "{s}");
    }
    // The text shows the same lines, the site's own marked.
    let text = out.text();
    let s = &sites[0];
    let line = s["line"].as_u64().unwrap();
    let own = s["lines"][(line - s["first"].as_u64().unwrap()) as usize]
        .as_str()
        .unwrap();
    let want = if own.is_empty() {
        format!("{line} |")
    } else {
        format!("{line} | {own}")
    };
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with('>') && l.ends_with(&want)),
        "{text}"
    );
}

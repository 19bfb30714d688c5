//! Issue 30, finding 4: a module that does not parse or check fails alone. It is refused
//! (on standard error, and in the answer of a call that uses it, with its line and caret),
//! the last version of it that loaded keeps serving, and calls that do not use it answer
//! as before.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use strata_app::ingest::{DumpFiles, dump_specs, ingest};
use strata_app::pack::Pack;
use strata_app::{
    App, Call, CallError, CypherRequest, LookRequest, Options, Page, QueryRequest, Render,
    SchemaRequest,
};
use strata_eval::Cancel;
use strata_store::{BatchOptions, OpenOptions, Store};

fn app(dir: &Path) -> App {
    let files = strata_fixtures::example::write_example(dir).unwrap();
    let specs = dump_specs(&DumpFiles {
        files,
        ..DumpFiles::default()
    })
    .unwrap();
    ingest(dir, &specs, BatchOptions::default(), |_, _| {}, || {}).unwrap();
    let store = Store::open(dir, OpenOptions::default()).unwrap();
    App::new(store, Pack::load(dir).unwrap(), Options::default()).unwrap()
}

fn query(app: &App, program: &str) -> Result<strata_app::QueryResponse, CallError> {
    let r = QueryRequest {
        program: program.to_owned(),
        binds: Vec::new(),
        page: Page::default(),
    };
    app.query(&Call::plain("query"), &r, &Cancel::new())
}

/// Writes `text` as `dir/modules/NAME`, so that the folder's stamp changes (a longer text).
fn write_module(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join("modules").join(name), text).unwrap();
}

const USES_DEPS: &str = r#"deps.depends_on("app", ?d) => ?d"#;

#[test]
fn issue_30_bad_module_fails_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    let before = query(&app, USES_DEPS).unwrap();
    assert_eq!(before.answer.answer.total, 3);
    assert!(before.run.modules_refused.is_empty());

    // A syntax error written while serving.
    write_module(
        tmp.path(),
        "deps.dl",
        "depends_on(?a, ?b) :- imports(?a ?b);\n# broken while serving\n",
    );

    // A program over stored relations, look, schema and cypher answer as before.
    let stored = query(&app, r#"imports("api", ?d) => ?d"#).unwrap();
    assert_eq!(stored.answer.answer.total, 2, "{}", stored.text());
    assert!(stored.run.modules_refused.is_empty());
    assert!(!stored.text().contains("deps.dl"), "{}", stored.text());
    let call = |tool: &str| Call::plain(tool);
    let look = app
        .look(
            &call("look"),
            &LookRequest {
                target: "imports".to_owned(),
            },
        )
        .unwrap();
    assert!(look.text().contains("imports"), "{}", look.text());
    let schema = app
        .schema(&call("schema"), &SchemaRequest::default())
        .unwrap();
    assert!(
        schema.text().contains("deps.depends_on"),
        "{}",
        schema.text()
    );
    let cypher = app
        .cypher(
            &call("cypher"),
            &CypherRequest {
                query: "MATCH (a:Package)-[:IMPORTS]->(b:Package) RETURN b.name AS to".to_owned(),
                params: Vec::new(),
                page: Page::default(),
            },
            &Cancel::new(),
        )
        .unwrap();
    assert!(cypher.answer.answer.total > 0);

    // A program using the module: the last good version answers, and the answer says why,
    // with the module's line and caret.
    let used = query(&app, USES_DEPS).unwrap();
    assert_eq!(used.answer.answer.total, 3, "{}", used.text());
    let text = used.text();
    assert!(
        text.contains(
            "note: modules/deps.dl does not load, so the last version of module deps that \
             loaded answered:\nmodules/deps.dl:"
        ),
        "{text}"
    );
    assert!(text.contains("line 1, column"), "{text}");
    assert!(text.contains('^'), "{text}");
    let json = serde_json::to_value(&used).unwrap();
    assert_eq!(json["modules_refused"].as_array().map(Vec::len), Some(1));

    // Fixed: served as written, and no note.
    write_module(
        tmp.path(),
        "deps.dl",
        "depends_on(?a, ?b) :- imports(?a, ?b);\n# fixed, one step only now\n",
    );
    let fixed = query(&app, USES_DEPS).unwrap();
    assert_eq!(fixed.answer.answer.total, 1, "{}", fixed.text());
    assert!(fixed.run.modules_refused.is_empty());
}

#[test]
fn issue_30_bad_module_with_no_good_version_is_named_beside_the_error() {
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    // A new module that never loaded: left out, and a program naming it is told why.
    write_module(tmp.path(), "extra.dl", "e(?a) :- nothing(?a);\n");
    let e = query(&app, "extra.e(?a) => ?a").unwrap_err();
    let text = e.to_string();
    assert!(text.contains("unknown relation \"extra.e\""), "{text}");
    assert!(
        text.contains(
            "modules/extra.dl does not load, so module extra is left out until it loads (no \
             earlier version of it loaded):\nmodules/extra.dl: unknown relation \"nothing\""
        ),
        "{text}"
    );
    assert!(text.contains('^'), "{text}");
    assert_eq!(e.kind(), "program");
    assert_eq!(
        e.json()["error"]["modules_refused"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    // The other modules serve; a program not naming it is not told of it.
    let deps = query(&app, USES_DEPS).unwrap();
    assert_eq!(deps.answer.answer.total, 3);
    assert!(deps.run.modules_refused.is_empty());
    let other = query(&app, "nope.x(?a) => ?a").unwrap_err().to_string();
    assert!(!other.contains("extra.dl"), "{other}");
}

#[test]
fn issue_30_bad_module_at_open_does_not_stop_the_application() {
    let tmp = tempfile::tempdir().unwrap();
    drop(app(tmp.path()));
    write_module(tmp.path(), "broken.dl", "b(?a) :- imports(?a;\n");
    let app = App::open(tmp.path(), Options::default()).unwrap();
    assert_eq!(query(&app, USES_DEPS).unwrap().answer.answer.total, 3);
    let e = query(&app, "broken.b(?a) => ?a").unwrap_err().to_string();
    assert!(e.contains("modules/broken.dl does not load"), "{e}");
}

//! Issue 31: a large `.facts` relation is stored with its first column indexed, and a
//! server builds a later column's postings after a call that looked the relation up by it
//! alone; a one-shot application builds nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use strata_app::pack::Pack;
use strata_app::{App, Call, Options, QueryRequest, Render};
use strata_eval::Cancel;
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

/// A store holding `pairs(c1, c2)`: 500 pairs, the second column one of 37 values, stored
/// with its second column on demand.
fn pairs_store(dir: &std::path::Path) -> Store {
    let store = Store::open(
        dir,
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )
    .unwrap();
    let dump: String = (0..500u32)
        .map(|i| format!("{i}\t{}\n", i * 7 % 37))
        .collect();
    let options = BatchOptions {
        on_demand_rows: 100,
        ..BatchOptions::default()
    };
    let mut batch = store.batch(options).unwrap();
    let spec = DumpSpec {
        label: "pairs.facts".into(),
        format: Format::Facts,
        relation: Some("pairs".into()),
        unit: None,
        checkout: None,
    };
    batch.read_dump(dump.as_bytes(), &spec).unwrap();
    batch.commit().unwrap();
    assert_eq!(
        store.catalog().unwrap().relations["pairs"].on_demand,
        vec![1]
    );
    store
}

fn ask(app: &App, program: &str) -> String {
    let r = QueryRequest {
        program: program.to_owned(),
        binds: Vec::new(),
        page: Default::default(),
    };
    app.query(&Call::plain("query"), &r, &Cancel::new())
        .unwrap()
        .text()
}

/// An answer's text without its notes.
fn rows_of(answer: &str) -> String {
    answer
        .lines()
        .filter(|l| !l.starts_with("note: "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether relation `pairs` still keeps its second column on demand.
fn on_demand(app: &App) -> bool {
    !app.store().catalog().unwrap().relations["pairs"]
        .on_demand
        .is_empty()
}

#[test]
fn issue31_a_server_builds_the_index_a_call_looked_a_relation_up_by() {
    let tmp = tempfile::tempdir().unwrap();
    let app = App::new(pairs_store(tmp.path()), Pack::default(), Options::default()).unwrap();
    let by_second = "pairs(?a, 5) => ?a";
    let answer = ask(&app, by_second);
    // The answer says the relation was read whole, and how to index the column.
    assert!(
        answer.ends_with(
            "\nnote: pairs was read whole, as c2 has no index (`strata index DB pairs=c1,c2` \
             builds one)"
        ),
        "{answer}"
    );
    let rows = rows_of(&answer);
    assert!(rows.contains("14 rows"), "{rows}");
    // A one-shot application answers by reading the relation, and builds nothing.
    std::thread::sleep(Duration::from_millis(200));
    assert!(on_demand(&app));
    // A server's: a lookup by the first column wants nothing; one by the second starts
    // the build after the call, and later calls answer the same from the index.
    app.build_indexes_on_demand();
    ask(&app, "pairs(5, ?b) => ?b");
    std::thread::sleep(Duration::from_millis(200));
    assert!(on_demand(&app));
    assert_eq!(rows_of(&ask(&app, by_second)), rows);
    let started = Instant::now();
    while on_demand(&app) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the index was not built"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let rel = app.store().catalog().unwrap().relations["pairs"].clone();
    assert!(rel.unindexed.is_empty());
    assert_eq!(rel.distinct, vec![500, 37]);
    // Served by the index now: the same rows, and no note.
    assert_eq!(ask(&app, by_second), rows);
    assert!(app.store().check().unwrap().ok());
}

//! Issue 30: a storage failure under a running server never needs a restart. A store opened
//! on a backend that fails its Nth storage call serves the example database (the
//! application and its ingest socket over one store, as `strata serve` has them); a batch
//! handed over the socket meets the fault at every point the sweep reaches, and then, with
//! no reopening by hand, the next query answers (from the last committed batch, or from the
//! failed one when its final commit landed) and the retried batch commits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use strata_app::ingest::{DumpFiles, dump_specs, ingest};
use strata_app::ingest_socket::{IngestListener, send_batch};
use strata_app::pack::Pack;
use strata_app::{App, Call, Options, Page, QueryRequest, Render};
use strata_eval::Cancel;
use strata_store::backend::faulty::{Mode, Plan};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

/// The batch handed to the server: 400 new `imports` edges.
fn batch_file(dir: &Path) -> (PathBuf, DumpSpec) {
    let path = dir.join("more.edges.tsv");
    let text: String = (0..400)
        .map(|i| format!("n{i}\tIMPORTS\tn{}\n", i + 1))
        .collect();
    std::fs::write(&path, text).unwrap();
    let spec = DumpSpec {
        label: "more.edges.tsv".to_owned(),
        format: Format::Edges,
        relation: None,
        unit: Some("more".to_owned()),
        checkout: None,
    };
    (path, spec)
}

/// The example database, ingested on a healthy backend.
fn example(dir: &Path) {
    let files = strata_fixtures::example::write_example(dir).unwrap();
    let specs = dump_specs(&DumpFiles {
        files,
        ..DumpFiles::default()
    })
    .unwrap();
    ingest(dir, &specs, BatchOptions::default(), |_, _| {}, || {}).unwrap();
}

/// How many `imports` facts the application answers.
fn imports(app: &App) -> Result<u64, String> {
    let r = QueryRequest {
        program: "imports(?a, ?b) => count(?a)".to_owned(),
        binds: Vec::new(),
        page: Page::default(),
    };
    let out = app
        .query(&Call::plain("query"), &r, &Cancel::new())
        .map_err(|e| e.to_string())?;
    let j = out.json();
    j["rows"][0][0]
        .as_u64()
        .ok_or_else(|| format!("no count in {j}"))
}

/// What the sweep saw.
#[derive(Debug, Default)]
struct Tally {
    points: u64,
    failed_open: u64,
    failed_ingest: u64,
    landed_anyway: u64,
    failed_first_query: u64,
    reopened: u64,
}

fn options() -> BatchOptions {
    BatchOptions {
        batch_id: Some("more-1".to_owned()),
        // A flush per few facts: the batch writes runs and merges them at its commit.
        buffer_facts: 50,
        ..BatchOptions::default()
    }
}

/// One fault point: whether the fault happened.
fn at_point(root: &Path, golden: (u64, u64), at: u64, tally: &mut Tally) -> bool {
    let dir = root.join(format!("db-{at}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(root.join("golden/strata.redb"), dir.join("strata.redb")).unwrap();
    let plan = Plan::new(Mode::Fail, at);
    let open = OpenOptions {
        backends: Some(plan.backends()),
        ..OpenOptions::default()
    };
    let served = Store::open(&dir, open)
        .map_err(|e| e.to_string())
        .and_then(|store| {
            let app = App::new(store.clone(), Pack::load(&dir).unwrap(), Options::default())
                .map_err(|e| e.to_string())?;
            let listener = IngestListener::bind(store.clone()).map_err(|e| e.to_string())?;
            Ok((store, app, listener))
        });
    let Ok((store, app, listener)) = served else {
        tally.points += u64::from(plan.tripped());
        tally.failed_open += 1;
        std::fs::remove_dir_all(&dir).unwrap();
        return plan.tripped();
    };
    let (before, after) = golden;
    let file = batch_file(root);
    let sent = send_batch(&dir, &options(), std::slice::from_ref(&file));
    // The next query answers with no restart: a query that meets the fault itself fails,
    // and the one after it answers.
    let now = imports(&app).or_else(|_| {
        tally.failed_first_query += 1;
        imports(&app)
    });
    let now = now.unwrap_or_else(|e| panic!("fault at {at} ({sent:?}): the next query: {e}"));
    match &sent {
        Ok(s) => {
            assert!(!s.already_committed, "fault at {at}");
            assert_eq!(now, after, "fault at {at}: the batch was acknowledged");
        }
        Err(e) => {
            tally.failed_ingest += 1;
            if now == after {
                tally.landed_anyway += 1;
            } else {
                assert_eq!(now, before, "fault at {at} ({e}): the next query");
            }
        }
    }
    // The next batch through the socket commits (or is recognised as committed).
    let retry = send_batch(&dir, &options(), &[file])
        .unwrap_or_else(|e| panic!("fault at {at} ({sent:?}): the next ingest: {e}"));
    assert_eq!(retry.already_committed, sent.is_ok() || now == after);
    assert_eq!(
        imports(&app).unwrap(),
        after,
        "fault at {at}: after the retry"
    );
    assert!(store.check().unwrap().ok(), "fault at {at}: check fails");
    tally.points += u64::from(plan.tripped());
    tally.reopened += store.reopened();
    drop((listener, app, store));
    std::fs::remove_dir_all(&dir).unwrap();
    plan.tripped()
}

#[test]
fn issue_30_a_served_ingest_failing_at_any_storage_call_needs_no_restart() {
    let root = tempfile::tempdir().unwrap();
    let golden = root.path().join("golden");
    example(&golden);
    let count = |dir: &Path| {
        let store = Store::open(dir, OpenOptions::default()).unwrap();
        let app = App::new(store, Pack::load(dir).unwrap(), Options::default()).unwrap();
        imports(&app).unwrap()
    };
    let before = count(&golden);
    let after = {
        let copy = root.path().join("after");
        std::fs::create_dir_all(&copy).unwrap();
        std::fs::copy(golden.join("strata.redb"), copy.join("strata.redb")).unwrap();
        let store = Store::open(&copy, OpenOptions::default()).unwrap();
        let mut batch = store.batch(options()).unwrap();
        let (path, spec) = batch_file(root.path());
        batch
            .read_dump(
                std::io::BufReader::new(std::fs::File::open(path).unwrap()),
                &spec,
            )
            .unwrap();
        batch.commit().unwrap();
        drop(store);
        count(&copy)
    };
    assert_eq!(after, before + 400);
    let mut tally = Tally::default();
    for at in 1.. {
        let (tx, rx) = mpsc::channel();
        let r = root.path().to_owned();
        std::thread::spawn(move || {
            let mut t = Tally::default();
            let tripped = at_point(&r, (before, after), at, &mut t);
            let _ = tx.send((tripped, t));
        });
        let (tripped, t) = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("fault at {at}: the sweep hung or panicked"));
        tally.points += t.points;
        tally.failed_open += t.failed_open;
        tally.failed_ingest += t.failed_ingest;
        tally.landed_anyway += t.landed_anyway;
        tally.failed_first_query += t.failed_first_query;
        tally.reopened += t.reopened;
        if !tripped {
            break;
        }
    }
    eprintln!("served ingest under faults: {tally:?}");
    assert!(tally.points > 30, "only {} fault points", tally.points);
    assert!(tally.failed_ingest > 0 && tally.reopened > 0, "{tally:?}");
}

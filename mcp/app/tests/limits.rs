//! Issue 18's limits in the application core: the memory cap (the application's, lowered by
//! a request, never raised) stops a runaway program with an error naming the limit and where
//! the memory went; the gate of heavy calls refuses a heavy call while the slots are taken,
//! and cheap lookups keep answering meanwhile.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use strata_app::host::{HostOptions, Source};
use strata_app::pack::Pack;
use strata_app::{
    App, Call, CallError, LookRequest, Options, Page, QueryRequest, Render, SchemaRequest,
};
use strata_eval::Cancel;
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

use strata_fixtures::runaway::CROSS;

/// A store holding a generated call graph: `n` functions, each calling three others.
fn calls_store(dir: &std::path::Path, n: u32) -> Store {
    let store = Store::open(
        dir,
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )
    .unwrap();
    let dump = strata_fixtures::runaway::calls_edges(n);
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    let spec = DumpSpec {
        label: "calls.edges.tsv".into(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    batch.read_dump(dump.as_bytes(), &spec).unwrap();
    batch.commit().unwrap();
    store
}

fn query(program: &str, max_memory: Option<u64>) -> QueryRequest {
    QueryRequest {
        program: program.to_owned(),
        binds: Vec::new(),
        page: Page {
            max_memory,
            ..Page::default()
        },
    }
}

fn capped(max_memory: Option<u64>) -> Options {
    Options {
        max_memory,
        ..Options::default()
    }
}

#[test]
fn issue18_a_runaway_query_stops_at_the_memory_cap_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = calls_store(tmp.path(), 600);
    let app = App::new(store, Pack::default(), capped(Some(1 << 20))).unwrap();
    let call = Call::plain("query");
    // A request asking for more is lowered to the application's cap.
    for asked in [None, Some(1 << 40)] {
        let err = app
            .query(&call, &query(CROSS, asked), &Cancel::new())
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(
                "the program passed its memory limit of 1.0 MiB (1048576 bytes); it held"
            ),
            "{text}"
        );
        assert!(text.contains("indexes"), "{text}");
        assert_eq!(err.kind(), "evaluation");
    }
    // The same program, with room, answers; so does the application after the failures.
    let roomy = App::new(
        calls_store(&tmp.path().join("b"), 600),
        Pack::default(),
        capped(Some(1 << 34)),
    )
    .unwrap();
    let free = App::new(
        calls_store(&tmp.path().join("c"), 600),
        Pack::default(),
        capped(None),
    )
    .unwrap();
    let a = roomy
        .query(&call, &query(CROSS, None), &Cancel::new())
        .unwrap();
    let b = free
        .query(&call, &query(CROSS, None), &Cancel::new())
        .unwrap();
    assert_eq!(a.text(), b.text());
    assert!(a.text().contains("600"), "{}", a.text());
}

#[test]
fn a_request_may_lower_the_memory_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let app = App::new(calls_store(tmp.path(), 600), Pack::default(), capped(None)).unwrap();
    let err = app
        .query(
            &Call::plain("query"),
            &query(CROSS, Some(2 << 20)),
            &Cancel::new(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("memory limit of 2.0 MiB"), "{err}");
}

#[test]
fn a_memory_cap_of_zero_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let err = App::new(
        calls_store(tmp.path(), 10),
        Pack::default(),
        capped(Some(0)),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("memory limit"), "{err}");
}

/// With one heavy slot, held by an `explain` blocked (in the host's base hook, until the
/// test lets it go), a heavy query (past the light lane's work) waits and is refused naming
/// the limit, while a light query, `look` and `schema` answer; once the first is done,
/// heavy queries are admitted again.
#[test]
fn issue18_a_heavy_call_past_the_gate_is_refused_while_lookups_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let store = calls_store(tmp.path(), 50);
    let (entered_tx, entered) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let entered_tx = Mutex::new(entered_tx);
    let released = Mutex::new(released);
    let block = AtomicBool::new(true);
    let base_store = store.clone();
    let host = HostOptions {
        base_for: Some(Arc::new(move |ctx, _relations| {
            // Only the first explain blocks; everything else goes through.
            if ctx.tool == "explain" && block.swap(false, Ordering::SeqCst) {
                entered_tx.lock().unwrap().send(()).unwrap();
                released.lock().unwrap().recv().unwrap();
            }
            let snap = base_store.snapshot().map_err(|e| e.to_string())?;
            Ok(Arc::new(snap) as Source)
        })),
        ..HostOptions::default()
    };
    let options = Options {
        heavy_calls: Some(1),
        admission_wait: Duration::from_millis(100),
        // The heavy query's 3.4M solutions took 27 s of a debug build at load 9: this test
        // is about the gate, not the deadline.
        timeout: Duration::from_secs(600),
        ..Options::default()
    };
    let app = App::with_host(store, Pack::default(), options, host).unwrap();
    let light = "calls(?a, ?b) => count(?b)";
    // 150 facts cubed: past the light lane's 200,000 units.
    let heavy = "calls(?a, ?b), calls(?c, ?d), calls(?e, ?f) => count(?a)";
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            let r = strata_app::ExplainRequest {
                program: light.to_owned(),
                binds: Vec::new(),
                max_work: 0,
                max_memory: None,
            };
            app.explain(&Call::plain("explain"), &r, &Cancel::new())
                .map(|r| r.text())
        });
        entered.recv().unwrap();
        assert_eq!(app.admission().unwrap().running(), 1);
        let err = app
            .query(&Call::plain("query"), &query(heavy, None), &Cancel::new())
            .unwrap_err();
        assert!(matches!(err, CallError::Busy { limit: 1, .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with(
                "query: the server is busy: it runs at most 1 heavy call (query, cypher, explain, ask) at once"
            ),
            "{text}"
        );
        assert_eq!(err.kind(), "busy");
        // A light query answers without a slot.
        let answered = app
            .query(&Call::plain("query"), &query(light, None), &Cancel::new())
            .unwrap()
            .text();
        assert!(answered.contains("150"), "{answered}");
        // Cheap lookups never pass through the gate.
        let look = app
            .look(
                &Call::plain("look"),
                &LookRequest {
                    target: "calls".to_owned(),
                },
            )
            .unwrap();
        assert!(look.text().contains("calls"), "{}", look.text());
        app.schema(&Call::plain("schema"), &SchemaRequest::default())
            .unwrap();
        release.send(()).unwrap();
        first.join().unwrap().unwrap();
    });
    assert_eq!(app.admission().unwrap().running(), 0);
    let answered = app
        .query(&Call::plain("query"), &query(heavy, None), &Cancel::new())
        .unwrap()
        .text();
    assert!(answered.contains("3375000"), "{answered}");
}

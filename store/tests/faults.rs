//! Fault injection under the store: a small workload (ingests with units and batch ids into
//! two files, a `--replace`, a retraction, queries) run over every fault point of a storage
//! backend that fails one call, and of one that loses power. At each point the operation that
//! met the fault returns an error (no panic, no hang); the database reopens on a healthy
//! backend, passes `check`, holds every acknowledged batch and nothing of the failed one
//! unless its commit landed, which a retry with its batch id then recognises.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::error::Error;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use strata_eval::{FactSource, Term, Value};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Reclaim, Store};

mod common;

use common::chain;
use strata_store::backend::faulty::{Mode, Plan};

/// One step of the workload.
enum Step {
    /// A batch of one dump with a batch id.
    Ingest {
        id: &'static str,
        tier: &'static str,
        unit: Option<&'static str>,
        replace: bool,
        format: Format,
        text: &'static str,
    },
    /// A retraction with a batch id.
    Retract {
        id: &'static str,
        unit: &'static str,
    },
    /// A batch of no fact with a batch id that sets the indexed columns of a stored
    /// relation (`strata index`): postings dropped or built from the stored rows.
    Index {
        id: &'static str,
        relation: &'static str,
        columns: &'static [&'static str],
    },
    /// Reads through a snapshot and `FactSource`.
    Query,
    /// Closes the database and opens it again (so that the queries after it read pages
    /// through the backend rather than redb's cache).
    Reopen,
}

const WORKLOAD: &[Step] = &[
    Step::Ingest {
        id: "b1",
        tier: "default",
        unit: Some("u1"),
        replace: false,
        format: Format::Edges,
        text: "a\tIMPORTS\tb\nb\tIMPORTS\tc\nc\tCALLS\ta\n",
    },
    Step::Ingest {
        id: "b2",
        tier: "cold",
        unit: Some("u2"),
        replace: false,
        format: Format::Attrs,
        text: "a\tsize\t3\nb\tsize\t4\nd\tweight\t1.5\n",
    },
    Step::Query,
    Step::Ingest {
        id: "b3",
        tier: "default",
        unit: Some("u2"),
        replace: false,
        format: Format::Edges,
        text: "d\tIMPORTS\ta\na\tIMPORTS\tb\n",
    },
    Step::Index {
        id: "i1",
        relation: "imports",
        columns: &["src"],
    },
    Step::Index {
        id: "i2",
        relation: "size",
        columns: &["node"],
    },
    Step::Ingest {
        id: "b4",
        tier: "default",
        unit: Some("u1"),
        replace: true,
        format: Format::Edges,
        text: "a\tIMPORTS\tc\ne\tIMPORTS\ta\n",
    },
    Step::Reopen,
    Step::Query,
    // Built again over the rows the replacement left dead.
    Step::Index {
        id: "i3",
        relation: "imports",
        columns: &["src", "dst"],
    },
    Step::Retract {
        id: "b5",
        unit: "u2",
    },
    Step::Query,
    Step::Ingest {
        id: "b6",
        tier: "cold",
        unit: None,
        replace: false,
        format: Format::Attrs,
        text: "x\tweight\t1e300\ne\tsize\t9\n",
    },
    Step::Reopen,
    Step::Query,
];

type Outcome<T> = Result<T, String>;

fn err(e: impl Error) -> String {
    chain(&e)
}

/// Runs one step. `Ok(Some(already_committed))` for a write, `Ok(None)` for a query.
fn run(store: &Store, step: &Step) -> Outcome<Option<bool>> {
    match step {
        Step::Ingest {
            id,
            tier,
            unit,
            replace,
            format,
            text,
        } => {
            let mut batch = store
                .batch(BatchOptions {
                    tier: (*tier).to_owned(),
                    replace: *replace,
                    batch_id: Some((*id).to_owned()),
                    // A flush per fact: every batch of two or more facts writes postings
                    // runs and merges them at its commit.
                    buffer_facts: 1,
                    ..BatchOptions::default()
                })
                .map_err(err)?;
            let spec = DumpSpec {
                label: format!("{id}.tsv"),
                format: *format,
                relation: None,
                unit: unit.map(str::to_owned),
                checkout: None,
            };
            batch.read_dump(text.as_bytes(), &spec).map_err(err)?;
            let s = batch.commit().map_err(err)?;
            Ok(Some(s.already_committed))
        }
        Step::Retract { id, unit } => {
            let s = store
                .retract(
                    &[(*unit).to_owned()],
                    BatchOptions {
                        batch_id: Some((*id).to_owned()),
                        ..BatchOptions::default()
                    },
                )
                .map_err(err)?;
            Ok(Some(s.already_committed))
        }
        Step::Index {
            id,
            relation,
            columns,
        } => {
            let options = BatchOptions {
                batch_id: Some((*id).to_owned()),
                indexes: BTreeMap::from([(
                    (*relation).to_owned(),
                    columns.iter().map(|c| (*c).to_owned()).collect(),
                )]),
                ..BatchOptions::default()
            };
            let s = store.batch(options).map_err(err)?.commit().map_err(err)?;
            Ok(Some(s.already_committed))
        }
        Step::Query => {
            let snap = store.snapshot_with_tiers(&["cold"]).map_err(err)?;
            let mut n = 0u64;
            let mut count = |_: &[Term]| {
                n += 1;
                ControlFlow::Continue(())
            };
            for rel in ["imports", "calls", "size", "weight"] {
                if snap.relation(rel).map_err(err)?.is_some() {
                    snap.scan(rel, &mut count).map_err(err)?;
                    snap.estimate(rel, &[]).map_err(err)?;
                }
            }
            if let Some(a) = snap.term(&Value::text("a")).map_err(err)? {
                snap.lookup("imports", &[(0, a)], &mut count).map_err(err)?;
                snap.lookup("imports", &[(1, a)], &mut count).map_err(err)?;
                snap.value(a).map_err(err)?;
            }
            snap.term(&Value::Number(1.5)).map_err(err)?;
            store.stats().map_err(err)?;
            Ok(None)
        }
        Step::Reopen => Ok(None),
    }
}

/// Runs `step` on the database in `dir`, open as `*store`; `Step::Reopen` closes it and
/// opens it again (on `plan`'s backend, if any).
fn run_on(
    store: &mut Option<Store>,
    dir: &Path,
    step: &Step,
    plan: Option<&Arc<Plan>>,
    r: R,
) -> Outcome<Option<bool>> {
    if let Step::Reopen = step {
        // Closed before it is opened again: redb holds a lock on each file.
        *store = None;
        *store = Some(open(dir, false, plan, r)?);
        return Ok(None);
    }
    run(store.as_ref().ok_or("the database is not open")?, step)
}

/// Everything the database holds: each relation's rows, rendered and sorted, and the
/// columns it keeps without postings.
type State = BTreeMap<String, Vec<String>>;

fn state(store: &Store) -> Outcome<State> {
    let catalog = store.catalog().map_err(err)?;
    let tiers: Vec<&str> = catalog
        .relations
        .values()
        .map(|m| m.tier.as_str())
        .filter(|t| *t != "default")
        .collect();
    let snap = store.snapshot_with_tiers(&tiers).map_err(err)?;
    let mut out = State::new();
    for rel in catalog.relations.keys() {
        let mut rows = Vec::new();
        let mut bad = None;
        snap.scan(rel, &mut |r| {
            let vals: Result<Vec<Value>, _> = r.iter().map(|t| snap.value(*t)).collect();
            match vals {
                Ok(v) => rows.push(format!("{v:?}")),
                Err(e) => bad = Some(chain(&e)),
            }
            ControlFlow::Continue(())
        })
        .map_err(err)?;
        if let Some(e) = bad {
            return Err(e);
        }
        rows.sort();
        out.insert(rel.clone(), rows);
        // Which columns have postings: what an `Index` step changes.
        let unindexed = &catalog.relations[rel].unindexed;
        out.insert(format!("{rel} unindexed"), vec![format!("{unindexed:?}")]);
    }
    Ok(out)
}

/// How the workload's store reclaims space: `None` as the store does by default (its
/// files are too small to pass the threshold), or eagerly, after every commit.
type R = Option<Reclaim>;

/// Reclaiming after every commit that leaves anything to give back.
const EAGER: R = Some(Reclaim {
    share: 0.0,
    min_bytes: 0,
    background: false,
});

fn open(dir: &Path, create: bool, plan: Option<&Arc<Plan>>, r: R) -> Outcome<Store> {
    Store::open(
        dir,
        OpenOptions {
            create,
            backends: plan.map(|p| p.backends()),
            reclaim: r.or(OpenOptions::default().reclaim),
            ..OpenOptions::default()
        },
    )
    .map_err(err)
}

/// A copy of the database in `orig`, made at `dir`.
fn copy_db(orig: &Path, dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for e in std::fs::read_dir(orig).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    dir.to_path_buf()
}

/// Runs the workload on a faulty backend until a step fails: how many steps were
/// acknowledged (0 is opening the database), and the error of the step that failed.
fn faulted(dir: &Path, plan: &Arc<Plan>, r: R) -> (usize, Option<String>) {
    let mut store = match open(dir, true, Some(plan), r) {
        Ok(s) => Some(s),
        Err(e) => return (0, Some(e)),
    };
    for (i, step) in WORKLOAD.iter().enumerate() {
        if let Err(e) = run_on(&mut store, dir, step, Some(plan), r) {
            return (i + 1, Some(e));
        }
    }
    (WORKLOAD.len() + 1, None)
}

/// The states after each step of a run without faults (index 0: the empty database).
fn golden(dir: &Path, r: R) -> Vec<State> {
    let mut store = Some(open(dir, true, None, r).unwrap());
    let mut states = vec![state(store.as_ref().unwrap()).unwrap()];
    for step in WORKLOAD {
        assert_eq!(
            run_on(&mut store, dir, step, None, r).unwrap(),
            step_is_write(step).then_some(false)
        );
        states.push(state(store.as_ref().unwrap()).unwrap());
    }
    states
}

fn step_is_write(step: &Step) -> bool {
    !matches!(step, Step::Query | Step::Reopen)
}

/// What the sweep of one mode saw.
#[derive(Debug, Default)]
struct Tally {
    points: u64,
    failed_open: u64,
    failed_write: u64,
    failed_read: u64,
    landed_anyway: u64,
    caught_panics: u64,
    absorbed: u64,
}

/// Runs the workload over the fault points of `mode` (see [`points`]).
fn sweep(mode: Mode, r: R) -> Tally {
    let root = tempfile::tempdir().unwrap();
    let golden = golden(&root.path().join("golden"), r);
    let mut tally = Tally::default();
    for at in points(r) {
        let dir = root.path().join(format!("{mode:?}-{at}"));
        let plan = Plan::new(mode, at);
        // A hang is a failure: the workload gets a minute.
        let (tx, rx) = mpsc::channel();
        let (d, p) = (dir.clone(), plan.clone());
        std::thread::spawn(move || {
            let _ = tx.send(faulted(&d, &p, r));
        });
        let (failed_at, error) = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{mode:?} fault at call {at}: the workload hung"));
        if !plan.tripped() {
            assert!(error.is_none(), "{mode:?} no fault, yet: {error:?}");
            break;
        }
        tally.points += 1;
        let Some(error) = error else {
            // The fault hit a call whose failure redb absorbed (a read it retried, a call
            // during close): the workload completed, so the database must hold all of it.
            tally.absorbed += 1;
            let store = open(&dir, false, None, r).unwrap();
            assert!(store.check().unwrap().ok(), "{mode:?} at {at}: check fails");
            assert_eq!(&state(&store).unwrap(), golden.last().unwrap());
            drop(store);
            std::fs::remove_dir_all(&dir).unwrap();
            continue;
        };
        if error.contains("storage engine failed on the file's pages") {
            tally.caught_panics += 1;
        }
        let acked = failed_at.saturating_sub(1);
        let step = failed_at.checked_sub(1).map(|i| &WORKLOAD[i]);
        match step {
            None => tally.failed_open += 1,
            Some(s) if step_is_write(s) => tally.failed_write += 1,
            Some(_) => tally.failed_read += 1,
        }
        // Reopen on a healthy backend.
        let store = open(&dir, acked == 0, None, r)
            .unwrap_or_else(|e| panic!("{mode:?} at {at} ({error}): reopening: {e}"));
        let report = store
            .check()
            .unwrap_or_else(|e| panic!("{mode:?} at {at} ({error}): check: {}", chain(&e)));
        assert!(
            report.ok(),
            "{mode:?} at {at} ({error}): check finds problems:\n{report}"
        );
        let now = state(&store).unwrap();
        let landed = if now == golden[acked] {
            false
        } else if step.is_some_and(step_is_write) && now == golden[acked + 1] {
            tally.landed_anyway += 1;
            true
        } else {
            panic!(
                "{mode:?} at {at} ({error}): after {acked} acknowledged steps the database \
                 holds {now:?}, expected {:?}",
                golden[acked]
            );
        };
        // Retry the failed step, then finish the workload, on the healthy backend.
        let rest = failed_at.saturating_sub(1);
        let mut store = Some(store);
        for (i, s) in WORKLOAD.iter().enumerate().skip(rest) {
            let done = run_on(&mut store, &dir, s, None, r).unwrap_or_else(|e| {
                panic!("{mode:?} at {at}: step {} after reopening: {e}", i + 1)
            });
            if failed_at > 0 && i == rest && step_is_write(s) {
                assert_eq!(
                    done,
                    Some(landed),
                    "{mode:?} at {at}: a retry must be a no-op exactly when the batch landed"
                );
            }
            let now = state(store.as_ref().unwrap()).unwrap();
            assert_eq!(now, golden[i + 1], "{mode:?} at {at}");
        }
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    tally
}

#[test]
fn issue20_every_failed_storage_call_is_an_error_and_loses_no_acknowledged_batch() {
    let t = sweep(Mode::Fail, None);
    eprintln!("failing one call: {t:?}");
    assert!(t.points > 50, "only {} fault points", t.points);
    assert!(t.failed_write > 0 && t.failed_read > 0);
    assert_eq!(t.caught_panics, 0, "redb panicked on a failed call");
}

#[test]
fn issue20_power_loss_at_any_storage_call_keeps_exactly_the_acknowledged_batches() {
    let t = sweep(Mode::Crash, None);
    eprintln!("power loss: {t:?}");
    assert!(t.points > 50, "only {} fault points", t.points);
    assert!(t.failed_write > 0 && t.failed_read > 0);
    assert_eq!(t.caught_panics, 0, "redb panicked after a power loss");
}

/// What the healing sweep saw.
#[derive(Debug, Default)]
struct Healed {
    points: u64,
    failed_steps: u64,
    reopened: u64,
    landed_anyway: u64,
}

/// Runs the workload on one store over a backend failing call `at`, never closing the store
/// by hand after a failure: the step after a failed one reads at once, the failed one is then
/// retried, and the rest of the workload finishes on the same store.
fn heal_at(root: &Path, golden: &[State], at: u64, tally: &mut Healed, r: R) -> bool {
    let dir = root.join(format!("heal-{at}"));
    let plan = Plan::new(Mode::Fail, at);
    let Ok(store) = open(&dir, true, Some(&plan), r) else {
        // The fault hit the opening itself: nothing is open to heal.
        tally.points += 1;
        std::fs::remove_dir_all(&dir).ok();
        return true;
    };
    let mut store = Some(store);
    let mut i = 0;
    while i < WORKLOAD.len() {
        let step = &WORKLOAD[i];
        if let (Step::Reopen, Some(s)) = (step, store.as_ref()) {
            tally.reopened += s.reopened();
        }
        match run_on(&mut store, &dir, step, Some(&plan), r) {
            Ok(_) => {
                // A read that meets the fault fails; the next one answers.
                let s = store.as_ref().unwrap();
                let now = state(s).or_else(|_| {
                    tally.failed_steps += 1;
                    state(s)
                });
                let now = now
                    .unwrap_or_else(|e| panic!("heal at {at}: reading after step {}: {e}", i + 1));
                assert_eq!(now, golden[i + 1], "heal at {at}: after step {}", i + 1);
                i += 1;
            }
            Err(error) => {
                tally.failed_steps += 1;
                let Some(s) = store.as_ref() else {
                    // The workload's own reopening failed: it is tried again.
                    assert!(matches!(step, Step::Reopen), "heal at {at}: no store");
                    continue;
                };
                // The very next read answers, from the last committed batch (or this one,
                // when its final commit landed), with no reopening by hand.
                let now = state(s)
                    .unwrap_or_else(|e| panic!("heal at {at} ({error}): the next read: {e}"));
                if now != golden[i] {
                    assert!(
                        step_is_write(step) && now == golden[i + 1],
                        "heal at {at} ({error}): the next read sees {now:?}"
                    );
                    tally.landed_anyway += 1;
                }
                assert!(
                    s.check()
                        .unwrap_or_else(|e| panic!("heal at {at} ({error}): check: {e}"))
                        .ok(),
                    "heal at {at} ({error}): check fails on the healed store"
                );
                // The retry runs on the same store; its outcome is checked above.
                let retried = run_on(&mut store, &dir, step, Some(&plan), r)
                    .unwrap_or_else(|e| panic!("heal at {at} ({error}): the retry: {e}"));
                if step_is_write(step) {
                    assert_eq!(retried, Some(now != golden[i]), "heal at {at}");
                }
                let now = state(store.as_ref().unwrap()).unwrap();
                assert_eq!(now, golden[i + 1], "heal at {at}: after the retry");
                i += 1;
            }
        }
    }
    tally.points += u64::from(plan.tripped());
    tally.reopened += store.as_ref().map_or(0, Store::reopened);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
    plan.tripped()
}

#[test]
fn issue_30_a_failed_storage_call_heals_the_open_store_without_a_restart() {
    heal_sweep(None);
}

#[test]
fn issue31_a_failed_reclaim_loses_nothing_and_the_store_heals() {
    heal_sweep(EAGER);
}

#[test]
fn issue31_a_failed_storage_call_while_reclaiming_loses_no_acknowledged_batch() {
    let t = sweep(Mode::Fail, EAGER);
    eprintln!("failing one call, reclaiming after every commit: {t:?}");
    assert!(t.points > 50, "only {} fault points", t.points);
    assert_eq!(t.caught_panics, 0, "redb panicked on a failed call");
}

#[test]
fn issue31_power_loss_while_reclaiming_keeps_exactly_the_acknowledged_batches() {
    let t = sweep(Mode::Crash, EAGER);
    eprintln!("power loss, reclaiming after every commit: {t:?}");
    assert!(t.points > 50, "only {} fault points", t.points);
    assert_eq!(t.caught_panics, 0, "redb panicked after a power loss");
}

/// The fault points a sweep visits: each one, or with `r` reclaiming after every commit
/// (whose compactions make several times as many) every third, or every
/// `STRATA_FAULT_STRIDE`th (1: each one, a long run).
fn points(r: R) -> impl Iterator<Item = u64> {
    let stride = match r {
        None => 1,
        Some(_) => std::env::var("STRATA_FAULT_STRIDE")
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|&s: &usize| s > 0)
            .unwrap_or(3),
    };
    (1..).step_by(stride)
}

fn heal_sweep(r: R) {
    let root = tempfile::tempdir().unwrap();
    let golden = golden(&root.path().join("golden"), r);
    let mut tally = Healed::default();
    for at in points(r) {
        let (tx, rx) = mpsc::channel();
        let (root_dir, g) = (root.path().to_owned(), golden.clone());
        std::thread::spawn(move || {
            let mut t = Healed::default();
            let tripped = heal_at(&root_dir, &g, at, &mut t, r);
            let _ = tx.send((tripped, t));
        });
        let (tripped, t) = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("heal at {at}: the workload hung or panicked"));
        tally.points += t.points;
        tally.failed_steps += t.failed_steps;
        tally.reopened += t.reopened;
        tally.landed_anyway += t.landed_anyway;
        if !tripped {
            break;
        }
    }
    eprintln!("healing: {tally:?}");
    assert!(tally.points > 50, "only {} fault points", tally.points);
    assert!(tally.failed_steps > 0 && tally.reopened >= tally.failed_steps / 2);
}

/// Regression (found at stop 46, in the release build of the `damage` sweep): redb's close
/// commits its allocator state, and a panic there (redb 4.6 panics on a damaged freed-pages
/// tree) escaped the store's drop. Each call the close makes is made to panic in turn: the
/// drop returns, a file whose close panicked is left unstamped (so the next open verifies
/// it), and the database opens again with every fact.
#[test]
fn a_panic_in_redb_while_closing_is_caught_and_the_file_left_unstamped() {
    strata_store::quiet_caught_panics();
    let root = tempfile::tempdir().unwrap();
    let orig = root.path().join("orig");
    common::build_small(&orig);
    let expected = common::everything(&Store::open(&orig, OpenOptions::default()).unwrap());
    let stamped = |dir: &Path| {
        ["strata.redb", "tier-big.redb"]
            .iter()
            .filter(|f| dir.join(format!("{f}.stamp")).exists())
            .count()
    };
    // Opens a copy through a backend that panics at call `at`, reads, and drops it: the calls
    // made before the drop, whether the drop panicked, and the copy.
    let run = |at: u64, name: &str| {
        let dir = copy_db(&orig, &root.path().join(name));
        let plan = Plan::new(Mode::Panic, at);
        let store = open(&dir, false, Some(&plan), None).unwrap();
        common::everything(&store);
        let before = plan.calls();
        assert!(!plan.tripped(), "call {at} came before the close");
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(store)));
        (plan, before, dropped.is_ok(), dir)
    };
    let (counted, before, _, dir) = run(u64::MAX, "count");
    let after = counted.calls();
    assert!(after > before, "the close calls the backend");
    assert_eq!(stamped(&dir), 2, "a clean close stamps both files");
    for at in before + 1..=after {
        let (plan, calls, dropped, dir) = run(at, &format!("at-{at}"));
        assert_eq!(calls, before, "the same calls before the close");
        assert!(plan.tripped(), "call {at} panicked");
        assert!(
            dropped,
            "a panic at call {at} of the close escaped the drop"
        );
        assert!(
            stamped(&dir) < 2,
            "a close that panicked at call {at} stamped its file"
        );
        let store = Store::open(&dir, OpenOptions::default()).unwrap();
        assert_eq!(
            common::everything(&store),
            expected,
            "after a panic at call {at}"
        );
        assert!(
            store.check().unwrap().ok(),
            "check after a panic at call {at}"
        );
    }
}

/// Regression (found at stop 47, in the release build of the heal sweep above): a failed
/// storage call while a batch opened (reading the catalog and the dictionary's tables), or
/// while it looked up a unit to retract, did not mark the store: its files were not opened
/// again, and `check` then met redb's latched error. Each call the two make is made to fail
/// in turn: the error is the batch's, and the next call opens the files again and answers.
#[test]
fn a_failed_read_while_a_batch_opens_marks_the_store_to_heal() {
    let root = tempfile::tempdir().unwrap();
    let orig = root.path().join("orig");
    common::build_small(&orig);
    let expected = common::everything(&Store::open(&orig, OpenOptions::default()).unwrap());
    let copy = |name: &str| copy_db(&orig, &root.path().join(name));
    let open = |dir: &Path, plan: &Arc<Plan>| open(dir, false, Some(plan), None).unwrap();
    // The calls the batch's opening and its retraction make.
    let counting = Plan::new(Mode::Fail, u64::MAX);
    let store = open(&copy("count"), &counting);
    let first = counting.calls() + 1;
    let mut batch = store.batch(BatchOptions::default()).unwrap();
    batch.retract_unit("u1").unwrap();
    let last = counting.calls();
    drop(batch);
    drop(store);
    assert!(last >= first, "the batch's opening reads the file");
    for at in first..=last {
        let plan = Plan::new(Mode::Fail, at);
        let store = open(&copy(&format!("at-{at}")), &plan);
        let failed = match store.batch(BatchOptions::default()) {
            Ok(mut batch) => batch.retract_unit("u1").is_err(),
            Err(_) => true,
        };
        assert!(plan.tripped() && failed, "call {at} failed the batch");
        let report = store
            .check()
            .unwrap_or_else(|e| panic!("check after call {at} failed: {}", chain(&e)));
        assert!(report.ok(), "check after call {at} failed: {report}");
        assert_eq!(
            store.reopened(),
            1,
            "the files opened again after call {at}"
        );
        assert_eq!(common::everything(&store), expected, "after call {at}");
    }
}

//! The server's lanes under load, in one process as `strata serve` runs them (an
//! [`App`] with the server's admission and memory cap): 4 clients doing point lookups,
//! first alone and then while a runaway query runs under a lowered memory budget; and
//! `find` through the persistent name index.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use strata_app::{App, Call, FindRequest, Options, Page, QueryRequest, admission};
use strata_benches::{BenchResult, FIND_NAMES, median, percentile, rss_kib};
use strata_eval::{Cancel, FactSource, Value};
use strata_store::{OpenOptions, Store};

/// The lookup clients.
pub const CLIENTS: usize = 4;

/// The runaway query: the cross product, which grew a server to 17 GiB.
pub const RUNAWAY: &str = "p(?a, ?d) :- imports(?a, ?b), imports(?c, ?d); p(?a, ?d) => count(?a)";

/// How long the lookups run alone, and at least while the runaway ones run.
const PHASE: Duration = Duration::from_secs(3);

/// Timed `find` calls per name, after one untimed call.
const FIND_RUNS: usize = 20;

/// The application as `strata serve` sets it up by default: its heavy-call gate and the
/// memory cap it computes from the machine.
fn server_app(db: &Path) -> BenchResult<App> {
    let heavy = admission::default_heavy_calls();
    let options = Options {
        heavy_calls: Some(heavy),
        max_memory: Some(strata_app::default_max_memory(heavy)),
        ..Options::default()
    };
    Ok(App::open(db, options)?)
}

/// Sources of `imports` to look up: the first `n` distinct ones the scan meets.
fn lookup_nodes(db: &Path, n: usize) -> BenchResult<Vec<String>> {
    let store = Store::open(db, OpenOptions::default())?;
    let snap = store.snapshot()?;
    let mut terms = Vec::new();
    snap.scan("imports", &mut |row| {
        if terms.last() != Some(&row[0]) {
            terms.push(row[0]);
        }
        if terms.len() >= n {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    let mut out = Vec::with_capacity(terms.len());
    for t in terms {
        if let Value::Text(s) = snap.value(t)? {
            out.push(s.to_string());
        }
    }
    if out.is_empty() {
        return Err("imports has no text sources".into());
    }
    Ok(out)
}

/// One client: point lookups until `stop`, each answered through the light lane; the
/// milliseconds of each.
fn client(app: &App, nodes: &[String], k: usize, stop: &AtomicBool) -> BenchResult<Vec<f64>> {
    let mut times = Vec::new();
    let mut i = k * 7919;
    while !stop.load(Ordering::SeqCst) {
        let node = &nodes[i % nodes.len()];
        i += 1;
        let r = QueryRequest {
            program: format!("imports(\"{node}\", ?d) => ?d"),
            binds: Vec::new(),
            page: Page {
                limit: Some(10),
                witnesses: false,
                ..Page::default()
            },
        };
        let t = Instant::now();
        app.query(&Call::plain("query"), &r, &Cancel::new())?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(times)
}

/// What one runaway call did: how long until it stopped, and the error it stopped with.
struct Runaway {
    secs: f64,
    error: String,
}

/// The `load` child: the lookups' p50/p99 alone and beside runaway queries limited to
/// `budget` bytes, and how the runaways stopped. Prints one line: `quiet_calls quiet_p50
/// quiet_p99 busy_calls busy_p50 busy_p99 runaways memory_stops max_stop_secs growth_kib
/// error...`.
pub fn child(db: &Path, budget: u64) -> BenchResult<()> {
    let nodes = lookup_nodes(db, 2_000)?;
    let app = server_app(db)?;
    let (mut quiet, ()) = with_clients(&app, &nodes, || std::thread::sleep(PHASE))?;
    let base = rss_kib().unwrap_or_default();
    let peak = std::sync::atomic::AtomicU64::new(base);
    let sampling = AtomicBool::new(true);
    let (mut busy, runs) = std::thread::scope(|s| {
        s.spawn(|| {
            while sampling.load(Ordering::SeqCst) {
                peak.fetch_max(rss_kib().unwrap_or_default(), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let out = with_clients(&app, &nodes, || {
            let started = Instant::now();
            let mut runs = Vec::new();
            while runs.is_empty() || started.elapsed() < PHASE {
                runs.push(runaway(&app, budget));
            }
            runs
        });
        sampling.store(false, Ordering::SeqCst);
        out
    })?;
    let growth = peak.load(Ordering::SeqCst).saturating_sub(base);
    let memory_stops = runs.iter().filter(|r| r.error.contains("memory")).count();
    let max_stop = runs.iter().map(|r| r.secs).fold(0.0, f64::max);
    let error = runs.first().map_or("", |r| r.error.as_str());
    println!(
        "{} {:.2} {:.2} {} {:.2} {:.2} {} {memory_stops} {max_stop:.3} {growth} {}",
        quiet.len(),
        median(&mut quiet),
        percentile(&mut quiet, 99.0),
        busy.len(),
        median(&mut busy),
        percentile(&mut busy, 99.0),
        runs.len(),
        error.replace('\n', " "),
    );
    Ok(())
}

/// Runs [`CLIENTS`] lookup clients while `during` runs; their latencies in ms, and what
/// `during` answered.
fn with_clients<T>(
    app: &App,
    nodes: &[String],
    during: impl FnOnce() -> T,
) -> BenchResult<(Vec<f64>, T)> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|k| {
                let stop = &stop;
                s.spawn(move || client(app, nodes, k, stop).map_err(|e| e.to_string()))
            })
            .collect();
        let out = during();
        stop.store(true, Ordering::SeqCst);
        let mut times = Vec::new();
        for h in handles {
            times.extend(h.join().map_err(|_| "a lookup client panicked")??);
        }
        Ok((times, out))
    })
}

/// One runaway call with its memory lowered to `budget`, as a client may ask.
fn runaway(app: &App, budget: u64) -> Runaway {
    let r = QueryRequest {
        program: RUNAWAY.to_owned(),
        binds: Vec::new(),
        page: Page {
            limit: Some(10),
            witnesses: false,
            max_memory: Some(budget),
            ..Page::default()
        },
    };
    let t = Instant::now();
    let error = match app.query(&Call::plain("query"), &r, &Cancel::new()) {
        Ok(_) => "answered (not stopped)".to_owned(),
        Err(e) => e.to_string(),
    };
    Runaway {
        secs: t.elapsed().as_secs_f64(),
        error,
    }
}

/// The `find` child: opens (or builds) the name index, then times [`FIND_RUNS`] calls of
/// each of [`FIND_NAMES`]. Prints `index_secs calls p50 p95 worst_name_p95`, then one
/// Markdown row per name.
pub fn find_child(db: &Path) -> BenchResult<()> {
    let app = server_app(db)?;
    let t = Instant::now();
    app.warm_find()?;
    let index = t.elapsed().as_secs_f64();
    let call = |name: &str| -> BenchResult<(f64, usize)> {
        let r = FindRequest {
            name: name.to_owned(),
            limit: 0,
        };
        let t = Instant::now();
        let out = app.find(&Call::plain("find"), &r)?;
        Ok((t.elapsed().as_secs_f64() * 1e3, out.total))
    };
    let mut all = Vec::new();
    let mut rows = Vec::new();
    let mut worst: f64 = 0.0;
    for name in FIND_NAMES {
        call(name)?;
        let mut times = Vec::with_capacity(FIND_RUNS);
        let mut total = 0;
        for _ in 0..FIND_RUNS {
            let (ms, n) = call(name)?;
            times.push(ms);
            total = n;
        }
        all.extend_from_slice(&times);
        let p95 = percentile(&mut times, 95.0);
        worst = worst.max(p95);
        rows.push(format!(
            "| `{name}` | {total} | {:.1} | {p95:.1} |",
            median(&mut times)
        ));
    }
    println!(
        "{index:.2} {} {:.2} {:.2} {worst:.2}",
        all.len(),
        median(&mut all),
        percentile(&mut all, 95.0)
    );
    for r in rows {
        println!("{r}");
    }
    Ok(())
}

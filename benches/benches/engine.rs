//! The engine's hot paths: each compare workload through Strata (one and two threads,
//! witnesses off and on) beside datafrog on the same pairs, and bound reachability over a
//! stored code graph beside a hand-written search over the same store (through its public
//! lookup API), warm and on a freshly opened database.
//!
//! `cargo bench -p strata-benches --bench engine` runs the workloads at their `--quick`
//! size of `compare` and reachability over the 1M-edge code graph; `STRATA_BENCH_LARGE=1` (or
//! `--features large`) runs `compare`'s default sizes and the 10M-edge graph.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use strata_benches::engines::{Engine, Prepared, bfs_store};
use strata_benches::workload::{Kind, Scale};
use strata_benches::{DEFAULT_SEED, LookupSample, bench_edges, code_graph_db, large, open_store};
use strata_eval::{FactSource, Vocabulary};
use strata_eval::{Query, RunOptions};

fn workloads(c: &mut Criterion) {
    let scale = if large() {
        Scale::Default
    } else {
        Scale::Quick
    };
    let mut g = c.benchmark_group(format!("engine_{scale:?}").to_lowercase());
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for kind in Kind::ALL {
        let w = kind.make(scale, DEFAULT_SEED);
        let mut expected = None;
        for engine in [
            Engine::strata(1, false),
            Engine::strata(2, false),
            Engine::strata(1, true),
            Engine::Datafrog,
        ] {
            let p = Prepared::new(engine, kind, &w).expect("prepare");
            let n = p.run().expect("run");
            assert_eq!(
                *expected.get_or_insert(n),
                n,
                "{}: counts differ",
                kind.name()
            );
            g.bench_function(format!("{}/{}", kind.name(), engine.name()), |b| {
                b.iter(|| black_box(p.run().expect("run")));
            });
        }
    }
    g.finish();
}

/// A reachability query over `calls` from `text`, counting what it reaches.
fn reach_program(text: &str) -> String {
    format!(
        "r(?x, ?y) :- calls(?x, ?y);\nr(?x, ?z) :- r(?x, ?y), calls(?y, ?z);\nr({text:?}, ?y) => count(?y)"
    )
}

fn count_of(q: &Query, src: &dyn FactSource) -> u64 {
    let out = q.run(src, &RunOptions::default()).expect("query");
    match out.answer.rows.first().and_then(|r| r.cells.first()) {
        Some(strata_eval::Cell::Value(strata_eval::Value::Number(n))) => *n as u64,
        other => panic!("expected a count, got {other:?}"),
    }
}

fn store_reach(c: &mut Criterion) {
    let edges = bench_edges();
    let (_tmp, db) = code_graph_db(edges, DEFAULT_SEED).expect("build the database");
    let store = open_store(&db).expect("open");
    let snap = store.snapshot().expect("snapshot");
    // The sampled source that reaches the most, so the search is not trivial.
    let sample = LookupSample::take(&snap, "calls", 50).expect("sample");
    let (i, reached) = sample
        .src
        .iter()
        .enumerate()
        .map(|(i, &t)| (i, bfs_store(&snap, "calls", t).expect("bfs")))
        .max_by_key(|&(_, n)| n)
        .expect("a source");
    let (start, text) = (sample.src[i], sample.texts[i].clone());
    let vocab = Vocabulary::from_sources(snap.relations().expect("relations"), &[]).expect("vocab");
    let q = Query::prepare(&vocab, &reach_program(&text), &[]).expect("prepare");
    assert_eq!(count_of(&q, &snap), reached, "strata and the BFS disagree");

    let mut g = c.benchmark_group(format!("reach_calls_{edges}"));
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    g.bench_function(format!("strata_warm_{reached}_answers"), |b| {
        b.iter(|| black_box(count_of(&q, &snap)));
    });
    g.bench_function("bfs_over_store_lookups", |b| {
        b.iter(|| black_box(bfs_store(&snap, "calls", start).expect("bfs")));
    });
    g.bench_function("strata_witnesses_on", |b| {
        let mut opts = RunOptions::default();
        opts.engine.witnesses = true;
        b.iter(|| black_box(q.run(&snap, &opts).expect("query").answer.total));
    });
    // The store admits one open handle: close the warm one before opening it cold.
    drop(snap);
    drop(store);
    g.bench_function("strata_cold_fresh_open", |b| {
        b.iter(|| {
            let store = open_store(&db).expect("open");
            let snap = store.snapshot().expect("snapshot");
            let vocab =
                Vocabulary::from_sources(snap.relations().expect("relations"), &[]).expect("vocab");
            let q = Query::prepare(&vocab, &reach_program(&text), &[]).expect("prepare");
            black_box(count_of(&q, &snap))
        });
    });
    g.finish();
}

criterion_group!(benches, workloads, store_reach);
criterion_main!(benches);

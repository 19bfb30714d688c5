//! The engine's hot paths: each compare workload through Strata (one and two threads,
//! witnesses off and on) beside datafrog on the same pairs, and bound reachability over a
//! stored code graph beside a hand-written search over the same store (through its public
//! lookup API), warm and on a freshly opened database.
//!
//! Pages of a closure's answer (the first and a late one, projected to one column and to
//! both) beside counting it: projecting, deduplicating, ordering and paging should cost
//! about what computing the rows did.
//!
//! `cargo bench -p strata-benches --bench engine` runs the workloads at their `--quick`
//! size of `compare`, reachability over the 1M-edge code graph and pages of a closure of
//! 800 nodes; `STRATA_BENCH_LARGE=1` (or `--features large`) runs `compare`'s default sizes,
//! the 10M-edge graph and a closure of 2,500 nodes (millions of rows).

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

/// A closure over a random graph's edges named by texts (so ordering reads the dictionary):
/// counting its rows beside the first and a late page of them.
fn closure_pages(c: &mut Criterion) {
    let nodes = if large() { 2500 } else { 800 };
    let w = strata_fixtures::workloads::closure(nodes, 3, DEFAULT_SEED);
    let mut src = strata_eval::MemorySource::new();
    src.add_relation("e", &["a", "b"]);
    let name = |n: u32| strata_eval::Value::text(format!("pkg/{}/mod_{n}", n % 61));
    for (_, pairs) in &w.relations {
        for &(a, b) in pairs {
            src.insert("e", &[name(a), name(b)]).expect("insert");
        }
    }
    let vocab = Vocabulary::from_sources(src.relations().expect("relations"), &[]).expect("vocab");
    let rules = "r(?x, ?y) :- e(?x, ?y);\nr(?x, ?z) :- r(?x, ?y), e(?y, ?z);\n";
    let mut g = c.benchmark_group(format!("closure_pages_{nodes}"));
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (label, goal, offset) in [
        ("count", "r(?a, ?b) => count(?b)", 0),
        ("group_count", "r(?a, ?b) => ?a, count(?b)", 0),
        ("first_page_a", "r(?a, ?b) => ?a", 0),
        ("first_page_ab", "r(?a, ?b) => ?a, ?b", 0),
        ("late_page_ab", "r(?a, ?b) => ?a, ?b", 10_000),
    ] {
        let q = Query::prepare(&vocab, &format!("{rules}{goal}"), &[]).expect("prepare");
        let mut opts = RunOptions {
            offset,
            limit: 10,
            ..RunOptions::default()
        };
        opts.engine.witnesses = false;
        g.bench_function(label, |b| {
            b.iter(|| black_box(q.run(&src, &opts).expect("query").answer.total));
        });
    }
    g.finish();
}

criterion_group!(benches, workloads, store_reach, closure_pages);
criterion_main!(benches);

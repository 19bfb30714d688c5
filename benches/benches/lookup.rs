//! Hot point lookups on a database built from the generated string edge dump.
//!
//! The store is built once (1M edges; 10M with `STRATA_BENCH_LARGE=1`) into a temporary
//! directory, opened once, and read through one snapshot. Each iteration is one lookup, the
//! bound terms cycling over a fixed sample of 1000 existing `calls` sources.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use strata_benches::{
    DEFAULT_SEED, LookupSample, bench_edges, code_graph_db, lookup_count, open_store,
};
use strata_eval::{FactSource, Value};

fn lookup(c: &mut Criterion) {
    let edges = bench_edges();
    let (_tmp, db) = code_graph_db(edges, DEFAULT_SEED).expect("build the database");
    let store = open_store(&db).expect("open");
    let snap = store.snapshot().expect("snapshot");
    let sample = LookupSample::take(&snap, "calls", 1000).expect("sample");
    let n = sample.src.len();
    let texts: Vec<Value> = sample
        .texts
        .iter()
        .map(|s| Value::text(s.clone()))
        .collect();

    let mut g = c.benchmark_group(format!("lookup_{edges}"));
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let mut i = 0;
    g.bench_function("calls_src_bound_hot", |b| {
        b.iter(|| {
            i = (i + 1) % n;
            black_box(lookup_count(&snap, "calls", &[(0, sample.src[i])]).expect("lookup"))
        });
    });
    g.bench_function("calls_src_dst_bound_hot", |b| {
        b.iter(|| {
            i = (i + 1) % n;
            let (a, d) = sample.pairs[i];
            black_box(lookup_count(&snap, "calls", &[(0, a), (1, d)]).expect("lookup"))
        });
    });
    g.bench_function("term_of_text_hot", |b| {
        b.iter(|| {
            i = (i + 1) % n;
            black_box(snap.term(&texts[i]).expect("term"))
        });
    });
    g.bench_function("snapshot_then_src_lookup", |b| {
        b.iter(|| {
            i = (i + 1) % n;
            let s = store.snapshot().expect("snapshot");
            black_box(lookup_count(&s, "calls", &[(0, sample.src[i])]).expect("lookup"))
        });
    });
    g.finish();
}

criterion_group!(benches, lookup);
criterion_main!(benches);

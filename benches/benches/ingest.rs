//! Ingest throughput: the real store against the two floors, on the same generated files.
//!
//! `cargo bench -p strata-benches --bench ingest` runs on 1M edges; `STRATA_BENCH_LARGE=1`
//! switches to 10M. Each real ingest writes a fresh database in a new temporary directory
//! (created and removed outside the timed part). Peak memory is not measured here (criterion
//! runs everything in one process): see the `ingest-report` binary.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use strata_benches::{
    DEFAULT_SEED, bench_edges, dumps, edges_spec, facts_spec, ingest_file, parse_and_intern_floor,
    read_pairs, redb_write_floor,
};

fn ingest(c: &mut Criterion) {
    let edges = bench_edges();
    let d = dumps(edges, DEFAULT_SEED).expect("generate the dumps");
    let pairs = read_pairs(&d.facts).expect("read edge.facts");
    let rows = pairs.len() as u64;

    let mut g = c.benchmark_group(format!("ingest_{edges}"));
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(if edges > 2_000_000 { 60 } else { 15 }))
        .throughput(Throughput::Elements(rows));

    let spec = edges_spec(&d.edges);
    g.bench_function("string_edges_store", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let tmp = tempfile::tempdir().expect("temp dir");
                let t = Instant::now();
                let s = ingest_file(&tmp.path().join("db"), &d.edges, &spec).expect("ingest");
                total += t.elapsed();
                assert_eq!(s.facts_read, rows);
            }
            total
        });
    });
    g.bench_function("string_edges_parse_intern_floor", |b| {
        b.iter(|| black_box(parse_and_intern_floor(&d.edges).expect("floor")));
    });

    let spec = facts_spec(&d.facts);
    g.bench_function("numeric_facts_store", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let tmp = tempfile::tempdir().expect("temp dir");
                let t = Instant::now();
                let s = ingest_file(&tmp.path().join("db"), &d.facts, &spec).expect("ingest");
                total += t.elapsed();
                assert_eq!(s.facts_read, rows);
            }
            total
        });
    });
    g.bench_function("numeric_pairs_redb_write_floor", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let tmp = tempfile::tempdir().expect("temp dir");
                let t = Instant::now();
                redb_write_floor(&pairs, &tmp.path().join("floor.redb")).expect("redb floor");
                total += t.elapsed();
            }
            total
        });
    });
    g.finish();
}

criterion_group!(benches, ingest);
criterion_main!(benches);

//! Ingest throughput and lookup speed of the store, for comparing builds:
//! `cargo run --release -p strata-store --example speed [EDGES]`.
//!
//! Ingests EDGES (default 1,000,000) `IMPORTS` edges between 50,000 nodes, each with one of
//! 100 units, as one batch; then looks up 200,000 nodes by source and by target through
//! `FactSource::lookup`, and scans the relation. Each is run three times; the best is shown.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use strata_eval::{FactSource, Term, Value};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

fn best(mut f: impl FnMut() -> Duration) -> Duration {
    (0..3).map(|_| f()).min().unwrap_or_default()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let edges: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let nodes = 50_000u64;
    let mut dump = String::new();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..edges {
        let (a, b) = (next() % nodes, next() % nodes);
        dump.push_str(&format!("n{a}\tIMPORTS\tn{b}\tu{}\n", i % 100));
    }
    let spec = DumpSpec {
        label: "speed.edges.tsv".into(),
        format: Format::Edges,
        relation: None,
        unit: None,
    };
    let root = tempfile::tempdir()?;
    let mut round = 0;
    let ingest = best(|| {
        round += 1;
        let dir = root.path().join(format!("db{round}"));
        let store = Store::open(
            &dir,
            OpenOptions {
                create: true,
                ..OpenOptions::default()
            },
        )
        .expect("open");
        let t = Instant::now();
        let mut batch = store.batch(BatchOptions::default()).expect("batch");
        batch.read_dump(dump.as_bytes(), &spec).expect("read");
        batch.commit().expect("commit");
        t.elapsed()
    });
    let store = Store::open(root.path().join("db1"), OpenOptions::default())?;
    let snap = store.snapshot()?;
    let probes: Vec<Term> = (0..200_000u64)
        .filter_map(|_| {
            let v = Value::text(format!("n{}", next() % nodes));
            snap.term(&v).ok().flatten()
        })
        .collect();
    let mut rows = 0u64;
    let lookup = best(|| {
        let t = Instant::now();
        for (i, &p) in probes.iter().enumerate() {
            snap.lookup("imports", &[(i % 2, p)], &mut |_| {
                rows += 1;
                ControlFlow::Continue(())
            })
            .expect("lookup");
        }
        t.elapsed()
    });
    let scan = best(|| {
        let t = Instant::now();
        snap.scan("imports", &mut |_| {
            rows += 1;
            ControlFlow::Continue(())
        })
        .expect("scan");
        t.elapsed()
    });
    println!(
        "ingest {edges} edges: {:.3} s ({:.0} facts/s); {} lookups: {:.0} ns each; scan: {:.1} ms ({rows} rows seen)",
        ingest.as_secs_f64(),
        edges as f64 / ingest.as_secs_f64(),
        probes.len(),
        lookup.as_nanos() as f64 / probes.len() as f64,
        scan.as_secs_f64() * 1e3,
    );
    Ok(())
}

//! Ingest throughput and lookup speed of the store, for comparing builds and formats:
//! `cargo run --release -p strata-store --example speed [EDGES] [--format V] [--dump FILE]
//! [--db DIR] [--cache-mib M]`.
//!
//! Ingests EDGES (default 1,000,000) `IMPORTS` edges between 50,000 nodes, each with one of
//! 100 units, as one batch (or, with `--dump`, the edges dump FILE, whose `imports` are then
//! looked up), into a database of format version V (default: the newest); then looks up
//! 200,000 nodes by source and by target through `FactSource::lookup`, reads their texts
//! one by one through `FactSource::value`, and scans the relation. Each is run three
//! times; the best is shown, with the base file's size. `--db DIR` measures the lookups of
//! an existing database's `imports` instead (nothing is ingested; nodes are drawn from its
//! whole dictionary), and `--cache-mib M` opens the store with an M MiB page cache (the
//! default is [`OpenOptions`]'s), to see what the cache's size costs at a size that does
//! not fit in it.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use strata_eval::{FactSource, Term, Value};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

fn best(mut f: impl FnMut() -> Duration) -> Duration {
    (0..3).map(|_| f()).min().unwrap_or_default()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut edges = 1_000_000u64;
    let mut format_version = strata_store::layout::FORMAT_VERSION;
    let mut file = None;
    let mut db: Option<std::path::PathBuf> = None;
    let mut cache_bytes = OpenOptions::default().cache_bytes;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--format" => format_version = args.next().ok_or("--format V")?.parse()?,
            "--dump" => file = Some(args.next().ok_or("--dump FILE")?),
            "--db" => db = Some(args.next().ok_or("--db DIR")?.into()),
            "--cache-mib" => {
                cache_bytes = Some(args.next().ok_or("--cache-mib M")?.parse::<usize>()? << 20)
            }
            n => edges = n.parse()?,
        }
    }
    let nodes = 50_000u64;
    let mut dump = String::new();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    if db.is_some() {
        edges = 0;
    } else if let Some(f) = &file {
        dump = std::fs::read_to_string(f)?;
        edges = dump.lines().count() as u64;
    } else {
        for i in 0..edges {
            let (a, b) = (next() % nodes, next() % nodes);
            dump.push_str(&format!("n{a}\tIMPORTS\tn{b}\tu{}\n", i % 100));
        }
    }
    let spec = DumpSpec {
        label: "speed.edges.tsv".into(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    };
    let root = tempfile::tempdir()?;
    let mut round = 0;
    let ingest = if db.is_some() {
        Duration::ZERO
    } else {
        best(|| {
            round += 1;
            let dir = root.path().join(format!("db{round}"));
            let store = Store::open(
                &dir,
                OpenOptions {
                    create: true,
                    format_version,
                    ..OpenOptions::default()
                },
            )
            .expect("open");
            let t = Instant::now();
            let mut batch = store.batch(BatchOptions::default()).expect("batch");
            batch.read_dump(dump.as_bytes(), &spec).expect("read");
            batch.commit().expect("commit");
            t.elapsed()
        })
    };
    let dir = db.clone().unwrap_or_else(|| root.path().join("db1"));
    let store = Store::open(
        &dir,
        OpenOptions {
            cache_bytes,
            ..OpenOptions::default()
        },
    )?;
    let snap = store.snapshot()?;
    let texts = u64::from(snap.text_count());
    let probes: Vec<Term> = (0..200_000u64)
        .filter_map(|_| {
            if file.is_some() || db.is_some() {
                return Some(Term::text(1 + (next() % texts) as u32));
            }
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
    let value = best(|| {
        let t = Instant::now();
        for &p in &probes {
            snap.value(p).expect("value");
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
    let bytes = std::fs::metadata(dir.join("strata.redb"))?.len();
    println!(
        "format {format_version}: ingest {edges} edges: {:.3} s ({:.0} facts/s); {} lookups: {:.0} ns each; values: {:.0} ns each; scan: {:.1} ms ({rows} rows seen); base file {bytes} bytes; cache {} MiB; peak RSS {} MiB",
        ingest.as_secs_f64(),
        edges as f64 / ingest.as_secs_f64(),
        probes.len(),
        lookup.as_nanos() as f64 / probes.len() as f64,
        value.as_nanos() as f64 / probes.len() as f64,
        scan.as_secs_f64() * 1e3,
        cache_bytes.map_or_else(|| "scaled".to_owned(), |b| (b >> 20).to_string()),
        peak_rss_mib(),
    );
    Ok(())
}

/// The process's peak resident set, from `/proc/self/status` (0 where there is none).
fn peak_rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024)
}

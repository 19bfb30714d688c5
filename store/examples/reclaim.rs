//! The space a database takes after the same facts arrive in 1, 2, 4 or 8 batches, with and
//! without the store's own reclaiming (`OpenOptions::reclaim`), and what reclaiming costs in
//! ingest time.
//!
//! ```text
//! cargo run --release -p strata-store --example reclaim -- [EDGES] [BATCHES...]
//! ```
//!
//! The generator's code graph of EDGES edges (default 1,420,000) with units: one batch holds
//! the edges and the attributes; N batches hold the edges in N - 1 pieces, then the
//! attributes (2: the edges, then the nodes). Prints one line per run: batches, reclaiming
//! or not, the base file's bytes once closed, its ratio to one batch's, the ingest's seconds.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::Instant;

use strata_fixtures::codegraph::{self, Config};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Reclaim, Store};

fn spec(label: &str, format: Format) -> DumpSpec {
    DumpSpec {
        label: label.to_owned(),
        format,
        relation: None,
        unit: None,
        checkout: None,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let edges: u64 = args.first().map_or(1_420_000, |a| a.parse().unwrap());
    let counts: Vec<usize> = if args.len() > 1 {
        args[1..].iter().map(|a| a.parse().unwrap()).collect()
    } else {
        vec![1, 2, 4, 8]
    };
    let cfg = Config::with_edges(edges).units(true);
    let mut e = Vec::new();
    codegraph::write_edges(&cfg, &mut e).unwrap();
    let mut attrs = Vec::new();
    codegraph::write_attrs(&cfg, &mut attrs).unwrap();
    let e = String::from_utf8(e).unwrap();
    let lines: Vec<&str> = e.lines().collect();
    let tmp = tempfile::tempdir().unwrap();
    let mut one = None;
    for &batches in &counts {
        for reclaim in [None, Some(Reclaim::default())] {
            let dir = tmp.path().join(format!("{batches}-{}", reclaim.is_some()));
            let per = lines.len().div_ceil(batches.saturating_sub(1).max(1));
            let pieces: Vec<String> = lines.chunks(per).map(|c| c.join("\n") + "\n").collect();
            let start = Instant::now();
            {
                let store = Store::open(
                    &dir,
                    OpenOptions {
                        create: true,
                        reclaim,
                        ..OpenOptions::default()
                    },
                )
                .unwrap();
                let groups: Vec<(Vec<&str>, bool)> = if batches == 1 {
                    vec![(pieces.iter().map(String::as_str).collect(), true)]
                } else {
                    let mut g: Vec<(Vec<&str>, bool)> =
                        pieces.iter().map(|p| (vec![p.as_str()], false)).collect();
                    g.push((Vec::new(), true));
                    g
                };
                for (edges, with_attrs) in groups {
                    let mut batch = store.batch(BatchOptions::default()).unwrap();
                    for p in edges {
                        batch
                            .read_dump(p.as_bytes(), &spec("code.edges.tsv", Format::Edges))
                            .unwrap();
                    }
                    if with_attrs {
                        batch
                            .read_dump(&attrs[..], &spec("code.attrs.tsv", Format::Attrs))
                            .unwrap();
                    }
                    batch.commit().unwrap();
                }
            }
            let secs = start.elapsed().as_secs_f64();
            let bytes = std::fs::metadata(dir.join("strata.redb")).unwrap().len();
            if batches == 1 && reclaim.is_some() {
                one = Some(bytes);
            }
            let ratio = one.map_or(0.0, |o| bytes as f64 / o as f64);
            println!(
                "{batches} batches, reclaim {}: {bytes} bytes ({:.2} MB, {ratio:.2}x one batch), {secs:.2} s",
                if reclaim.is_some() { "on" } else { "off" },
                bytes as f64 / 1e6
            );
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}

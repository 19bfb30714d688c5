//! The engine beside datafrog on the same inputs: transitive closure of a random graph and of
//! a chain, each run through Strata (one and two threads, witnesses off and on) and through
//! datafrog, checking that both find the same number of pairs. A first step toward the
//! issue's full comparison (ascent, crepe, Soufflé); prints one table.
//!
//! `cargo run --release -p strata-benches --bin engine-compare [-- --nodes N --degree D --chain L]`

use std::time::{Duration, Instant};

use strata_eval::query::{Query, RunOptions};
use strata_eval::{FactSource, MemorySource, Value, Vocabulary};
use strata_fixtures::workloads::{self, Workload};

fn source(w: &Workload) -> MemorySource {
    let mut src = MemorySource::new();
    for (name, pairs) in &w.relations {
        src.add_relation(name, &["a", "b"]);
        for &(a, b) in pairs {
            let _ = src.insert(
                name,
                &[Value::Number(f64::from(a)), Value::Number(f64::from(b))],
            );
        }
    }
    src
}

/// Strata's closure: the number of pairs and the median time of 3 runs.
fn strata(w: &Workload, threads: usize, witnesses: bool) -> Result<(u64, Duration), String> {
    let src = source(w);
    let vocab = Vocabulary::from_sources(src.relations().map_err(|e| e.to_string())?, &[])
        .map_err(|e| e.to_string())?;
    let program =
        "tc(?x, ?y) :- e(?x, ?y);\ntc(?x, ?z) :- tc(?x, ?y), e(?y, ?z);\ntc(?x, ?y) => count(?y)";
    let q = Query::prepare(&vocab, program, &[]).map_err(|e| e.to_string())?;
    let mut opts = RunOptions::default();
    opts.engine.threads = threads;
    opts.engine.witnesses = witnesses;
    let mut times = Vec::new();
    let mut pairs = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let out = q.run(&src, &opts).map_err(|e| e.to_string())?;
        times.push(t.elapsed());
        if let Some(strata_eval::answer::Cell::Value(Value::Number(n))) =
            out.answer.rows.first().and_then(|r| r.cells.first())
        {
            pairs = *n as u64;
        }
    }
    times.sort();
    Ok((pairs, times[1]))
}

/// datafrog's closure over the same pairs.
fn datafrog(w: &Workload) -> (u64, Duration) {
    let edges = &w.relations[0].1;
    let mut times = Vec::new();
    let mut pairs = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let mut it = datafrog::Iteration::new();
        let e: datafrog::Relation<(u32, u32)> = edges.iter().copied().collect();
        let tc = it.variable::<(u32, u32)>("tc");
        tc.extend(edges.iter().map(|&(a, b)| (b, a)));
        while it.changed() {
            tc.from_join(&tc, &e, |_y, &x, &z| (z, x));
        }
        pairs = tc.complete().len() as u64;
        times.push(t.elapsed());
    }
    times.sort();
    (pairs, times[1])
}

fn arg(args: &[String], name: &str, default: u32) -> u32 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let nodes = arg(&args, "--nodes", 2000);
    let degree = arg(&args, "--degree", 2);
    let links = arg(&args, "--chain", 2000);
    println!("| workload | engine | median s (3 runs) | pairs | ratio to datafrog |");
    println!("|---|---|---:|---:|---:|");
    let mut ok = true;
    for w in [
        workloads::closure(nodes, degree, 12345),
        workloads::chain(links),
    ] {
        let name = format!("{} ({} edges)", w.name, w.relations[0].1.len());
        let (df_pairs, df) = datafrog(&w);
        println!(
            "| {name} | datafrog | {:.3} | {df_pairs} | 1.00 |",
            df.as_secs_f64()
        );
        for (threads, witnesses) in [(1, false), (2, false), (1, true)] {
            match strata(&w, threads, witnesses) {
                Ok((pairs, t)) => {
                    let same = pairs == df_pairs;
                    ok &= same;
                    println!(
                        "| {name} | strata, {threads} thread{}, witnesses {} | {:.3} | {pairs}{} | {:.2} |",
                        if threads == 1 { "" } else { "s" },
                        if witnesses { "on" } else { "off" },
                        t.as_secs_f64(),
                        if same { "" } else { " (differs!)" },
                        t.as_secs_f64() / df.as_secs_f64()
                    );
                }
                Err(e) => {
                    ok = false;
                    println!("| {name} | strata | error: {e} | | |");
                }
            }
        }
    }
    if !ok {
        std::process::exit(1);
    }
}

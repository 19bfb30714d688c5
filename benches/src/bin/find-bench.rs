//! `find-bench`: the latency of the `find` tool on a database, as a server answers it.
//!
//! ```text
//! cargo build --release -p strata-cli -p strata-benches
//! target/release/gen-codegraph --edges 1.4M --out /tmp/cg
//! target/release/strata ingest /tmp/cg/db /tmp/cg/code.edges.tsv /tmp/cg/code.attrs.tsv
//! target/release/find-bench --db /tmp/cg/db [--runs N] [NAME...]
//! ```
//!
//! Opens the database as `strata serve` does (`strata_mcp::Server::open`), times the first
//! `find` call (which opens the database's name index, `DB/find-<texts>.idx`, building it
//! when it is missing or stale) and then, per name, N calls (default 20) of the whole tool:
//! the ranked search and, for each match answered, the relations and columns it occurs in
//! with their row counts. Names default to a set of kinds: an exact symbol name, words of
//! one, a misspelling, a path part, a long phrase and a short string. Prints the index
//! file's size, the process's resident memory after the calls, and a Markdown table:
//! wall-clock median, p95 and max per name, the CPU time per call (all threads; it does not
//! grow when other processes share the cores, as wall time does), the ranked search alone
//! through the index, and the same search by the in-memory scan `find` used before the
//! index, with whether both gave the same 72 best matches and total (`--no-scan` skips it:
//! it reads the whole dictionary into memory, whose cost is printed too).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::json;
use strata_benches::{FIND_NAMES, median, percentile};
use strata_eval::Cancel;
use strata_mcp::{Options, Server};

const USAGE: &str = "\
usage: find-bench --db DIR [--runs N] [--no-scan] [NAME...]

  --db DIR    the database (ingested with strata ingest)
  --runs N    timed calls per name after one untimed call (default 20)
  --no-scan   do not time the in-memory scan find used before its index
  NAME...     names to find (default: a set of kinds on code-graph names)";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("find-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut db: Option<PathBuf> = None;
    let mut runs = 20usize;
    let mut names: Vec<String> = Vec::new();
    let mut scan = true;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--db" => db = args.next().map(PathBuf::from),
            "--runs" => {
                runs = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or(USAGE)?;
            }
            "--no-scan" => scan = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ => names.push(a),
        }
    }
    let db = db.ok_or(USAGE)?;
    if names.is_empty() {
        names = FIND_NAMES.iter().map(|n| (*n).to_owned()).collect();
    }
    let server = Server::open(&db, Options::default()).map_err(|e| e.to_string())?;
    let texts = server
        .store()
        .snapshot()
        .map_err(|e| e.to_string())?
        .text_count();
    let find = |name: &str| -> Result<(Duration, u64), String> {
        let args = json!({ "name": name });
        let t = Instant::now();
        let out = server
            .call("find", args.as_object().cloned(), &Cancel::new())
            .ok_or("no find tool")?;
        let took = t.elapsed();
        if out.is_error {
            return Err(out.text);
        }
        let total = out
            .structured
            .as_ref()
            .and_then(|j| j["total"].as_u64())
            .unwrap_or(0);
        Ok((took, total))
    };
    let (first, _) = find(&names[0])?;
    println!("{} distinct texts in {}", texts, db.display());
    println!(
        "first call (opens the name index, building it when missing): {:.1} ms",
        ms(first)
    );
    let snap = server.store().snapshot().map_err(|e| e.to_string())?;
    // The ranked search alone, through the index, without the uses of each match.
    let finder = strata_mcp::find::Finder::open(&db, &snap).map_err(|e| e.to_string())?;
    if let Some(path) = finder.file_path() {
        let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
        println!(
            "index file {} ({} texts): {:.1} MB",
            path.display(),
            finder.covered(),
            size as f64 / 1e6
        );
    }
    let mut tool = Vec::new();
    for name in &names {
        find(name)?;
        let mut times = Vec::with_capacity(runs);
        let mut total = 0;
        let cpu_before = cpu_ms();
        for _ in 0..runs {
            let (t, n) = find(name)?;
            times.push(ms(t));
            total = n;
        }
        let cpu = match (cpu_before, cpu_ms()) {
            (Some(a), Some(b)) => format!("{:.1}", (b - a) / runs as f64),
            _ => "-".to_owned(),
        };
        let max = times.iter().copied().fold(0.0, f64::max);
        let mut alone = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            std::hint::black_box(finder.search(name, texts, 72).map_err(|e| e.to_string())?);
            alone.push(ms(t.elapsed()));
        }
        tool.push(format!(
            "| `{name}` | {total} | {:.1} | {:.1} | {max:.1} | {cpu} | {:.1} |",
            median(&mut times),
            percentile(&mut times, 95.0),
            median(&mut alone),
        ));
    }
    println!("resident memory after the calls: {}\n", rss());
    // The search `find` made before its index: a scan of the dictionary in memory.
    let mut scanned = Vec::new();
    if scan {
        let t = Instant::now();
        let mut index = strata_mcp::find::Index::new();
        index.extend_from(&snap).map_err(|e| e.to_string())?;
        println!(
            "the scan's copy of the dictionary: read in {:.1} ms; resident memory then {}\n",
            ms(t.elapsed()),
            rss()
        );
        for name in &names {
            let mut alone: Vec<f64> = (0..runs)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(index.search(name, texts, 72));
                    ms(t.elapsed())
                })
                .collect();
            // The same matches, in the same order, and the same total.
            let (old, old_total) = index.search(name, texts, 72);
            let new = finder.search(name, texts, 72).map_err(|e| e.to_string())?;
            let same = old_total == new.total && old == new.matches;
            scanned.push(format!(
                " {:.1} | {:.1} | {} |",
                median(&mut alone),
                percentile(&mut alone, 95.0),
                if same { "yes" } else { "NO" }
            ));
        }
    }
    print!(
        "| name | matches | median ms | p95 ms | max ms | CPU ms per call | search alone, median ms |"
    );
    println!(
        "{}",
        if scan {
            " scan, median ms | scan, p95 ms | same answer |"
        } else {
            ""
        }
    );
    print!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    println!("{}", if scan { " ---: | ---: | --- |" } else { "" });
    for (i, row) in tool.iter().enumerate() {
        println!("{row}{}", scanned.get(i).map_or("", String::as_str));
    }
    Ok(())
}

/// The process's resident memory (`VmRSS` in `/proc/self/status`), or `-` elsewhere.
fn rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .map(|l| l.trim_start_matches("VmRSS:").trim().to_owned())
        })
        .unwrap_or_else(|| "-".to_owned())
}

/// The CPU time (user and system, all threads) this process has used, in ms, from
/// `/proc/self/stat` (clock ticks of 10 ms); `None` elsewhere. Unlike wall time it does not
/// grow when other processes share the cores.
fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) * 10.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

//! `cancel-bench`: how long the engine runs after its cancellation token is set, at every
//! moment of a long evaluation (issue 28: a cancelled call stops within 100 ms).
//!
//! ```text
//! cargo build --release -p strata-benches --bin cancel-bench
//! target/release/cancel-bench [--functions F] [--threads T] [--step MS] [--witnesses]
//! ```
//!
//! The evaluation is `relay-bench`'s long call, in process: the transitive closure of
//! `strata_fixtures::runaway::calls` over F functions (default 6,000: 36M pairs), counted,
//! over a `MemorySource`, on T worker threads (default 2). It runs once uncancelled (its
//! length L), then once for each cancel moment `step, 2 * step, ...` below L (default step
//! 50 ms): a thread sets the token at that moment, and the run's return is timed from it,
//! in wall time and in the process's CPU time (every thread's schedstat), dropping what
//! the evaluation held included. Printed: each moment's latency, then the median, the
//! 90th percentile and the worst, and how many moments took over 100 ms. Wall time follows
//! the machine's load; the CPU column is what the engine spent after the cancel.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use strata_benches::{BenchResult, median, percentile};
use strata_eval::{Cancel, FactSource, MemorySource, Query, RunOptions, Value, Vocabulary};

const USAGE: &str = "\
usage: cancel-bench [--functions F] [--threads T] [--step MS] [--witnesses]";

/// The long evaluation: `relay-bench`'s closure (filtered, so it runs in rounds).
const CLOSURE: &str = "r(?a, ?b) :- calls(?a, ?b); \
                       r(?a, ?c) :- r(?a, ?b), calls(?b, ?c), ?c != ?a; \
                       r(?a, ?b) => count(?a)";

struct Args {
    functions: u32,
    threads: usize,
    step: Duration,
    witnesses: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        functions: 6000,
        threads: 2,
        step: Duration::from_millis(50),
        witnesses: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--functions" => a.functions = parse(&value("--functions")?)?,
            "--threads" => a.threads = parse(&value("--threads")?)?,
            "--step" => a.step = Duration::from_millis(parse(&value("--step")?)?),
            "--witnesses" => a.witnesses = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if a.step.is_zero() {
        return Err("--step must be at least 1 ms".to_owned());
    }
    Ok(a)
}

fn parse<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("not a number: {s}"))
}

/// The process's CPU time so far: every live thread's time on a CPU as the scheduler counts
/// it, in ns (`/proc/self/task/TID/schedstat`).
fn cpu() -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cancel-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(a: &Args) -> BenchResult<()> {
    let mut src = MemorySource::new();
    src.add_relation("calls", &["caller", "callee"]);
    src.extend(
        "calls",
        strata_fixtures::runaway::calls(a.functions).map(|(x, y)| [Value::Text(x), Value::Text(y)]),
    )?;
    let vocab = Vocabulary::from_sources(src.relations()?, &[])?;
    let query = Query::prepare(&vocab, CLOSURE, &[])?;
    let options = |cancel: &Cancel| {
        let mut o = RunOptions::default();
        o.engine.threads = a.threads;
        o.engine.witnesses = a.witnesses;
        o.engine.cancel = cancel.clone();
        o
    };
    let start = Instant::now();
    let whole = query.run(&src, &options(&Cancel::new()))?;
    let length = start.elapsed();
    println!(
        "closure of {} functions, {} thread(s), witnesses {}: {} rounds, {:.3} s uncancelled",
        a.functions,
        a.threads,
        if a.witnesses { "on" } else { "off" },
        whole.rounds,
        length.as_secs_f64()
    );
    drop(whole);
    println!("\n| cancel at ms | wall ms after | CPU ms after |\n|---:|---:|---:|");
    let (mut walls, mut cpus) = (Vec::new(), Vec::new());
    let mut at = a.step;
    while at < length {
        let cancel = Cancel::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let setter = {
            let cancel = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(at);
                let marks = (Instant::now(), cpu());
                cancel.cancel();
                let _ = tx.send(marks);
            })
        };
        let result = query.run(&src, &options(&cancel));
        let (done, done_cpu) = (Instant::now(), cpu());
        let _ = setter.join();
        let Ok((t, c)) = rx.recv() else { break };
        match result {
            Ok(_) => println!("| {} | finished first | |", at.as_millis()),
            Err(_) => {
                let wall = done.saturating_duration_since(t).as_secs_f64() * 1000.0;
                let spent = done_cpu.saturating_sub(c).as_secs_f64() * 1000.0;
                println!("| {} | {wall:.1} | {spent:.1} |", at.as_millis());
                walls.push(wall);
                cpus.push(spent);
            }
        }
        at += a.step;
    }
    if walls.is_empty() {
        return Ok(());
    }
    let over = |v: &[f64]| v.iter().filter(|&&x| x > 100.0).count();
    let worst = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    println!(
        "\n{} cancels: wall ms median {:.1}, p90 {:.1}, worst {:.1}, over 100 ms {}; \
         CPU ms median {:.1}, p90 {:.1}, worst {:.1}, over 100 ms {}; load {}",
        walls.len(),
        median(&mut walls.clone()),
        percentile(&mut walls.clone(), 90.0),
        worst(&walls),
        over(&walls),
        median(&mut cpus.clone()),
        percentile(&mut cpus.clone(), 90.0),
        worst(&cpus),
        over(&cpus),
        strata_benches::loadavg()
    );
    Ok(())
}

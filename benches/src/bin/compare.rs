//! Strata beside the engines a user would pick instead, on the same inputs.
//!
//! Each workload (closure, same generation, points-to, a chain, bound reachability) is
//! written to Soufflé-style `.facts` files, then run through Strata (witnesses off and on,
//! one and two threads), datafrog, ascent and crepe (each written in its own API), a
//! hand-written BFS (reachability), and Soufflé when `souffle` is on `PATH`. Every engine runs
//! in a child process of this binary (`--child`), which reads the files, runs the program up
//! to `--runs` times (fewer when `--budget` seconds are spent) and reports its answer count,
//! its times and its peak RSS (`VmHWM`), so peaks do not mix. The table: workload, engine,
//! median time, peak RSS, answers, and the ratio to the fastest non-Strata engine. Exits 1
//! when two engines disagree on a count, or an engine fails.
//!
//! ```text
//! cargo run --release -p strata-benches --bin compare [-- OPTIONS]
//!   --quick            smaller inputs (a smoke run, seconds)
//!   --smoke            tiny inputs (what the CI test runs)
//!   --only NAME[,NAME] workloads to run (closure, same_generation, points_to, chain, reach)
//!   --engines E[,E]    engines to run (strata-1t-plain, strata-2t-plain, strata-1t-witnesses,
//!                      strata-2t-witnesses, datafrog, ascent, crepe, bfs, souffle)
//!   --runs N           runs per engine (5)
//!   --budget S         stop an engine's runs once S seconds are spent (30)
//!   --timeout S        kill an engine's child after S seconds (300)
//!   --seed S           workload seed (0)
//!   --size N           the size of every workload run (nodes, variables or links) instead
//!                      of the scale's
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use strata_benches::engines::{Engine, Prepared, souffle_available};
use strata_benches::workload::{self, Kind, Scale};
use strata_benches::{BenchResult, data_root, median, peak_rss_kib};

struct Options {
    scale: Scale,
    kinds: Vec<Kind>,
    engines: Option<Vec<Engine>>,
    runs: usize,
    budget: f64,
    timeout: f64,
    seed: u64,
    size: Option<u32>,
}

/// What one child reported.
struct Measured {
    answers: u64,
    times: Vec<f64>,
    rss_kib: u64,
}

enum Outcome {
    Ran(Measured),
    Skipped(String),
    Failed(String),
}

fn value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let scale = if args.iter().any(|a| a == "--smoke") {
        Scale::Smoke
    } else if args.iter().any(|a| a == "--quick") {
        Scale::Quick
    } else {
        Scale::Default
    };
    let kinds = match value(args, "--only") {
        Some(list) => list
            .split(',')
            .map(|k| Kind::parse(k).ok_or_else(|| format!("unknown workload {k}")))
            .collect::<Result<_, _>>()?,
        None => Kind::ALL.to_vec(),
    };
    let engines = match value(args, "--engines") {
        Some(list) => Some(
            list.split(',')
                .map(|e| Engine::parse(e).ok_or_else(|| format!("unknown engine {e}")))
                .collect::<Result<_, _>>()?,
        ),
        None => None,
    };
    let num = |name: &str, default: f64| -> Result<f64, String> {
        value(args, name).map_or(Ok(default), |v| {
            v.parse().map_err(|_| format!("{name}: not a number: {v}"))
        })
    };
    Ok(Options {
        scale,
        kinds,
        engines,
        runs: num("--runs", if scale == Scale::Smoke { 1.0 } else { 5.0 })?.max(1.0) as usize,
        budget: num("--budget", 30.0)?,
        timeout: num("--timeout", 300.0)?,
        seed: num("--seed", 0.0)? as u64,
        size: match value(args, "--size") {
            Some(v) => Some(
                v.parse()
                    .map_err(|_| format!("--size: not a number: {v}"))?,
            ),
            None => None,
        },
    })
}

/// `--child ENGINE KIND DIR RUNS BUDGET`: runs one engine and prints
/// `answers=N times=T1,T2,… rss_kib=K`.
fn child(args: &[String]) -> BenchResult<()> {
    let [engine, kind, dir, runs, budget] = args else {
        return Err("usage: compare --child ENGINE KIND DIR RUNS BUDGET".into());
    };
    let engine = Engine::parse(engine).ok_or("unknown engine")?;
    let kind = Kind::parse(kind).ok_or("unknown workload")?;
    let dir = PathBuf::from(dir);
    let runs: usize = runs.parse()?;
    let budget: f64 = budget.parse()?;
    let prepared = if engine == Engine::Souffle {
        Prepared::souffle(kind, &dir, &dir.join("souffle-out"))?
    } else {
        let w = workload::read_facts(kind, &dir)?;
        Prepared::new(engine, kind, &w)?
    };
    let mut times = Vec::new();
    let mut answers = None;
    let started = Instant::now();
    for _ in 0..runs {
        let t = Instant::now();
        let n = std::hint::black_box(prepared.run()?);
        times.push(t.elapsed().as_secs_f64());
        if answers.is_some_and(|a| a != n) {
            return Err(format!("answers changed between runs: {answers:?} then {n}").into());
        }
        answers = Some(n);
        if started.elapsed().as_secs_f64() > budget {
            break;
        }
    }
    let times: Vec<String> = times.iter().map(|t| format!("{t:.6}")).collect();
    println!(
        "answers={} times={} rss_kib={}",
        answers.unwrap_or(0),
        times.join(","),
        peak_rss_kib().unwrap_or(0)
    );
    Ok(())
}

fn parse_child(out: &str) -> Option<Measured> {
    let line = out.lines().rev().find(|l| l.starts_with("answers="))?;
    let mut m = Measured {
        answers: 0,
        times: Vec::new(),
        rss_kib: 0,
    };
    for field in line.split_whitespace() {
        let (k, v) = field.split_once('=')?;
        match k {
            "answers" => m.answers = v.parse().ok()?,
            "times" => {
                m.times = v
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .ok()?
            }
            "rss_kib" => m.rss_kib = v.parse().ok()?,
            _ => {}
        }
    }
    Some(m)
}

fn run_child(engine: Engine, kind: Kind, dir: &Path, o: &Options) -> Outcome {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return Outcome::Failed(format!("current_exe: {e}")),
    };
    let mut child = match Command::new(exe)
        .arg("--child")
        .arg(engine.name())
        .arg(kind.name())
        .arg(dir)
        .arg(o.runs.to_string())
        .arg(o.budget.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Outcome::Failed(format!("spawn: {e}")),
    };
    // Drain both pipes on threads so a chatty child cannot block.
    let drain = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut p) = p {
                let _ = p.read_to_string(&mut s);
            }
            s
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if started.elapsed().as_secs_f64() > o.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("timed out after {:.0} s", o.timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(format!("wait: {e}")),
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    match status {
        Err(e) => Outcome::Failed(e),
        Ok(s) if !s.success() => Outcome::Failed(format!("{s}: {}", err.trim())),
        Ok(_) => match parse_child(&out) {
            Some(m) => Outcome::Ran(m),
            None => Outcome::Failed(format!("no result line in {out:?}")),
        },
    }
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_owned())
}

fn input_size(w: &workload::Workload) -> String {
    let parts: Vec<String> = w
        .relations
        .iter()
        .map(|(n, p)| format!("{n} {}", p.len()))
        .collect();
    parts.join(", ")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return match child(&args[1..]) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    let o = match parse_options(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("compare: {e}");
            return ExitCode::from(2);
        }
    };
    let souffle = souffle_available();
    if !souffle {
        println!(
            "Soufflé: skipped (`souffle` is not on PATH; install it and rerun to add its rows)."
        );
    }
    let scale = format!("{:?}", o.scale).to_lowercase();
    let root = data_root().join(format!("compare-{scale}-seed-{}", o.seed));
    println!(
        "scale {scale}, up to {} runs per engine (budget {} s), load average at start: {}\n",
        o.runs,
        o.budget,
        load()
    );
    println!(
        "| workload | engine | median s | runs | peak RSS MiB | answers | time / best other | RSS / datafrog |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    let mut ok = true;
    let mut loads = Vec::new();
    for &kind in &o.kinds {
        let n = o.size.unwrap_or_else(|| kind.size(o.scale));
        let w = kind.make_sized(n, o.seed);
        let dir = root.join(format!("{}-{n}", kind.name()));
        if let Err(e) = workload::write_facts(&w, &dir) {
            eprintln!("compare: writing {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
        let label = format!("{} ({})", kind.name(), input_size(&w));
        let engines: Vec<Engine> = Engine::for_kind(kind)
            .into_iter()
            .filter(|e| o.engines.as_ref().is_none_or(|only| only.contains(e)))
            .collect();
        let mut rows: Vec<(Engine, Outcome)> = Vec::new();
        for e in engines {
            let outcome = if e == Engine::Souffle && !souffle {
                Outcome::Skipped("souffle not on PATH".to_owned())
            } else {
                run_child(e, kind, &dir, &o)
            };
            rows.push((e, outcome));
        }
        loads.push(format!("{}: {}", kind.name(), load()));
        let med = |m: &Measured| median(&mut m.times.clone());
        let best_other = rows
            .iter()
            .filter(|(e, _)| !e.is_strata())
            .filter_map(|(_, o)| match o {
                Outcome::Ran(m) => Some(med(m)),
                _ => None,
            })
            .fold(f64::INFINITY, f64::min);
        let df_rss = rows.iter().find_map(|(e, o)| match (e, o) {
            (Engine::Datafrog, Outcome::Ran(m)) => Some(m.rss_kib as f64),
            _ => None,
        });
        let expected = rows.iter().find_map(|(_, o)| match o {
            Outcome::Ran(m) => Some(m.answers),
            _ => None,
        });
        for (e, outcome) in &rows {
            match outcome {
                Outcome::Ran(m) => {
                    let t = med(m);
                    let agree = Some(m.answers) == expected;
                    ok &= agree;
                    let runs = if m.times.len() < o.runs {
                        format!("{} (fewer)", m.times.len())
                    } else {
                        m.times.len().to_string()
                    };
                    let ratio = if best_other.is_finite() && best_other > 0.0 {
                        format!("{:.2}", t / best_other)
                    } else {
                        "-".to_owned()
                    };
                    let rss_ratio =
                        df_rss.map_or("-".to_owned(), |d| format!("{:.2}", m.rss_kib as f64 / d));
                    println!(
                        "| {label} | {} | {t:.3} | {runs} | {:.0} | {}{} | {ratio} | {rss_ratio} |",
                        e.name(),
                        m.rss_kib as f64 / 1024.0,
                        m.answers,
                        if agree { "" } else { " **DIFFERS**" },
                    );
                }
                Outcome::Skipped(why) => {
                    println!("| {label} | {} | skipped: {why} | | | | | |", e.name());
                }
                Outcome::Failed(why) => {
                    ok = false;
                    println!(
                        "| {label} | {} | **failed**: {} | | | | | |",
                        e.name(),
                        why.replace('|', "/").replace('\n', " ")
                    );
                }
            }
        }
    }
    println!("\nload average after each workload: {}", loads.join("; "));
    if !ok {
        eprintln!("compare: engines disagree on an answer count, or an engine failed (see above)");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

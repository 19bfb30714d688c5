//! `ingest-report`: ingest throughput and peak memory of the real store against the two
//! floors, and hot point-lookup latency, on one generated code graph.
//!
//! ```text
//! ingest-report [--edges N] [--seed S] [--runs R] [--lookups L] [--data DIR]
//! ```
//!
//! Generates (or reuses, under `target/bench-data/`) the string edge dump and the numeric
//! `edge.facts` of `Config::with_edges(N).seed(S)` (default 10M edges, seed 0), or takes both
//! from `--data DIR`. Then runs each of five programs R times (default 3), each run a child
//! process of this binary so its peak RSS (`VmHWM`) is its own, round-robin so that load drift
//! hits every program alike:
//!
//! - `string-store`: the real ingest of `code.edges.tsv` into a fresh database;
//! - `string-floor`: [`strata_benches::parse_and_intern_floor`] on the same file;
//! - `numeric-store`: the real ingest of `edge.facts` into a fresh database;
//! - `numeric-floor`: [`strata_benches::redb_write_floor`] of the same file's pairs in file
//!   order (the timed part is the write and commit only; the parse before it is reported
//!   apart);
//! - `numeric-floor-sorted`: the same with the pairs sorted and deduplicated first (untimed):
//!   redb's best case, a stricter floor.
//!
//! Last, a `lookup` child opens the database of the last `string-store` run and times L
//! (default 10,000) hot lookups of `calls` with the source bound, cycling over 1000 sampled
//! sources, then as many with both columns bound and as many text-to-term lookups.
//! Prints Markdown tables and whether each target of the store issue holds.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use strata_benches::{
    BenchResult, DEFAULT_SEED, Dumps, LARGE_EDGES, LookupSample, dumps, edges_spec, facts_spec,
    ingest_file_timed, lookup_count, median, open_store, parse_and_intern_floor, peak_rss_kib,
    percentile, read_pairs, redb_write_floor,
};
use strata_eval::{FactSource, Value};

const USAGE: &str = "\
usage: ingest-report [--edges N] [--seed S] [--runs R] [--lookups L] [--data DIR]

  --edges N    edges of the generated graph (default 10000000; k/M suffixes allowed)
  --seed S     generator seed (default 0)
  --runs R     runs of each ingest program (default 3)
  --lookups L  timed lookups of each kind (default 10000)
  --data DIR   take code.edges.tsv and edge.facts from DIR instead of generating them";

const PROGRAMS: [&str; 5] = [
    "string-store",
    "string-floor",
    "numeric-store",
    "numeric-floor",
    "numeric-floor-sorted",
];

/// Targets from the store issue.
const STRING_MIN_ROWS_PER_SEC: f64 = 0.7e6;
const STRING_MAX_RATIO: f64 = 3.0;
const NUMERIC_MIN_ROWS_PER_SEC: f64 = 1.0e6;
const NUMERIC_MAX_RATIO: f64 = 2.0;
const MAX_RSS_MIB: f64 = 1024.0;
const LOOKUP_MAX_MEDIAN_US: f64 = 20.0;

struct Args {
    edges: u64,
    seed: u64,
    runs: usize,
    lookups: usize,
    data: Option<PathBuf>,
}

fn parse_count(s: &str) -> Option<u64> {
    let s = s.replace('_', "");
    let (digits, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1_000),
        'm' | 'M' => (&s[..s.len() - 1], 1_000_000),
        _ => (&s[..], 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        edges: LARGE_EDGES,
        seed: DEFAULT_SEED,
        runs: 3,
        lookups: 10_000,
        data: None,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let count = |v: &String| parse_count(v).ok_or(format!("{flag}: not a count: {v:?}"));
        match flag.as_str() {
            "--edges" => a.edges = count(value()?)?,
            "--seed" => a.seed = count(value()?)?,
            "--runs" => a.runs = count(value()?)?.max(1) as usize,
            "--lookups" => a.lookups = count(value()?)?.max(1) as usize,
            "--data" => a.data = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--child") {
        child(&args[1..])
    } else {
        match parse_args(&args) {
            Ok(a) => parent(&a),
            Err(e) => {
                if !e.is_empty() {
                    eprintln!("ingest-report: {e}");
                }
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ingest-report: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The child: one program, one run; prints `key=value` pairs on one `RESULT` line.

fn child(args: &[String]) -> BenchResult<()> {
    let [program, input, work, rest @ ..] = args else {
        return Err("child: expected PROGRAM INPUT WORKDIR".into());
    };
    let (input, work) = (Path::new(input), Path::new(work));
    let mut out = Out::default();
    match program.as_str() {
        "string-store" | "numeric-store" => {
            let spec = if program == "string-store" {
                edges_spec(input)
            } else {
                facts_spec(input)
            };
            let db = work.join("db");
            let t = Instant::now();
            let i = ingest_file_timed(&db, input, &spec)?;
            let secs = t.elapsed().as_secs_f64();
            out.push("secs", format!("{secs:.4}"));
            out.push("rows", i.summary.facts_read);
            out.push("new", i.summary.new);
            out.push("read_secs", format!("{:.4}", i.read.as_secs_f64()));
            out.push("commit_secs", format!("{:.4}", i.commit.as_secs_f64()));
            out.push("db_bytes", dir_bytes(&db)?.to_string());
        }
        "string-floor" => {
            let t = Instant::now();
            let (rows, distinct) = parse_and_intern_floor(input)?;
            out.push("secs", format!("{:.4}", t.elapsed().as_secs_f64()));
            out.push("rows", rows.to_string());
            out.push("distinct", distinct.to_string());
        }
        "numeric-floor" | "numeric-floor-sorted" => {
            let t = Instant::now();
            let mut pairs = read_pairs(input)?;
            if program == "numeric-floor-sorted" {
                pairs.sort_unstable();
                pairs.dedup();
            }
            let parse = t.elapsed().as_secs_f64();
            let path = work.join("floor.redb");
            let t = Instant::now();
            redb_write_floor(&pairs, &path)?;
            out.push("secs", format!("{:.4}", t.elapsed().as_secs_f64()));
            out.push("rows", pairs.len().to_string());
            out.push("parse_secs", format!("{parse:.4}"));
            out.push("db_bytes", std::fs::metadata(&path)?.len().to_string());
        }
        "lookup" => {
            let lookups: usize = rest
                .first()
                .and_then(|s| s.parse().ok())
                .ok_or("lookup: expected a lookup count")?;
            lookup_child(input, lookups, &mut out)?;
        }
        other => return Err(format!("child: unknown program {other:?}").into()),
    }
    out.push(
        "rss_kib",
        peak_rss_kib().map_or("0".to_owned(), |k| k.to_string()),
    );
    let line: Vec<String> = out.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("RESULT {}", line.join(" "));
    Ok(())
}

/// Times hot lookups on the database in `db`: `lookups` of each kind, each timed alone.
fn lookup_child(db: &Path, lookups: usize, out: &mut Out) -> BenchResult<()> {
    let t = Instant::now();
    let store = open_store(db)?;
    let snap = store.snapshot()?;
    out.push("open_secs", format!("{:.4}", t.elapsed().as_secs_f64()));
    let sample = LookupSample::take(&snap, "calls", 1000)?;
    let n = sample.src.len();
    let texts: Vec<Value> = sample
        .texts
        .iter()
        .map(|s| Value::text(s.clone()))
        .collect();
    // Warm: one pass over every sampled term of each kind.
    let mut visited = 0u64;
    for ((&src, &(a, b)), text) in sample.src.iter().zip(&sample.pairs).zip(&texts) {
        visited += lookup_count(&snap, "calls", &[(0, src)])?;
        lookup_count(&snap, "calls", &[(0, a), (1, b)])?;
        snap.term(text)?;
    }
    out.push("rows_per_src", format!("{:.2}", visited as f64 / n as f64));
    let mut one = Vec::with_capacity(lookups);
    let mut two = Vec::with_capacity(lookups);
    let mut term = Vec::with_capacity(lookups);
    for k in 0..lookups {
        let i = k % n;
        let t = Instant::now();
        std::hint::black_box(lookup_count(&snap, "calls", &[(0, sample.src[i])])?);
        one.push(t.elapsed().as_secs_f64() * 1e6);
        let (a, b) = sample.pairs[i];
        let t = Instant::now();
        std::hint::black_box(lookup_count(&snap, "calls", &[(0, a), (1, b)])?);
        two.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        std::hint::black_box(snap.term(&texts[i])?);
        term.push(t.elapsed().as_secs_f64() * 1e6);
    }
    for (name, v) in [("one", &mut one), ("two", &mut two), ("term", &mut term)] {
        let (m, p) = (median(v), percentile(v, 99.0));
        out.push(&format!("{name}_median_us"), format!("{m:.2}"));
        out.push(&format!("{name}_p99_us"), format!("{p:.2}"));
    }
    Ok(())
}

/// A child's results, printed as one `RESULT key=value ...` line.
#[derive(Default)]
struct Out(Vec<(String, String)>);

impl Out {
    fn push(&mut self, key: &str, value: impl ToString) {
        self.0.push((key.to_owned(), value.to_string()));
    }
}

fn dir_bytes(dir: &Path) -> std::io::Result<u64> {
    let mut n = 0;
    for e in std::fs::read_dir(dir)? {
        n += e?.metadata()?.len();
    }
    Ok(n)
}

// ---------------------------------------------------------------------------------------------
// The parent: runs the children, collects, prints.

/// One child's `RESULT` line as key-value pairs.
struct Run(Vec<(String, String)>);

impl Run {
    fn get(&self, key: &str) -> f64 {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(f64::NAN)
    }
}

fn run_child(program: &str, input: &Path, work: &Path, extra: &[String]) -> BenchResult<Run> {
    let exe = std::env::current_exe()?;
    let output = Command::new(exe)
        .arg("--child")
        .arg(program)
        .arg(input)
        .arg(work)
        .args(extra)
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "{program} failed ({}): {}{}",
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .ok_or_else(|| format!("{program}: no RESULT line in {stdout:?}"))?;
    Ok(Run(line
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()))
}

/// One program's runs: median time, rows, the highest peak RSS of any run.
struct Summary {
    secs: f64,
    rows: f64,
    rss_mib: f64,
    runs: Vec<f64>,
}

fn summarize(runs: &[Run]) -> Summary {
    let mut secs: Vec<f64> = runs.iter().map(|r| r.get("secs")).collect();
    let all = secs.clone();
    let rss: Vec<f64> = runs.iter().map(|r| r.get("rss_kib") / 1024.0).collect();
    Summary {
        secs: median(&mut secs),
        rows: runs.first().map_or(0.0, |r| r.get("rows")),
        rss_mib: rss.iter().copied().fold(0.0, f64::max),
        runs: all,
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "yes" } else { "**NO**" }
}

fn parent(a: &Args) -> BenchResult<()> {
    let t = Instant::now();
    let d = match &a.data {
        Some(dir) => Dumps::existing(dir)?,
        None => dumps(a.edges, a.seed)?,
    };
    eprintln!(
        "dumps ready in {:.1} s: {} and {}",
        t.elapsed().as_secs_f64(),
        d.edges.display(),
        d.facts.display()
    );
    let mut loads = vec![strata_benches::loadavg()];
    let mut results: Vec<Vec<Run>> = PROGRAMS.iter().map(|_| Vec::new()).collect();
    let mut last_db: Option<tempfile::TempDir> = None;
    for run in 0..a.runs {
        for (p, program) in PROGRAMS.iter().enumerate() {
            let input = if program.starts_with("string") {
                &d.edges
            } else {
                &d.facts
            };
            let work = tempfile::tempdir()?;
            let r = run_child(program, input, work.path(), &[])?;
            eprintln!(
                "run {} {program:>14}: {:7.3} s, {:6.0} MiB peak, load {}",
                run + 1,
                r.get("secs"),
                r.get("rss_kib") / 1024.0,
                strata_benches::loadavg()
            );
            results[p].push(r);
            if *program == "string-store" {
                last_db = Some(work);
            }
        }
        loads.push(strata_benches::loadavg());
    }
    let db = last_db.ok_or("no string-store run")?;
    let lk = run_child(
        "lookup",
        &db.path().join("db"),
        db.path(),
        &[a.lookups.to_string()],
    )?;
    loads.push(strata_benches::loadavg());
    drop(db);

    let s: Vec<Summary> = results.iter().map(|r| summarize(r)).collect();
    let (ss, sf, ns, nf, nsorted) = (&s[0], &s[1], &s[2], &s[3], &s[4]);
    let string_ratio = ss.secs / sf.secs;
    let numeric_ratio = ns.secs / nf.secs;
    let sorted_ratio = ns.secs / nsorted.secs;

    println!(
        "## Ingest: {} ({} rows), {} ({} rows), {} runs each\n",
        d.edges.display(),
        ss.rows,
        d.facts.display(),
        ns.rows,
        a.runs
    );
    println!("| program | median s | runs s | rows/s | peak RSS MiB (max of runs) | real/floor |");
    println!("|---|---:|---|---:|---:|---:|");
    let ratio = [
        format!("{string_ratio:.2}x"),
        "(floor)".to_owned(),
        format!("{numeric_ratio:.2}x ({sorted_ratio:.2}x sorted)"),
        "(floor)".to_owned(),
        "(floor, stricter)".to_owned(),
    ];
    for (i, program) in PROGRAMS.iter().enumerate() {
        let x = &s[i];
        let runs: Vec<String> = x.runs.iter().map(|v| format!("{v:.2}")).collect();
        println!(
            "| {program} | {:.2} | {} | {:.2}M | {:.0} | {} |",
            x.secs,
            runs.join(", "),
            x.rows / x.secs / 1e6,
            x.rss_mib,
            ratio[i]
        );
    }
    let med =
        |p: usize, k: &str| median(&mut results[p].iter().map(|r| r.get(k)).collect::<Vec<_>>());
    let mib = |p: usize| med(p, "db_bytes") / f64::from(1 << 20);
    println!();
    println!(
        "Rows are lines read (the numeric file repeats {:.0} pairs, which every program \
         stores once; numeric-floor-sorted inserts only the distinct pairs). string-store: \
         read {:.2} s + commit {:.2} s; numeric-store: read {:.2} s + commit {:.2} s \
         (medians). string-floor: {:.0} distinct texts. The numeric floors parse the file \
         before the timed write ({:.2} s, and sorting). Files: string database {:.0} MiB, \
         numeric database {:.0} MiB, redb floor {:.0} MiB (sorted {:.0} MiB).",
        ns.rows - med(2, "new"),
        med(0, "read_secs"),
        med(0, "commit_secs"),
        med(2, "read_secs"),
        med(2, "commit_secs"),
        med(1, "distinct"),
        med(3, "parse_secs"),
        mib(0),
        mib(2),
        mib(3),
        mib(4),
    );

    let one = lk.get("one_median_us");
    println!(
        "\n## Hot lookups on the string database ({} each)\n",
        a.lookups
    );
    println!("| lookup | median µs | p99 µs |");
    println!("|---|---:|---:|");
    for (name, key) in [
        ("`calls` with src bound", "one"),
        ("`calls` with src and dst bound", "two"),
        ("text to term (`Snapshot::term`)", "term"),
    ] {
        println!(
            "| {name} | {:.2} | {:.2} |",
            lk.get(&format!("{key}_median_us")),
            lk.get(&format!("{key}_p99_us"))
        );
    }
    println!(
        "\n(`calls` rows per sampled src: {:.2}; opening the store and a snapshot took {:.3} s; \
         lookup process peak RSS {:.0} MiB.)",
        lk.get("rows_per_src"),
        lk.get("open_secs"),
        lk.get("rss_kib") / 1024.0
    );

    let string_rate = ss.rows / ss.secs;
    let numeric_rate = ns.rows / ns.secs;
    println!("\n## Targets\n");
    println!("| target | measured | holds |");
    println!("|---|---|---|");
    println!(
        "| string ingest ≥ 0.7M rows/s | {:.2}M rows/s | {} |",
        string_rate / 1e6,
        verdict(string_rate >= STRING_MIN_ROWS_PER_SEC)
    );
    println!(
        "| string ingest ≤ 3x parse-and-intern floor | {string_ratio:.2}x | {} |",
        verdict(string_ratio <= STRING_MAX_RATIO)
    );
    println!(
        "| numeric ingest ≥ 1M edges/s | {:.2}M edges/s | {} |",
        numeric_rate / 1e6,
        verdict(numeric_rate >= NUMERIC_MIN_ROWS_PER_SEC)
    );
    println!(
        "| numeric ingest ≤ 2x redb write floor | {numeric_ratio:.2}x | {} |",
        verdict(numeric_ratio <= NUMERIC_MAX_RATIO)
    );
    println!(
        "| (stricter) numeric ingest ≤ 2x redb floor with sorted distinct pairs | \
         {sorted_ratio:.2}x | {} |",
        verdict(sorted_ratio <= NUMERIC_MAX_RATIO)
    );
    println!(
        "| string ingest peak RSS < 1 GiB | {:.0} MiB | {} |",
        ss.rss_mib,
        verdict(ss.rss_mib < MAX_RSS_MIB)
    );
    println!(
        "| numeric ingest peak RSS < 1 GiB | {:.0} MiB | {} |",
        ns.rss_mib,
        verdict(ns.rss_mib < MAX_RSS_MIB)
    );
    println!(
        "| point lookup, one bound column, median < 20 µs hot | {one:.2} µs | {} |",
        verdict(one < LOOKUP_MAX_MEDIAN_US)
    );
    println!(
        "\nLoad average (1/5/15 min) before, after each round and after the lookups: {}",
        loads.join(" | ")
    );
    Ok(())
}

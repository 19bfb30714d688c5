//! `code-bench`: each question of the bundled `code` module asked through the MCP `query`
//! tool on a real SCIP index: latency (p50, p95, max) and bytes per answer, text and JSON.
//!
//! ```text
//! store/tests/scip/make-indexes.sh          # writes target/scip/*.scip (npm, pip, git)
//! cargo build --release -p strata-benches --bin code-bench
//! target/release/code-bench [--index PATH]... [--sample N] [--runs R] [--limit L]
//! ```
//!
//! Ingests each index (default: `target/scip/effect.scip` and `target/scip/django.scip`,
//! the largest the tests make) into a database of its own in a temporary directory, as
//! `strata ingest` does (`strata_app::ingest::ingest`, which writes the bundled code pack),
//! and keeps the one with the most facts. Opens it as `strata serve` does
//! (`strata_mcp::Server::open`, in this process) and picks the inputs of each question from
//! the stored facts, deterministically: N (default 40) spread evenly over the sorted distinct
//! callees (`call_site`'s first column), callers, symbols with other sites, implemented
//! types, defined symbols, documents and directories. Each question's program binds its
//! first column to the input (`bind`, as an agent asks); each call asks for a page of L rows
//! (default 20), witnesses on (as the tool always gives them). Per question: one untimed call,
//! then per input R (default 3) timed calls of the text answer and one timed call with
//! `json: true`. Bytes are the answer's text content (for the JSON call, its JSON text);
//! `structured` is the size of the structured content (compact JSON) a text answer carries
//! beside its text. Prints a Markdown table, and the direct callers of the busiest callee
//! (the callee with the most call sites) as a page.
//!
//! Without any of the indexes it prints a notice saying so and exits successfully.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde_json::json;
use strata_app::ingest::{DumpFiles, dump_specs, ingest};
use strata_benches::{BenchResult, median, percentile};
use strata_eval::{Cancel, FactSource};
use strata_mcp::{Options, Server};
use strata_store::BatchOptions;

const USAGE: &str = "\
usage: code-bench [--index PATH]... [--sample N] [--runs R] [--limit L]

  --index PATH  a SCIP index (repeatable; the one with the most facts is used; default
                target/scip/effect.scip and target/scip/django.scip)
  --sample N    inputs per question (default 40)
  --runs R      timed text calls per input (default 3), plus one JSON call
  --limit L     rows per answer page (default 20)";

/// What a question's input is drawn from.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Input {
    Callee,
    Caller,
    OtherSymbol,
    Type,
    Defined,
    File,
    Directory,
}

impl Input {
    /// The stored relation and column the inputs are the distinct values of.
    fn source(self) -> (&'static str, usize) {
        match self {
            Input::Callee => ("call_site", 0),
            Input::Caller => ("call_site", 1),
            Input::OtherSymbol => ("other_site", 0),
            Input::Type => ("implements", 1),
            Input::Defined => ("defines", 1),
            Input::File => ("document", 0),
            Input::Directory => ("in_directory", 1),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Input::Callee => "callees",
            Input::Caller => "callers",
            Input::OtherSymbol => "symbols with other sites",
            Input::Type => "implemented types",
            Input::Defined => "defined symbols",
            Input::File => "documents",
            Input::Directory => "directories",
        }
    }
}

/// Each question of `code.dl`: its name, the program (`?x` bound to the input) and the input.
const QUESTIONS: &[(&str, &str, Input)] = &[
    (
        "call_sites",
        "code.call_sites(?x, ?caller, ?path, ?line) => ?caller, ?path, ?line",
        Input::Callee,
    ),
    ("callers", "code.callers(?x, ?c) => ?c", Input::Callee),
    (
        "all_callers",
        "code.all_callers(?x, ?c) => ?c",
        Input::Callee,
    ),
    ("callees", "code.callees(?x, ?c) => ?c", Input::Caller),
    (
        "all_callees",
        "code.all_callees(?x, ?c) => ?c",
        Input::Caller,
    ),
    (
        "other_sites",
        "code.other_sites(?x, ?holder, ?path, ?line) => ?holder, ?path, ?line",
        Input::OtherSymbol,
    ),
    (
        "implementations",
        "code.implementations(?x, ?s) => ?s",
        Input::Type,
    ),
    (
        "defined_in",
        "code.defined_in(?x, ?p) => ?p",
        Input::Defined,
    ),
    (
        "outline",
        "code.outline(?x, ?s, ?kind, ?line, ?owner) => ?s, ?kind, ?line, ?owner",
        Input::File,
    ),
    (
        "unreferenced",
        "code.unreferenced(?s, ?x, ?line) => ?s, ?line",
        Input::File,
    ),
    (
        "symbol_impact",
        "code.symbol_impact(?x, ?caller, ?path, ?role) => ?caller, ?path, ?role",
        Input::Callee,
    ),
    ("dir_deps", "code.dir_deps(?x, ?b) => ?b", Input::Directory),
    (
        "dir_depends_on",
        "code.dir_depends_on(?x, ?b) => ?b",
        Input::Directory,
    ),
    (
        "dir_cycles",
        "code.dir_cycles(?x, ?b) => ?b",
        Input::Directory,
    ),
];

struct Args {
    indexes: Vec<PathBuf>,
    sample: usize,
    runs: usize,
    limit: u64,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("code-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn positive(v: Option<String>) -> Result<usize, String> {
    v.and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| USAGE.to_owned())
}

fn args() -> Result<Option<Args>, String> {
    let mut a = Args {
        indexes: Vec::new(),
        sample: 40,
        runs: 3,
        limit: 20,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--index" => a.indexes.push(it.next().map(PathBuf::from).ok_or(USAGE)?),
            "--sample" => a.sample = positive(it.next())?,
            "--runs" => a.runs = positive(it.next())?,
            "--limit" => a.limit = positive(it.next())? as u64,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(None);
            }
            _ => return Err(USAGE.to_owned()),
        }
    }
    if a.indexes.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/scip");
        a.indexes = ["effect.scip", "django.scip"]
            .iter()
            .map(|n| dir.join(n))
            .collect();
    }
    Ok(Some(a))
}

fn run() -> BenchResult<()> {
    let Some(args) = args()? else {
        return Ok(());
    };
    let present: Vec<&PathBuf> = args.indexes.iter().filter(|p| p.exists()).collect();
    if present.is_empty() {
        let names: Vec<String> = args
            .indexes
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        println!(
            "*** SKIPPED: no SCIP index to bench ({} missing); run \
             store/tests/scip/make-indexes.sh (needs npm, pip and git) first ***",
            names.join(", ")
        );
        return Ok(());
    }
    // Ingest each; keep the database with the most facts.
    let mut best: Option<(u64, PathBuf, tempfile::TempDir)> = None;
    for index in present {
        let dir = tempfile::tempdir()?;
        let db = dir.path().join("db");
        let specs = dump_specs(&DumpFiles {
            files: vec![index.clone()],
            ..DumpFiles::default()
        })?;
        let t = Instant::now();
        let done = ingest(&db, &specs, BatchOptions::default(), |_, _| {}, || {})?;
        let facts = done.summary.new;
        println!(
            "{}: {} bytes, {} facts stored, ingested in {:.2} s ({})",
            index.display(),
            std::fs::metadata(index)?.len(),
            facts,
            t.elapsed().as_secs_f64(),
            done.summary
                .documents
                .as_ref()
                .map_or_else(String::new, |d| d.to_string())
        );
        if best.as_ref().is_none_or(|b| facts > b.0) {
            best = Some((facts, index.clone(), dir));
        }
    }
    let Some((facts, index, dir)) = best else {
        return Err("no index ingested".into());
    };
    let db = dir.path().join("db");
    println!(
        "benching {} ({facts} facts); load average {}",
        index.display(),
        load_average()
    );
    let server = Server::open(&db, Options::default())?;
    let inputs = inputs(&server, args.sample)?;
    for (kind, (all, picked)) in &inputs {
        println!("{}: {} distinct, {} picked", kind.name(), all, picked.len());
    }
    let limit = args.limit;
    let call = |program: &str, x: &str, json: bool| -> BenchResult<(f64, Answer)> {
        let arguments = json!({
            "program": program,
            "bind": { "x": x },
            "limit": limit,
            "json": json,
        });
        let t = Instant::now();
        let out = server
            .call("query", arguments.as_object().cloned(), &Cancel::new())
            .ok_or("no query tool")?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let structured = out.structured.as_ref();
        Ok((
            ms,
            Answer {
                bytes: out.text.len(),
                structured: structured.map_or(0, |s| s.to_string().len()),
                rows: structured
                    .and_then(|s| s["rows"].as_array())
                    .map_or(0, Vec::len),
                total: structured.and_then(|s| s["total"].as_u64()).unwrap_or(0),
                error: out.is_error.then_some(out.text),
            },
        ))
    };
    println!(
        "\n{} inputs per question (fewer where fewer exist), {} timed text calls and 1 JSON call \
         each, pages of {limit} rows\n",
        args.sample, args.runs
    );
    println!(
        "| question | inputs | rows p50 | total p50 / max | p50 ms | p95 ms | max ms | JSON p50 ms | \
         text bytes p50 | p95 | max | JSON bytes p50 | p95 | max | structured bytes p50 | errors |"
    );
    println!(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | \
         ---: | ---: | ---: |"
    );
    let mut first_error = None;
    for &(name, program, kind) in QUESTIONS {
        let picked = &inputs[&kind].1;
        let Some(first) = picked.first() else {
            println!("| `{name}` | 0 | | | | | | | | | | | | | | |");
            continue;
        };
        call(program, first, false)?;
        let (mut times, mut json_times) = (Vec::new(), Vec::new());
        let (mut text, mut jbytes, mut structured) = (Vec::new(), Vec::new(), Vec::new());
        let (mut rows, mut totals) = (Vec::new(), Vec::new());
        let mut errors = 0;
        for x in picked {
            for i in 0..args.runs {
                let (ms, a) = call(program, x, false)?;
                times.push(ms);
                if i == 0 {
                    text.push(a.bytes as f64);
                    structured.push(a.structured as f64);
                    rows.push(a.rows as f64);
                    totals.push(a.total as f64);
                }
                if let Some(e) = a.error {
                    errors += 1;
                    first_error.get_or_insert(format!("{name}({x}): {e}"));
                }
            }
            let (ms, a) = call(program, x, true)?;
            json_times.push(ms);
            jbytes.push(a.bytes as f64);
        }
        let max_total = totals.iter().copied().fold(0.0, f64::max);
        let max_ms = times.iter().copied().fold(0.0, f64::max);
        let max_text = text.iter().copied().fold(0.0, f64::max);
        let max_json = jbytes.iter().copied().fold(0.0, f64::max);
        println!(
            "| `{name}` | {} | {} | {} / {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} | \
             {} | {} | {errors} |",
            picked.len(),
            median(&mut rows),
            median(&mut totals),
            max_total,
            median(&mut times),
            percentile(&mut times, 95.0),
            max_ms,
            median(&mut json_times),
            median(&mut text),
            percentile(&mut text, 95.0),
            max_text,
            median(&mut jbytes),
            percentile(&mut jbytes, 95.0),
            max_json,
            median(&mut structured),
        );
    }
    if let Some(e) = first_error {
        println!("\nfirst error: {e}");
    }
    // The page the issue sets a target for: the direct callers of the busiest callee, and
    // of the busiest function or method.
    for (what, method) in [("callee", false), ("method", true)] {
        let Some((busiest, sites)) = busiest_callee(&server, method)? else {
            continue;
        };
        let program = "code.callers(?x, ?c) => ?c";
        let (ms, a) = call(program, &busiest, false)?;
        let (_, j) = call(program, &busiest, true)?;
        println!(
            "\nbusiest {what} {busiest} ({sites} call sites): `callers` page of {} of {} rows: \
             text {} bytes, JSON {} bytes, {ms:.2} ms",
            a.rows, a.total, a.bytes, j.bytes
        );
    }
    println!("\nload average at the end: {}", load_average());
    Ok(())
}

/// What one answer measured.
struct Answer {
    bytes: usize,
    structured: usize,
    rows: usize,
    total: u64,
    error: Option<String>,
}

/// Per input kind: how many distinct values there are, and `n` of them spread evenly over
/// their sorted order.
fn inputs(server: &Server, n: usize) -> BenchResult<BTreeMap<Input, (usize, Vec<String>)>> {
    let snap = server.store().snapshot()?;
    let mut out = BTreeMap::new();
    for kind in [
        Input::Callee,
        Input::Caller,
        Input::OtherSymbol,
        Input::Type,
        Input::Defined,
        Input::File,
        Input::Directory,
    ] {
        let (rel, col) = kind.source();
        let mut terms = BTreeSet::new();
        snap.scan(rel, &mut |r| {
            terms.insert(r[col]);
            ControlFlow::Continue(())
        })?;
        let mut all = BTreeSet::new();
        for t in terms {
            if let strata_eval::Value::Text(s) = snap.value(t)? {
                all.insert(s.to_string());
            }
        }
        let step = all.len().div_ceil(n).max(1);
        let picked = all.iter().step_by(step).cloned().collect();
        out.insert(kind, (all.len(), picked));
    }
    Ok(out)
}

/// The callee with the most call sites (of those whose symbol names a function or method,
/// `name().`, when `method`), and how many; of two as busy, the first in symbol order.
fn busiest_callee(server: &Server, method: bool) -> BenchResult<Option<(String, u64)>> {
    let snap = server.store().snapshot()?;
    let mut counts: BTreeMap<_, u64> = BTreeMap::new();
    snap.scan("call_site", &mut |r| {
        *counts.entry(r[0]).or_default() += 1;
        ControlFlow::Continue(())
    })?;
    let mut best: Option<(String, u64)> = None;
    for (term, n) in counts {
        let strata_eval::Value::Text(s) = snap.value(term)? else {
            continue;
        };
        if method && !s.ends_with(").") {
            continue;
        }
        if best
            .as_ref()
            .is_none_or(|(b, m)| n > *m || (n == *m && *s < **b))
        {
            best = Some((s.to_string(), n));
        }
    }
    Ok(best)
}

/// The system's load averages (`/proc/loadavg`), or `-` where there is none.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "-".to_owned(),
        |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

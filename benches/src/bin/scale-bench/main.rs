//! `scale-bench`: Strata at the size of a large codebase (issue 18's scale suite). On the
//! generator's code graph (`Config::with_edges(N)`, string ids, units), it measures:
//!
//! - ingest: wall time and peak RSS of the real ingest into a fresh database;
//! - open: opening the database and taking a snapshot;
//! - bound reach, forward (what a file imports, transitively) and reverse (what imports it),
//!   for the left- and right-recursive closure over `imports`, a `deps`-style module, and
//!   Cypher's `[:IMPORTS*]` in both directions: each row count checked against, and its time
//!   set beside, a hand-written breadth-first search over the store's lookups (target 2x;
//!   the search gives no witnesses and the questions ask for none, and a column times each
//!   question with witnesses too);
//! - pages: the first and a late page of a closure's rows (what reaches the reverse node,
//!   and the edges into those files) beside counting them (target: the first page within
//!   1.5x the count's time and 2x its memory, a late page no dearer);
//! - the server under load (`load`): 4 clients doing point lookups through the server's
//!   lanes, alone and while a runaway cross product runs under a lowered memory budget
//!   (target: the runaway stopped by its budget, its RSS growth within it, the lookups' p99
//!   under 50 ms);
//! - `find` through the persistent name index: p95 of 20 calls of each of
//!   [`strata_benches::FIND_NAMES`] (target 50 ms);
//! - disk: bytes per fact, and DuckDB's file holding the same edges (DuckDB from PyPI,
//!   installed into a virtualenv under the data directory when `python3 -c "import duckdb"`
//!   fails; left out with `--no-duckdb`).
//!
//! Each measurement runs in a child process of this binary, so its peak RSS and CPU time
//! are its own; times are the fastest of `--runs` runs (3), and the targets are judged on
//! CPU time (all threads): the machine's cores may be shared, which wall time shows and CPU
//! time much less. Prints Markdown tables and whether each target is met.
//!
//! ```text
//! scale-bench [--edges N] [--seed S] [--runs N] [--budget-mib M] [--no-duckdb] [--reuse-db]
//! ```
//!
//! The default size is 1M edges, and the issue's 50M with `STRATA_BENCH_LARGE=1` (about 12
//! GB of disk with the dump and DuckDB's file, checked before it starts; a few minutes of
//! ingest on a 2-core machine, and a few more to build `find`'s index); the dumps and the
//! database are kept under `target/bench-data/` and reused (`--reuse-db` keeps the
//! database of the last run rather than ingesting again). `STRATA_BENCH_CACHE_MIB=M` opens
//! the store of each query with an M MiB page cache (the store's default is 64 MiB), to
//! tell the cache's share of a peak RSS from the query's.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use rustc_hash::FxHashSet;
use strata_app::{App, Call, CypherRequest, Options, Page, QueryRequest};

mod load;
use strata_benches::{
    BenchResult, DEFAULT_SEED, cpu_seconds, data_root, edges_spec, ingest_file_timed, large,
    peak_rss_kib, run_child,
};
use strata_eval::{Bind, Cancel, Cell, FactSource, PageToken, Term, Value};
use strata_fixtures::codegraph::{self, Config};
use strata_store::{OpenOptions, Store};

/// The issue's size, with `STRATA_BENCH_LARGE=1`.
const LARGE: u64 = 50_000_000;

/// The default size.
const DEFAULT: u64 = 1_000_000;

/// The memory the runaway query asks for at most, as a client may lower the server's cap.
const RUNAWAY_BUDGET: u64 = 256 << 20;

const USAGE: &str = "usage: scale-bench [--edges N] [--seed S] [--runs N] [--budget-mib M] \
[--no-duckdb] [--reuse-db]";

/// The `deps`-style module the reach questions also go through.
const DEPS: &str = "\
# Everything a file imports, directly or through others.
depends_on(?a, ?b) :- imports(?a, ?b);
depends_on(?a, ?c) :- depends_on(?a, ?b), imports(?b, ?c);
";

/// One question of the suite: its name, its program (or Cypher query) and which end is bound.
struct Question {
    name: &'static str,
    cypher: bool,
    text: String,
    forward: bool,
}

fn questions(forward_node: &str, reverse_node: &str) -> Vec<Question> {
    let left = "r(?a, ?b) :- imports(?a, ?b); r(?a, ?c) :- r(?a, ?b), imports(?b, ?c);";
    let right = "r(?a, ?b) :- imports(?a, ?b); r(?a, ?c) :- imports(?a, ?b), r(?b, ?c);";
    let q = |name, cypher, text: String, forward| Question {
        name,
        cypher,
        text,
        forward,
    };
    vec![
        q(
            "left, forward",
            false,
            format!("{left} r(\"{forward_node}\", ?x) => ?x"),
            true,
        ),
        q(
            "left, reverse",
            false,
            format!("{left} r(?x, \"{reverse_node}\") => ?x"),
            false,
        ),
        q(
            "right, forward",
            false,
            format!("{right} r(\"{forward_node}\", ?x) => ?x"),
            true,
        ),
        q(
            "right, reverse",
            false,
            format!("{right} r(?x, \"{reverse_node}\") => ?x"),
            false,
        ),
        q(
            "deps module, forward",
            false,
            format!("deps.depends_on(\"{forward_node}\", ?x) => ?x"),
            true,
        ),
        q(
            "deps module, reverse",
            false,
            format!("deps.depends_on(?x, \"{reverse_node}\") => ?x"),
            false,
        ),
        q(
            "Cypher *, forward",
            true,
            "MATCH (f)-[:IMPORTS*]->(t) WHERE id(f) = $node RETURN DISTINCT id(t) AS t".to_owned(),
            true,
        ),
        q(
            "Cypher *, reverse",
            true,
            "MATCH (f)-[:IMPORTS*]->(t) WHERE id(t) = $node RETURN DISTINCT id(f) AS f".to_owned(),
            false,
        ),
    ]
}

/// The child: runs one measurement and prints `seconds count peak_kib`.
fn child(args: &[String]) -> BenchResult<()> {
    let what = args.first().map_or("", String::as_str);
    let db = Path::new(args.get(1).ok_or("no database")?);
    let cpu_start = cpu_seconds();
    let start = Instant::now();
    let count = match what {
        "ingest" => {
            let edges = Path::new(args.get(2).ok_or("no dump")?);
            ingest_file_timed(db, edges, &edges_spec(edges))?
                .summary
                .new
        }
        "open" => {
            let store = Store::open(db, OpenOptions::default())?;
            let snap = store.snapshot()?;
            snap.estimate("imports", &[])?
        }
        "bfs" => {
            let node = args.get(2).ok_or("no node")?;
            bfs(db, node, args.get(3).map(String::as_str) == Some("forward"))?
        }
        "query" | "cypher" => {
            let text = args.get(2).ok_or("no program")?;
            let node = args.get(3).ok_or("no node")?;
            let flags = &args[4.min(args.len())..];
            let offset = flags
                .iter()
                .find_map(|f| f.strip_prefix("offset="))
                .map(str::parse::<u64>)
                .transpose()?;
            let mut options = Options::default();
            if let Ok(mib) = std::env::var("STRATA_BENCH_CACHE_MIB") {
                options.cache_bytes = Some(mib.parse::<usize>()? << 20);
            }
            let app = App::open(db, options)?;
            let page = Page {
                limit: Some(10),
                witnesses: flags.iter().any(|f| f == "witnesses"),
                page_token: match offset {
                    Some(o) => PageToken::new(o, Some(app.store().snapshot()?.seq())).to_string(),
                    None => String::new(),
                },
                ..Page::default()
            };
            let cancel = Cancel::new();
            let answer = if what == "query" {
                let r = QueryRequest {
                    program: text.clone(),
                    binds: Vec::new(),
                    page,
                };
                app.query(&Call::plain("query"), &r, &cancel)?.answer.answer
            } else {
                let r = CypherRequest {
                    query: text.clone(),
                    params: vec![("node".to_owned(), Bind::One(Value::text(node.as_str())))],
                    page,
                };
                app.cypher(&Call::plain("cypher"), &r, &cancel)?
                    .answer
                    .answer
            };
            // A count's one row holds the count; any other answer counts its rows.
            match answer.rows.as_slice() {
                [row] if text.contains("count(") => match row.cells.first() {
                    Some(Cell::Value(Value::Number(n))) => *n as u64,
                    _ => answer.total,
                },
                _ => answer.total,
            }
        }
        "load" => {
            let budget = args.get(2).ok_or("no budget")?.parse()?;
            load::child(db, budget)?;
            return Ok(());
        }
        "find" => {
            load::find_child(db)?;
            return Ok(());
        }
        other => return Err(format!("unknown child {other}").into()),
    };
    let secs = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_start;
    println!(
        "{secs} {count} {} {cpu}",
        peak_rss_kib().unwrap_or_default()
    );
    Ok(())
}

/// The nodes `node` reaches over `imports` (forward) or that reach it (reverse), by a
/// breadth-first search over the store's lookups: the hand-written baseline.
fn bfs(db: &Path, node: &str, forward: bool) -> BenchResult<u64> {
    let store = Store::open(db, OpenOptions::default())?;
    let snap = store.snapshot()?;
    let Some(start) = snap.term(&Value::text(node))? else {
        return Ok(0);
    };
    let (from, to) = if forward { (0, 1) } else { (1, 0) };
    let mut seen: FxHashSet<Term> = FxHashSet::default();
    let mut queue = VecDeque::from([start]);
    while let Some(n) = queue.pop_front() {
        snap.lookup("imports", &[(from, n)], &mut |row| {
            if seen.insert(row[to]) {
                queue.push_back(row[to]);
            }
            ControlFlow::Continue(())
        })?;
    }
    Ok(seen.len() as u64)
}

/// Runs a child; the lines it printed.
fn run_lines(args: &[&str]) -> BenchResult<Vec<String>> {
    Ok(run_child(args)?.lines().map(str::to_owned).collect())
}

/// What one child measured: wall seconds, the count it answered, peak RSS in KiB, and CPU
/// seconds (all its threads).
type Measured = (f64, u64, u64, f64);

/// Runs a child; what it measured.
fn run(args: &[&str]) -> BenchResult<Measured> {
    let lines = run_lines(args)?;
    let f: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
    match f.as_slice() {
        [s, n, k, c] => Ok((s.parse()?, n.parse()?, k.parse()?, c.parse()?)),
        _ => Err(format!("child {:?} printed {lines:?}", args.first()).into()),
    }
}

/// Runs a child `runs` times: the fastest run's measures, and the least CPU time of any.
/// Other helpers and programs share the cores, so the fastest run is the one least
/// disturbed.
fn best(runs: usize, args: &[&str]) -> BenchResult<Measured> {
    let mut out = run(args)?;
    for _ in 1..runs {
        out = fastest(out, run(args)?);
    }
    Ok(out)
}

/// The faster of two runs, with the lesser CPU time of the two.
fn fastest(a: Measured, b: Measured) -> Measured {
    let cpu = a.3.min(b.3);
    let (s, n, k, _) = if b.0 < a.0 { b } else { a };
    (s, n, k, cpu)
}

/// The most imported file and the file importing most, among the first `sample` rows of
/// `imports`: the reverse and forward questions' nodes.
fn pick_nodes(db: &Path, sample: usize) -> BenchResult<(String, String)> {
    let store = Store::open(db, OpenOptions::default())?;
    let snap = store.snapshot()?;
    let mut out_deg: rustc_hash::FxHashMap<Term, u32> = Default::default();
    let mut in_deg: rustc_hash::FxHashMap<Term, u32> = Default::default();
    let mut n = 0;
    snap.scan("imports", &mut |row| {
        *out_deg.entry(row[0]).or_default() += 1;
        *in_deg.entry(row[1]).or_default() += 1;
        n += 1;
        if n >= sample {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    let best = |m: &rustc_hash::FxHashMap<Term, u32>| {
        m.iter()
            .max_by_key(|(t, d)| (**d, std::cmp::Reverse(**t)))
            .map(|(t, _)| *t)
    };
    let text = |t: Option<Term>| -> BenchResult<String> {
        let t = t.ok_or("imports is empty")?;
        match snap.value(t)? {
            Value::Text(s) => Ok(s.to_string()),
            other => Err(format!("a node that is not a text: {other:?}").into()),
        }
    };
    Ok((text(best(&out_deg))?, text(best(&in_deg))?))
}

/// DuckDB's file holding the edges dump (four text columns), or why it is missing.
fn duckdb_bytes(edges: &Path, dir: &Path) -> BenchResult<u64> {
    let python = if Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        PathBuf::from("python3")
    } else {
        let venv = data_root().join("duckdb-venv");
        let py = venv.join("bin/python");
        if !py.exists() {
            let ok = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status()?
                .success()
                && Command::new(venv.join("bin/pip"))
                    .args(["install", "-q", "duckdb"])
                    .status()?
                    .success();
            if !ok {
                return Err("could not install duckdb from PyPI into a virtualenv".into());
            }
        }
        py
    };
    let file = dir.join("edges.duckdb");
    let _ = std::fs::remove_file(&file);
    let script = "import duckdb, sys\n\
c = duckdb.connect(sys.argv[1])\n\
c.execute(\"create table edges as select * from read_csv(?, delim='\\t', header=false, \
quote='', escape='', auto_detect=false, columns={'src':'VARCHAR','kind':'VARCHAR',\
'dst':'VARCHAR','unit':'VARCHAR'})\", [sys.argv[2]])\n\
c.execute('checkpoint')\n\
c.close()\n";
    let out = Command::new(python)
        .args(["-c", script])
        .arg(&file)
        .arg(edges)
        .output()?;
    if !out.status.success() {
        return Err(format!("duckdb: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(std::fs::metadata(&file)?.len())
}

/// What the command line asks.
struct Args {
    edges: u64,
    seed: u64,
    duck: bool,
    runs: usize,
    reuse: bool,
    budget: u64,
}

fn parse_args(args: &[String]) -> BenchResult<Args> {
    let mut a = Args {
        edges: if large() { LARGE } else { DEFAULT },
        seed: DEFAULT_SEED,
        duck: true,
        runs: 3,
        reuse: false,
        budget: RUNAWAY_BUDGET,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--no-duckdb" => a.duck = false,
            "--reuse-db" => a.reuse = true,
            "--edges" => a.edges = value("--edges")?.parse()?,
            "--seed" => a.seed = value("--seed")?.parse()?,
            "--runs" => a.runs = value("--runs")?.parse::<usize>()?.max(1),
            "--budget-mib" => a.budget = value("--budget-mib")?.parse::<u64>()? << 20,
            _ => return Err(format!("unknown option {arg}\n{USAGE}").into()),
        }
    }
    Ok(a)
}

/// Free bytes on the file system holding `dir`, from `df` (`None` when it cannot say).
fn free_bytes(dir: &Path) -> Option<u64> {
    let out = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(dir)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

/// The disk the run will write, estimated per edge from the 1M-edge run (dump 134 bytes,
/// database 72 bytes a fact, DuckDB's file 17, the name index about 15), with a fifth more
/// for slack; refuses to start when the file system has less free.
fn check_disk(dir: &Path, a: &Args, dump_missing: bool) -> BenchResult<()> {
    let per_edge = 72 + 15 + if dump_missing { 134 } else { 0 } + if a.duck { 17 } else { 0 };
    let need = a.edges * per_edge / 5 * 6;
    // The previous run's database and DuckDB file are replaced: their room counts as free.
    let replaced = strata_benches::sidebyside::bytes_under(&dir.join("db"))
        + strata_benches::sidebyside::bytes_under(&dir.join("edges.duckdb"));
    match free_bytes(dir).map(|f| f + replaced) {
        Some(free) if free < need => Err(format!(
            "about {:.1} GB of disk needed under {}, {:.1} GB free",
            need as f64 / 1e9,
            dir.display(),
            free as f64 / 1e9
        )
        .into()),
        _ => Ok(()),
    }
}

fn main_inner() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1..]);
    }
    let a = parse_args(&args)?;
    let (edges, seed) = (a.edges, a.seed);
    let dir = data_root().join(format!("scale-{edges}-seed-{seed}"));
    std::fs::create_dir_all(&dir)?;
    // The issue's dump: `gen-codegraph --edges N --units` (each edge with its unit).
    let dump = dir.join("code.edges.tsv");
    let db = dir.join("db");
    let reuse = a.reuse && db.join("modules/deps.dl").is_file();
    if !reuse {
        check_disk(&dir, &a, !dump.is_file())?;
    }
    if !dump.is_file() {
        let tmp = dir.join("code.edges.tsv.tmp");
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        codegraph::write_edges(&Config::with_edges(edges).seed(seed).units(true), &mut w)?;
        w.into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        std::fs::rename(&tmp, &dump)?;
    }
    let db_s = db
        .to_str()
        .ok_or("a database path that is not UTF-8")?
        .to_owned();
    let edges_s = dump.to_str().ok_or("a dump path that is not UTF-8")?;
    println!(
        "# scale-bench: {edges} edges (seed {seed}), {}; times the best of {} runs, the \
         targets judged on CPU time (all threads; the cores may be shared)",
        dump.display(),
        a.runs
    );
    println!();
    println!("| step | seconds | rows | peak RSS MiB |");
    println!("|---|---|---|---|");
    if !reuse {
        if db.exists() {
            std::fs::remove_dir_all(&db)?;
        }
        let (s, n, k, _) = run(&["ingest", &db_s, edges_s])?;
        println!("| ingest | {s:.2} | {n} | {} |", k / 1024);
        std::fs::create_dir_all(db.join("modules"))?;
        std::fs::write(db.join("modules/deps.dl"), DEPS)?;
    }
    let (s, n, k, _) = best(a.runs, &["open", &db_s])?;
    println!("| open and snapshot | {s:.3} | {n} | {} |", k / 1024);
    let (forward_node, reverse_node) = pick_nodes(&db, 200_000)?;
    println!();
    println!("forward from {forward_node}; reverse to {reverse_node}");
    println!();
    let verdicts = [
        (
            "every bound reach within 2x of the search, with the same rows",
            reaches(&a, &db_s, &forward_node, &reverse_node)?,
        ),
        (
            "the first page within 1.5x the time and 2x the memory of the count, a late \
             page no dearer",
            pages(&a, &db_s, &reverse_node)?,
        ),
        (
            "the runaway stopped by its memory budget, lookups' p99 under 50 ms meanwhile",
            server_load(&db_s, a.budget)?,
        ),
        ("`find` within 50 ms p95", find(&db_s)?),
    ];
    let store = Store::open(&db, OpenOptions::default())?;
    let space = store.space()?;
    drop(store);
    println!();
    println!(
        "disk: {} bytes, {} facts, {:.1} bytes per fact",
        space.bytes(),
        space.facts,
        space.bytes_per_fact()
    );
    if a.duck {
        match duckdb_bytes(&dump, &dir) {
            Ok(b) => println!(
                "DuckDB, the same edges (4 text columns, no index): {b} bytes; Strata {:.2}x",
                space.bytes() as f64 / b as f64
            ),
            Err(e) => println!("DuckDB: {e}"),
        }
    }
    println!();
    println!("| target | met |");
    println!("|---|---|");
    for (what, ok) in &verdicts {
        println!("| {what} | {} |", if *ok { "yes" } else { "NO" });
    }
    Ok(())
}

/// The bound reach questions against the search; whether each is within 2x of it.
fn reaches(a: &Args, db_s: &str, forward_node: &str, reverse_node: &str) -> BenchResult<bool> {
    let mut within = true;
    let bfs_of = |forward: bool| -> BenchResult<(f64, u64, f64)> {
        let (node, dir) = if forward {
            (forward_node, "forward")
        } else {
            (reverse_node, "reverse")
        };
        let (s, n, _, c) = best(a.runs, &["bfs", db_s, node, dir])?;
        Ok((s, n, c))
    };
    let forward_bfs = bfs_of(true)?;
    let reverse_bfs = bfs_of(false)?;
    println!(
        "| question | seconds | rows | peak RSS MiB | search seconds | x search | rows agree | \
         CPU s | search CPU s | x search, CPU | with witnesses, seconds |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for q in questions(forward_node, reverse_node) {
        let node = if q.forward {
            forward_node
        } else {
            reverse_node
        };
        let kind = if q.cypher { "cypher" } else { "query" };
        let (bs, bn, bc) = if q.forward { forward_bfs } else { reverse_bfs };
        match best(a.runs, &[kind, db_s, &q.text, node]) {
            Ok((s, n, k, c)) => {
                let x = s / bs.max(1e-6);
                // Judged on CPU time: the cores are shared, and wall time waits for them.
                within &= c <= 2.0 * bc && n == bn;
                let w = best(1, &[kind, db_s, &q.text, node, "witnesses"])
                    .map_or_else(|e| format!("failed: {e}"), |(s, ..)| format!("{s:.3}"));
                println!(
                    "| {} | {s:.3} | {n} | {} | {bs:.3} | {x:.2} | {} | {c:.3} | {bc:.3} | {:.2} \
                     | {w} |",
                    q.name,
                    k / 1024,
                    if n == bn { "yes" } else { "NO" },
                    c / bc.max(1e-6),
                );
            }
            Err(e) => {
                within = false;
                println!("| {} | failed: {e} | | | {bs:.3} | | | | | | |", q.name);
            }
        }
    }
    println!();
    Ok(within)
}

/// The first and a late page of the closure's rows beside counting them: what reaches the
/// reverse node (one column), and the edges into those files (two columns, a few times as
/// many rows; it grows with the closure, as the pairs of a whole closure would not).
fn pages(a: &Args, db_s: &str, reverse_node: &str) -> BenchResult<bool> {
    let left = "r(?a, ?b) :- imports(?a, ?b); r(?a, ?c) :- r(?a, ?b), imports(?b, ?c);";
    let closures = [
        (
            "who reaches the node",
            format!("{left} r(?x, \"{reverse_node}\")"),
            "count(?x)",
            "?x",
        ),
        (
            "edges into it",
            format!("{left} r(?x, \"{reverse_node}\"), imports(?y, ?x)"),
            "count(?y)",
            "?y, ?x",
        ),
    ];
    println!(
        "| closure | goal | seconds | peak RSS MiB | rows | x count's time | x count's memory \
         | CPU s | x count's CPU |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut ok = true;
    for (name, body, count, rows) in closures {
        let count_program = format!("{body} => {count}");
        let rows_program = format!("{body} => {rows}");
        let (cs, total, ck, cc) = match run(&["query", db_s, &count_program, "-"]) {
            Ok(c) => c,
            Err(e) => {
                ok = false;
                println!("| {name} | `=> {count}` | failed: {e} | | | | | | |");
                continue;
            }
        };
        let late = total.saturating_sub(10) / 10 * 9;
        let first_flag = "offset=0".to_owned();
        let late_flag = format!("offset={late}");
        // The three in turn, each round, so that a busy spell of the machine does not fall
        // on one of them only; the fastest of each.
        let none = (f64::MAX, 0, 0, f64::MAX);
        let mut best = [(cs, total, ck, cc), none, none];
        for round in 0..a.runs {
            let jobs: [(&str, Option<&str>); 3] = [
                (&count_program, None),
                (&rows_program, Some(&first_flag)),
                (&rows_program, Some(&late_flag)),
            ];
            for (i, (program, flag)) in jobs.into_iter().enumerate() {
                if round == 0 && i == 0 {
                    continue;
                }
                let mut args = vec!["query", db_s, program, "-"];
                args.extend(flag);
                match run(&args) {
                    Ok(r) => best[i] = fastest(best[i], r),
                    Err(e) => {
                        ok = false;
                        println!("| {name} | `=> {rows}` | failed: {e} | | | | | | |");
                    }
                }
            }
        }
        let [(cs, total, ck, cc), first, later] = best;
        println!(
            "| {name} | `=> {count}` | {cs:.3} | {} | {total} | 1 | 1 | {cc:.3} | 1 |",
            ck / 1024
        );
        for (what, offset, (s, n, k, c)) in [("first page", 0, first), ("late page", late, later)] {
            let (xt, xm) = (s / cs.max(1e-6), k as f64 / ck.max(1) as f64);
            // The first page within 1.5x the count's time and 2x its memory; the late one
            // no dearer than the first, give or take a tenth (and 5 ms) for noise; times
            // judged on CPU, as the reaches are.
            ok &= n == total
                && if offset == 0 {
                    c <= 1.5 * cc && xm <= 2.0
                } else {
                    c <= first.3 * 1.1 + 0.005 && k as f64 <= first.2 as f64 * 1.1
                };
            println!(
                "| {name} | `=> {rows}`, {what} (row {}) | {s:.3} | {} | {n} | {xt:.2} | {xm:.2} \
                 | {c:.3} | {:.2} |",
                offset + 1,
                k / 1024,
                c / cc.max(1e-6)
            );
        }
    }
    println!();
    Ok(ok)
}

/// The runaway query and the lookups beside it (see `load`): whether the runaway stopped
/// at its memory budget, its RSS growth within the budget, and lookups' p99 under 50 ms.
fn server_load(db_s: &str, budget: u64) -> BenchResult<bool> {
    let out = run_lines(&["load", db_s, &budget.to_string()])?;
    let f: Vec<&str> = out
        .first()
        .map_or(Vec::new(), |l| l.splitn(11, ' ').collect());
    let [qn, q50, q99, bn, b50, b99, runs, mem, stop, growth, error] = f.as_slice() else {
        return Err(format!("the load child printed {out:?}").into());
    };
    let (b99f, memf, runsf, growthf): (f64, usize, usize, u64) =
        (b99.parse()?, mem.parse()?, runs.parse()?, growth.parse()?);
    let budget_kib = budget / 1024;
    println!(
        "{} lookup clients (`imports(\"<file>\", ?d) => ?d`) through the server's lanes; \
         the runaway `{}` with `max_memory` {} MiB",
        load::CLIENTS,
        load::RUNAWAY,
        budget >> 20
    );
    println!();
    println!("| lookups | calls | p50 ms | p99 ms |");
    println!("|---|---|---|---|");
    println!("| alone | {qn} | {q50} | {q99} |");
    println!("| beside the runaway | {bn} | {b50} | {b99} |");
    println!();
    println!(
        "runaway calls: {runs}, {mem} stopped by the memory budget, the longest {stop} s; \
         RSS growth {} MiB (budget {} MiB); the first stopped with: {error}",
        growthf / 1024,
        budget >> 20
    );
    println!();
    Ok(memf == runsf && growthf <= budget_kib && b99f < 50.0)
}

/// `find` through the name index (see `load`): whether p95 is within 50 ms for every name.
fn find(db_s: &str) -> BenchResult<bool> {
    let out = run_lines(&["find", db_s])?;
    let f: Vec<&str> = out.first().map_or(Vec::new(), |l| l.split(' ').collect());
    let [index, calls, p50, p95, worst] = f.as_slice() else {
        return Err(format!("the find child printed {out:?}").into());
    };
    println!(
        "`find`: the name index opened (built when missing) in {index} s; {calls} calls, \
         p50 {p50} ms, p95 {p95} ms, the worst name's p95 {worst} ms"
    );
    println!();
    println!("| name | matches | median ms | p95 ms |");
    println!("|---|---|---|---|");
    for l in &out[1..] {
        println!("{l}");
    }
    println!();
    Ok(worst.parse::<f64>()? <= 50.0)
}

fn main() -> ExitCode {
    match main_inner() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scale-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

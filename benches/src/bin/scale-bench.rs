//! `scale-bench`: Strata at the size of a large codebase (issue 18's scale suite). On the
//! generator's code graph (`Config::with_edges(N)`, string ids, units), it measures:
//!
//! - ingest: wall time and peak RSS of the real ingest into a fresh database;
//! - open: opening the database and taking a snapshot;
//! - bound reach, forward (what a file imports, transitively) and reverse (what imports it),
//!   for the left- and right-recursive closure over `imports`, a `deps`-style module, and
//!   Cypher's `[:IMPORTS*]` in both directions: each row count checked against, and its time
//!   set beside, a hand-written breadth-first search over the store's lookups;
//! - disk: bytes per fact, and DuckDB's file holding the same edges (DuckDB from PyPI,
//!   installed into a virtualenv under the data directory when `python3 -c "import duckdb"`
//!   fails; left out with `--no-duckdb`).
//!
//! Each measurement runs in a child process of this binary, so its peak RSS is its own.
//! Prints Markdown tables and whether each bound reach is within 2x of the search.
//!
//! ```text
//! scale-bench [--edges N] [--seed S] [--no-duckdb]
//! ```
//!
//! The default size is 1M edges, and the issue's 50M with `STRATA_BENCH_LARGE=1` (about 4.5
//! GB on disk and a few minutes of ingest on a 2-core machine); the dumps and the database are
//! kept under `target/bench-data/` and reused.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use rustc_hash::FxHashSet;
use strata_app::{App, Call, CypherRequest, Options, Page, QueryRequest};
use strata_benches::{
    BenchResult, DEFAULT_SEED, data_root, edges_spec, ingest_file_timed, large, peak_rss_kib,
};
use strata_eval::{Bind, Cancel, FactSource, Term, Value};
use strata_fixtures::codegraph::{self, Config};
use strata_store::{OpenOptions, Store};

/// The issue's size, with `STRATA_BENCH_LARGE=1`.
const LARGE: u64 = 50_000_000;

/// The default size.
const DEFAULT: u64 = 1_000_000;

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
            let app = App::open(db, Options::default())?;
            let page = Page {
                limit: Some(10),
                witnesses: false,
                ..Page::default()
            };
            let cancel = Cancel::new();
            if what == "query" {
                let r = QueryRequest {
                    program: text.clone(),
                    binds: Vec::new(),
                    page,
                };
                app.query(&Call::plain("query"), &r, &cancel)?
                    .answer
                    .answer
                    .total
            } else {
                let r = CypherRequest {
                    query: text.clone(),
                    params: vec![("node".to_owned(), Bind::One(Value::text(node.as_str())))],
                    page,
                };
                app.cypher(&Call::plain("cypher"), &r, &cancel)?
                    .answer
                    .answer
                    .total
            }
        }
        other => return Err(format!("unknown child {other}").into()),
    };
    let secs = start.elapsed().as_secs_f64();
    println!("{secs} {count} {}", peak_rss_kib().unwrap_or_default());
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

/// Runs a child; answers (seconds, count, peak KiB).
fn run(args: &[&str]) -> BenchResult<(f64, u64, u64)> {
    let out = Command::new(std::env::current_exe()?)
        .arg("--child")
        .args(args)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "child {:?} failed: {}",
            args.first(),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let f: Vec<&str> = text.split_whitespace().collect();
    match f.as_slice() {
        [s, n, k] => Ok((s.parse()?, n.parse()?, k.parse()?)),
        _ => Err(format!("child {:?} printed {text}", args.first()).into()),
    }
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

fn main_inner() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1..]);
    }
    let mut edges = if large() { LARGE } else { DEFAULT };
    let mut seed = DEFAULT_SEED;
    let mut duck = true;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--no-duckdb" => duck = false,
            "--edges" => edges = it.next().ok_or("--edges needs a value")?.parse()?,
            "--seed" => seed = it.next().ok_or("--seed needs a value")?.parse()?,
            _ => return Err(format!("unknown option {a}").into()),
        }
    }
    let dir = data_root().join(format!("scale-{edges}-seed-{seed}"));
    std::fs::create_dir_all(&dir)?;
    // The issue's dump: `gen-codegraph --edges N --units` (each edge with its unit).
    let dump = dir.join("code.edges.tsv");
    if !dump.is_file() {
        let tmp = dir.join("code.edges.tsv.tmp");
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        codegraph::write_edges(&Config::with_edges(edges).seed(seed).units(true), &mut w)?;
        w.into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        std::fs::rename(&tmp, &dump)?;
    }
    let db = dir.join("db");
    let db_s = db
        .to_str()
        .ok_or("a database path that is not UTF-8")?
        .to_owned();
    let edges_s = dump.to_str().ok_or("a dump path that is not UTF-8")?;
    println!(
        "# scale-bench: {edges} edges (seed {seed}), {}",
        dump.display()
    );
    println!();
    println!("| step | seconds | rows | peak RSS MiB |");
    println!("|---|---|---|---|");
    if db.exists() {
        std::fs::remove_dir_all(&db)?;
    }
    let (s, n, k) = run(&["ingest", &db_s, edges_s])?;
    println!("| ingest | {s:.2} | {n} | {} |", k / 1024);
    std::fs::create_dir_all(db.join("modules"))?;
    std::fs::write(db.join("modules/deps.dl"), DEPS)?;
    let (s, n, k) = run(&["open", &db_s])?;
    println!("| open and snapshot | {s:.3} | {n} | {} |", k / 1024);
    let (forward_node, reverse_node) = pick_nodes(&db, 200_000)?;
    println!();
    println!("forward from {forward_node}; reverse to {reverse_node}");
    println!();
    let mut within = true;
    let bfs_of = |forward: bool| -> BenchResult<(f64, u64)> {
        let (node, dir) = if forward {
            (&forward_node, "forward")
        } else {
            (&reverse_node, "reverse")
        };
        let (s, n, _) = run(&["bfs", &db_s, node, dir])?;
        Ok((s, n))
    };
    let forward_bfs = bfs_of(true)?;
    let reverse_bfs = bfs_of(false)?;
    println!(
        "| question | seconds | rows | peak RSS MiB | search seconds | x search | rows agree |"
    );
    println!("|---|---|---|---|---|---|---|");
    for q in questions(&forward_node, &reverse_node) {
        let node = if q.forward {
            &forward_node
        } else {
            &reverse_node
        };
        let kind = if q.cypher { "cypher" } else { "query" };
        let (bs, bn) = if q.forward { forward_bfs } else { reverse_bfs };
        match run(&[kind, &db_s, &q.text, node]) {
            Ok((s, n, k)) => {
                let x = s / bs.max(1e-6);
                within &= x <= 2.0 && n == bn;
                println!(
                    "| {} | {s:.3} | {n} | {} | {bs:.3} | {x:.2} | {} |",
                    q.name,
                    k / 1024,
                    if n == bn { "yes" } else { "NO" }
                );
            }
            Err(e) => {
                within = false;
                println!("| {} | failed: {e} | | | {bs:.3} | | |", q.name);
            }
        }
    }
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
    if duck {
        match duckdb_bytes(&dump, &dir) {
            Ok(b) => println!(
                "DuckDB, the same edges (4 text columns, no index): {b} bytes; Strata {:.2}x",
                space.bytes() as f64 / b as f64
            ),
            Err(e) => println!("DuckDB: {e}"),
        }
    }
    println!();
    println!(
        "every bound reach within 2x of the search, with the same rows: {}",
        if within { "yes" } else { "NO" }
    );
    Ok(())
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

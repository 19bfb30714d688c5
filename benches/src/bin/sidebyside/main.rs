//! `sidebyside`: Strata beside the engines a user would pick instead, each a whole process
//! on the same input files, in one run (issue 31). Every workload is generated (seed 0) and
//! written as TSV (`a<TAB>b` lines) under `target/bench-data/sidebyside-SIZE-seed-S/`, then
//! each engine runs as a child process, timed from spawn to reaping with its peak RSS and CPU
//! time read from `wait4` as it is reaped:
//!
//! - `floor`: a breadth-first search from every node (closures) or from node 0 (reach), a
//!   child mode of this binary reading the TSV (none for same generation);
//! - `datafrog`, `ascent`: `compare`'s programs in each crate's own API, child modes of this
//!   binary reading the TSV;
//! - `duckdb`: Python with DuckDB, the TSV read with `read_csv` into a table, then a recursive
//!   CTE (`WITH RECURSIVE ... UNION`) counted (DuckDB installed from PyPI into
//!   `target/bench-data/duckdb-venv` when `python3` does not import it);
//! - `strata`: `strata query DB 'PROGRAM => count(...)' --no-witnesses` over a store that
//!   `strata ingest` made of the same file beforehand (untimed).
//!
//! Every engine must give the same count (exit 1 if not). Then the ingest rows (`strata
//! ingest` beside DuckDB loading the same TSV into a table of a `.duckdb` file: string
//! edges, integer pairs, edges then nodes as two batches, and as one; the integer pairs also
//! beside DuckDB building an index on the columns Strata indexes), and the first page of
//! each closure with witnesses beside its count. Prints Markdown tables and which of the
//! issue's targets are met.
//!
//! ```text
//! sidebyside [--quick] [--runs N] [--only CASE[,CASE]] [--seed S] [--timeout S]
//!            [--strata PATH] [--no-duckdb] [--no-install] [--counts-only]
//!   --quick        small inputs: the whole suite in under a minute (release)
//!   --runs N       runs of each engine, round-robin (5; ingest rows min(N, 3))
//!   --only         cases: reach, go_deps, random, chain, same_generation
//!   --no-duckdb    leave DuckDB out; --no-install: use it only if already importable
//!   --counts-only  the count table only, checked to agree (what CI runs, with --quick)
//! ```

mod ingest;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use strata_benches::engines::{self, Engine};
use strata_benches::mcp::strata_binary;
use strata_benches::sidebyside::measure::{self, Run};
use strata_benches::sidebyside::{
    Case, Size, duck, read_tsv_pairs, thousands, write_nodes, write_pairs,
};
use strata_benches::workload::Workload;
use strata_benches::{BenchResult, data_root, loadavg, median, peak_rss_kib};

const USAGE: &str = "usage: sidebyside [--quick] [--runs N] [--only CASE[,CASE]] [--seed S] \
[--timeout S] [--strata PATH] [--no-duckdb] [--no-install] [--counts-only]";

/// What the command line asks.
pub struct Opts {
    /// Input sizes.
    pub size: Size,
    /// Runs of each engine.
    pub runs: usize,
    /// The cases to run.
    pub only: Vec<Case>,
    /// The workloads' seed.
    pub seed: u64,
    /// A child's time limit.
    pub timeout: Duration,
    /// The `strata` binary.
    pub strata: PathBuf,
    /// Python with DuckDB, or why there is none.
    pub duck: Result<PathBuf, String>,
    /// The count table only.
    pub counts_only: bool,
}

fn parse(args: &[String]) -> BenchResult<Opts> {
    let mut size = Size::Full;
    let mut runs = 5;
    let mut only = Case::ALL.to_vec();
    let mut seed = 0;
    let mut timeout = 600.0;
    let mut strata = None;
    let (mut duck_on, mut install, mut counts_only) = (true, true, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--quick" => size = Size::Quick,
            "--runs" => runs = value()?.parse::<usize>()?.max(1),
            "--only" => {
                only = value()?
                    .split(',')
                    .map(|c| Case::parse(c).ok_or(format!("unknown case {c}")))
                    .collect::<Result<_, _>>()?
            }
            "--seed" => seed = value()?.parse()?,
            "--timeout" => timeout = value()?.parse()?,
            "--strata" => strata = Some(PathBuf::from(value()?)),
            "--no-duckdb" => duck_on = false,
            "--no-install" => install = false,
            "--counts-only" => counts_only = true,
            _ => return Err(format!("unknown option {a}\n{USAGE}").into()),
        }
    }
    let duck = if duck_on {
        duck::python(install)
    } else {
        Err("--no-duckdb".to_owned())
    };
    Ok(Opts {
        size,
        runs,
        only,
        seed,
        timeout: Duration::from_secs_f64(timeout),
        strata: strata_binary(strata.as_deref())?,
        duck,
        counts_only,
    })
}

/// The size named `name` (`smoke`, `quick`, `full`).
fn size_named(name: &str) -> BenchResult<Size> {
    [Size::Smoke, Size::Quick, Size::Full]
        .into_iter()
        .find(|s| size_name(*s) == name)
        .ok_or_else(|| format!("unknown size {name}").into())
}

fn size_name(s: Size) -> String {
    format!("{s:?}").to_lowercase()
}

/// The children. Inputs are generated in children too, so that this process stays small: a
/// child it spawns starts with its peak RSS (`ru_maxrss` counts the memory of the process
/// it was spawned from, as it was when the child exec'ed).
///
/// - `--child write CASE SIZE SEED FILE`: writes the case's input, prints its label;
/// - `--child strings EDGES SEED DIR`: writes the code graph's `code.edges.tsv` and the
///   `code.nodes.tsv` of its nodes, prints the nodes;
/// - `--child ENGINE CASE FILE`: reads the TSV and prints the engine's count.
fn child(args: &[String]) -> BenchResult<()> {
    match args {
        [what, case, size, seed, file] if what == "write" => {
            let case = Case::parse(case).ok_or("unknown case")?;
            let input = case.input(size_named(size)?, seed.parse()?);
            write_pairs(&input.pairs, Path::new(file))?;
            println!("{}", input.label);
            return Ok(());
        }
        [what, edges, seed, dir] if what == "strings" => {
            let dir = Path::new(dir);
            let cfg =
                strata_fixtures::codegraph::Config::with_edges(edges.parse()?).seed(seed.parse()?);
            let path = dir.join("code.edges.tsv");
            let mut w = std::io::BufWriter::new(std::fs::File::create(&path)?);
            strata_fixtures::codegraph::write_edges(&cfg, &mut w)?;
            w.into_inner()
                .map_err(std::io::IntoInnerError::into_error)?;
            let n = write_nodes(&path, &dir.join("code.nodes.tsv"))?;
            println!("{n}");
            return Ok(());
        }
        _ => {}
    }
    let [engine, case, file] = args else {
        return Err("usage: sidebyside --child ENGINE CASE FILE".into());
    };
    let case = Case::parse(case).ok_or("unknown case")?;
    let pairs = read_tsv_pairs(Path::new(file))?;
    let n = match engine.as_str() {
        "floor" => case.floor(&pairs).ok_or("no floor for this case")?,
        "datafrog" | "ascent" => {
            let e = if engine == "datafrog" {
                Engine::Datafrog
            } else {
                Engine::Ascent
            };
            let w = Workload {
                name: case.name().to_owned(),
                relations: vec![(case.relation().to_owned(), pairs)],
                program: String::new(),
            };
            engines::run_native(e, case.kind(), &w)?
        }
        other => return Err(format!("unknown engine {other}").into()),
    };
    println!("{n}");
    Ok(())
}

/// The engines of the count table, in its column order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Eng {
    Floor,
    Datafrog,
    Ascent,
    DuckDb,
    Strata,
}

impl Eng {
    const ALL: [Eng; 5] = [
        Eng::Floor,
        Eng::Datafrog,
        Eng::Ascent,
        Eng::DuckDb,
        Eng::Strata,
    ];

    fn name(self) -> &'static str {
        match self {
            Eng::Floor => "floor (BFS)",
            Eng::Datafrog => "datafrog",
            Eng::Ascent => "ascent",
            Eng::DuckDb => "DuckDB",
            Eng::Strata => "Strata",
        }
    }
}

/// Every run of one engine on one case, or why it has none.
#[derive(Default)]
pub struct Runs {
    /// The measured runs with their counts.
    pub ok: Vec<(Run, u64)>,
    /// Why it stopped or never ran.
    pub failed: Option<String>,
    /// Why it was left out (not a failure).
    pub skipped: Option<String>,
}

impl Runs {
    /// The fastest run.
    pub fn best(&self) -> Option<&Run> {
        self.ok
            .iter()
            .map(|(r, _)| r)
            .min_by(|a, b| a.wall.total_cmp(&b.wall))
    }

    /// The median wall time.
    pub fn median(&self) -> Option<f64> {
        let mut v: Vec<f64> = self.ok.iter().map(|(r, _)| r.wall).collect();
        (!v.is_empty()).then(|| median(&mut v))
    }

    /// The count its runs gave (the first; they are checked alike).
    pub fn count(&self) -> Option<u64> {
        self.ok.first().map(|&(_, n)| n)
    }
}

/// Megabytes (10^6 bytes) of a KiB figure.
pub fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

/// The number a child printed last: a count.
pub fn last_number(out: &str) -> Option<u64> {
    out.split_whitespace().rev().find_map(|w| w.parse().ok())
}

/// The count `strata query` printed: the one cell of its one row.
pub fn strata_count(out: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(out).ok()?;
    let cell = v.get("rows")?.get(0)?.as_array()?.first()?.clone();
    cell.as_f64().map(|f| f as u64).or_else(|| cell.as_u64())
}

/// `strata query DB PROGRAM` with the suite's flags (`extra` added).
pub fn strata_query(o: &Opts, db: &Path, program: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(&o.strata);
    c.arg("query")
        .arg(db)
        .arg(program)
        .args(["--timeout", "600s"])
        .args(extra);
    c
}

fn command(o: &Opts, eng: Eng, case: Case, file: &Path, db: &Path) -> Option<Command> {
    let exe = std::env::current_exe().ok()?;
    let child = |name: &str| {
        let mut c = Command::new(&exe);
        c.arg("--child").arg(name).arg(case.name()).arg(file);
        c
    };
    match eng {
        Eng::Floor => (case.floor(&[]).is_some()).then(|| child("floor")),
        Eng::Datafrog => Some(child("datafrog")),
        Eng::Ascent => Some(child("ascent")),
        Eng::DuckDb => {
            let py = o.duck.as_ref().ok()?;
            let [a, b] = case.columns();
            let table = duck::Table::new(case.relation(), file, &[(a, "INTEGER"), (b, "INTEGER")]);
            let mut c = Command::new(py);
            c.arg("-c").arg(duck::query_script(&[table], case.sql()));
            Some(c)
        }
        Eng::Strata => Some(strata_query(
            o,
            db,
            &case.count_program(),
            &["--no-witnesses", "--json"],
        )),
    }
}

/// Runs `cmd` once through [`measure::run`] and reads its count with `count`.
pub fn measured(
    cmd: &mut Command,
    timeout: Duration,
    count: impl Fn(&str) -> Option<u64>,
) -> Result<(Run, u64), String> {
    let run = measure::run(cmd, timeout).map_err(|e| e.to_string())?;
    match count(&run.stdout) {
        Some(n) => Ok((run, n)),
        None => Err(format!("no count in its output: {:?}", run.stdout.trim())),
    }
}

/// One case's table row.
struct Row {
    case: Case,
    label: String,
    runs: Vec<(Eng, Runs)>,
}

/// Generates the case's input, writes it, ingests it into a store (untimed), and runs every
/// engine `runs` times, round-robin.
fn run_case(o: &Opts, root: &Path, case: Case) -> BenchResult<Row> {
    let dir = root.join(case.name());
    std::fs::create_dir_all(&dir)?;
    let file = dir.join(format!("{}.facts", case.relation()));
    eprintln!("sidebyside: {}: writing {}", case.name(), file.display());
    let label = write_input(o, case, &file)?;
    let db = dir.join("db");
    if db.exists() {
        std::fs::remove_dir_all(&db)?;
    }
    let mut ingest = Command::new(&o.strata);
    ingest.arg("ingest").arg(&db).arg(&file);
    measure::run(&mut ingest, o.timeout).map_err(|e| format!("strata ingest: {e}"))?;
    let mut runs: Vec<(Eng, Runs)> = Eng::ALL.iter().map(|&e| (e, Runs::default())).collect();
    for (eng, r) in &mut runs {
        if command(o, *eng, case, &file, &db).is_none() {
            r.skipped = Some(match eng {
                Eng::DuckDb => o.duck.clone().err().unwrap_or_default(),
                _ => "none for this workload".to_owned(),
            });
        }
    }
    for round in 0..o.runs {
        eprintln!(
            "sidebyside: {}: round {} of {}",
            case.name(),
            round + 1,
            o.runs
        );
        for (eng, r) in &mut runs {
            if r.failed.is_some() || r.skipped.is_some() {
                continue;
            }
            let Some(mut cmd) = command(o, *eng, case, &file, &db) else {
                continue;
            };
            let got = if *eng == Eng::Strata {
                measured(&mut cmd, o.timeout, strata_count)
            } else {
                measured(&mut cmd, o.timeout, last_number)
            };
            match got {
                Ok(m) => r.ok.push(m),
                Err(e) => r.failed = Some(e),
            }
        }
    }
    Ok(Row { case, label, runs })
}

/// Writes `case`'s input to `file` in a child (`--child write`); its label.
pub fn write_input(o: &Opts, case: Case, file: &Path) -> BenchResult<String> {
    let out = Command::new(std::env::current_exe()?)
        .args(["--child", "write", case.name(), &size_name(o.size)])
        .arg(o.seed.to_string())
        .arg(file)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "writing {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn cell(r: &Runs) -> String {
    match (r.best(), &r.failed, &r.skipped) {
        (_, Some(_), _) => "failed".to_owned(),
        (_, _, Some(_)) => "–".to_owned(),
        (Some(b), _, _) if b.wall < 0.1 => format!("{:.3} / {:.0}", b.wall, mb(b.rss_kib)),
        (Some(b), _, _) => format!("{:.2} / {:.0}", b.wall, mb(b.rss_kib)),
        (None, _, _) => "–".to_owned(),
    }
}

/// What the count table found: whether every count agreed, and each case's ratios.
pub struct Verdicts {
    /// Every engine agreed on every count and none failed.
    pub agree: bool,
    /// Per case: Strata over the best other, and over the floor (where there is one).
    pub ratios: Vec<(Case, Option<f64>, Option<f64>)>,
}

fn print_counts(rows: &[Row]) -> Verdicts {
    println!(
        "| workload | answers | floor (BFS) | datafrog | ascent | DuckDB | Strata | Strata ÷ \
         best other | x floor |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut v = Verdicts {
        agree: true,
        ratios: Vec::new(),
    };
    let mut notes = Vec::new();
    for row in rows {
        let get = |e: Eng| row.runs.iter().find(|(x, _)| *x == e).map(|(_, r)| r);
        let counts: Vec<u64> = row
            .runs
            .iter()
            .flat_map(|(_, r)| r.ok.iter().map(|&(_, n)| n))
            .collect();
        let agree = counts.windows(2).all(|w| w[0] == w[1]) && !counts.is_empty();
        let failed = row.runs.iter().any(|(_, r)| r.failed.is_some());
        v.agree &= agree && !failed;
        let best_of = |e: Eng| get(e).and_then(Runs::best).map(|b| b.wall);
        let strata = best_of(Eng::Strata);
        let best_other = [Eng::Datafrog, Eng::Ascent, Eng::DuckDb]
            .into_iter()
            .filter_map(best_of)
            .min_by(f64::total_cmp);
        let floor = best_of(Eng::Floor);
        let ratio = strata.zip(best_other).map(|(s, b)| s / b);
        let x_floor = strata.zip(floor).map(|(s, f)| s / f);
        v.ratios.push((row.case, ratio, x_floor));
        let answers = counts.first().map_or("?".to_owned(), |&n| thousands(n));
        let cells: Vec<String> = Eng::ALL
            .iter()
            .map(|&e| get(e).map_or("–".to_owned(), cell))
            .collect();
        println!(
            "| {} | {answers}{} | {} | {:.2}x | {} |",
            row.label,
            if agree { "" } else { " **DIFFER**" },
            cells.join(" | "),
            ratio.unwrap_or(f64::NAN),
            x_floor.map_or("–".to_owned(), |x| format!("{x:.1}x")),
        );
        for (e, r) in &row.runs {
            if let Some(why) = &r.failed {
                notes.push(format!("{}, {}: failed: {why}", row.label, e.name()));
            }
        }
    }
    println!();
    println!("Each cell: the best run's wall seconds / its peak RSS in MB.");
    println!();
    println!("| workload | engine | best s | median s | CPU s (best run) | peak MB | runs |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for row in rows {
        for (e, r) in &row.runs {
            if let (Some(b), Some(m)) = (r.best(), r.median()) {
                println!(
                    "| {} | {} | {:.3} | {m:.3} | {:.3} | {:.0} | {} |",
                    row.case.name(),
                    e.name(),
                    b.wall,
                    b.cpu,
                    mb(b.rss_kib),
                    r.ok.len()
                );
            }
        }
    }
    println!();
    for n in notes {
        println!("{n}");
    }
    v
}

fn main_inner() -> BenchResult<bool> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        child(&args[1..])?;
        return Ok(true);
    }
    let o = parse(&args)?;
    let size = size_name(o.size);
    let root = data_root().join(format!("sidebyside-{size}-seed-{}", o.seed));
    std::fs::create_dir_all(&root)?;
    println!(
        "# sidebyside: {size} inputs, seed {}, {} runs each, {}; load average at start {}",
        o.seed,
        o.runs,
        o.strata.display(),
        loadavg()
    );
    match &o.duck {
        Ok(py) => println!("DuckDB {} ({})", duck::version(py), py.display()),
        Err(why) => println!("DuckDB: skipped ({why})"),
    }
    println!();
    let mut rows = Vec::new();
    let mut loads = Vec::new();
    for &case in &o.only {
        rows.push(run_case(&o, &root, case)?);
        loads.push(format!("{}: {}", case.name(), loadavg()));
    }
    let v = print_counts(&rows);
    println!("load average after each workload: {}", loads.join("; "));
    println!();
    if !v.agree {
        eprintln!("sidebyside: engines disagree on a count, or one failed (see above)");
        return Ok(false);
    }
    if o.counts_only {
        return Ok(true);
    }
    let ingest = ingest::ingest_rows(&o, &root)?;
    println!("load average after the ingest rows: {}", loadavg());
    println!();
    let pages = ingest::page_rows(&o, &root)?;
    println!("load average after the page rows: {}", loadavg());
    println!();
    ingest::print_targets(&v, &ingest, &pages);
    println!();
    println!(
        "This process's own peak RSS: {:.0} MB (a child's peak reads at least what this \
         process held when it was spawned).",
        mb(peak_rss_kib().unwrap_or(0))
    );
    Ok(ingest.ok && pages.ok)
}

fn main() -> ExitCode {
    match main_inner() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("sidebyside: {e}");
            ExitCode::FAILURE
        }
    }
}

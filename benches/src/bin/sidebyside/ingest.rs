//! The ingest rows (`strata ingest` beside DuckDB loading the same TSV into a `.duckdb`
//! file), the first-page rows (a closure's first page with witnesses beside its count), and
//! the targets of issue 31 judged on what the suite measured.

use std::path::{Path, PathBuf};
use std::process::Command;

use strata_benches::BenchResult;
use strata_benches::sidebyside::measure::{self, Run};
use strata_benches::sidebyside::{Case, Size, bytes_under, duck};

use crate::{Opts, Verdicts, mb, measured, strata_count, strata_query, write_input};

/// Several processes in turn as one measure: their wall and CPU times summed, the highest
/// peak RSS.
fn sequence(cmds: &mut [Command], o: &Opts) -> BenchResult<Run> {
    let mut total: Option<Run> = None;
    for c in cmds {
        let r = measure::run(c, o.timeout)?;
        total = Some(match total {
            None => r,
            Some(t) => Run {
                wall: t.wall + r.wall,
                cpu: t.cpu + r.cpu,
                rss_kib: t.rss_kib.max(r.rss_kib),
                stdout: t.stdout + &r.stdout,
                stderr: t.stderr + &r.stderr,
            },
        });
    }
    total.ok_or_else(|| "no command".into())
}

/// The best of `runs` runs of `make`'s commands (made afresh each run, after `reset`), and
/// the bytes `target` holds after the last.
fn best_of(
    o: &Opts,
    runs: usize,
    target: &Path,
    make: &dyn Fn() -> Vec<Command>,
) -> BenchResult<Loaded> {
    let mut best: Option<Run> = None;
    for _ in 0..runs {
        reset(target)?;
        let r = sequence(&mut make(), o)?;
        if best.as_ref().is_none_or(|b| r.wall < b.wall) {
            best = Some(r);
        }
    }
    let bytes = bytes_under(target) + bytes_under(&target.with_extension("duckdb.wal"));
    Ok((best.ok_or("no run")?, bytes))
}

fn reset(target: &Path) -> BenchResult<()> {
    if target.is_dir() {
        std::fs::remove_dir_all(target)?;
    } else if target.exists() {
        std::fs::remove_file(target)?;
    }
    let wal = target.with_extension("duckdb.wal");
    if wal.exists() {
        std::fs::remove_file(wal)?;
    }
    Ok(())
}

/// A load's best run and the bytes of the file it left.
pub type Loaded = (Run, u64);

/// What the ingest rows measured: per input, Strata's and DuckDB's best run and file bytes.
pub struct Ingest {
    /// Each input's label, Strata's load and DuckDB's, when it ran.
    pub rows: Vec<(String, Loaded, Option<Loaded>)>,
    /// Whether every ingest succeeded.
    pub ok: bool,
}

/// The string dump and its nodes, written by a child (`--child strings`): the code-graph
/// generator's edges (`src, KIND, dst`) and a `*.nodes.tsv` of their nodes; the nodes.
fn string_inputs(o: &Opts, dir: &Path) -> BenchResult<(PathBuf, PathBuf, u64)> {
    let edges_n: u64 = match o.size {
        Size::Full => 1_420_000,
        _ => 100_000,
    };
    std::fs::create_dir_all(dir)?;
    let out = Command::new(std::env::current_exe()?)
        .args([
            "--child",
            "strings",
            &edges_n.to_string(),
            &o.seed.to_string(),
        ])
        .arg(dir)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "writing the string edges: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let n = String::from_utf8_lossy(&out.stdout).trim().parse()?;
    Ok((dir.join("code.edges.tsv"), dir.join("code.nodes.tsv"), n))
}

/// `strata ingest`, then DuckDB's load of the same files, for each ingest input.
pub fn ingest_rows(o: &Opts, root: &Path) -> BenchResult<Ingest> {
    let dir = root.join("ingest");
    let (edges, nodes, n_nodes) = string_inputs(o, &dir)?;
    let ints = root.join(Case::Reach.name()).join("e.facts");
    if !ints.is_file() {
        std::fs::create_dir_all(root.join(Case::Reach.name()))?;
        write_input(o, Case::Reach, &ints)?;
    }
    let n_edges = count_lines(&edges)?;
    let n_ints = count_lines(&ints)?;
    let str_cols = [("src", "VARCHAR"), ("kind", "VARCHAR"), ("dst", "VARCHAR")];
    let edges_t = duck::Table::new("edges", &edges, &str_cols);
    let nodes_t = duck::Table::new("nodes", &nodes, &[("id", "VARCHAR"), ("label", "VARCHAR")]);
    let ints_t = duck::Table::new("e", &ints, &[("a", "INTEGER"), ("b", "INTEGER")]);
    // Each input: its label, the files of each Strata batch, the tables of each DuckDB load,
    // and the flags of each Strata batch.
    type Batches<'a> = Vec<Vec<&'a Path>>;
    type Input<'a> = (String, Batches<'a>, Vec<Vec<duck::Table>>, &'a [&'a str]);
    let inputs: Vec<Input<'_>> = vec![
        (
            format!(
                "{} string edges (code graph), one batch",
                thousands(n_edges)
            ),
            vec![vec![edges.as_path()]],
            vec![vec![edges_t.clone()]],
            &[],
        ),
        // By default a `.facts` relation this large gets postings for its first column,
        // and for its second when a query first looks it up by it (`on_demand`).
        (
            format!(
                "{} integer pairs (the reach graph), one batch (the second column indexed on \
                 demand)",
                thousands(n_ints)
            ),
            vec![vec![ints.as_path()]],
            vec![vec![ints_t.clone()]],
            &[],
        ),
        // The same pairs against DuckDB building the same indexes: what an index costs
        // it, beside the plain load the row above compares with.
        (
            format!(
                "{} integer pairs, both columns indexed (`--index e=c1,c2`; DuckDB: an index \
                 on each column)",
                thousands(n_ints)
            ),
            vec![vec![ints.as_path()]],
            vec![vec![ints_t.clone().with_indexes(&["a", "b"])]],
            &["--index", "e=c1,c2"],
        ),
        (
            format!(
                "{} integer pairs, the first column indexed (DuckDB: an index on it)",
                thousands(n_ints)
            ),
            vec![vec![ints.as_path()]],
            vec![vec![ints_t.with_indexes(&["a"])]],
            &[],
        ),
        (
            format!(
                "the edges, then their {} nodes: two batches (DuckDB: two loads)",
                thousands(n_nodes)
            ),
            vec![vec![edges.as_path()], vec![nodes.as_path()]],
            vec![vec![edges_t.clone()], vec![nodes_t.clone()]],
            &[],
        ),
        (
            "the edges and nodes, one batch (DuckDB: one load of two tables)".to_owned(),
            vec![vec![edges.as_path(), nodes.as_path()]],
            vec![vec![edges_t, nodes_t]],
            &[],
        ),
    ];
    let runs = o.runs.min(3);
    let db = dir.join("db");
    let duckfile = dir.join("load.duckdb");
    let mut out = Ingest {
        rows: Vec::new(),
        ok: true,
    };
    println!(
        "| input | Strata s | Strata peak MB | Strata file MB | DuckDB s | DuckDB peak MB | \
         DuckDB file MB | time ÷ DuckDB | memory ÷ DuckDB | file ÷ DuckDB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (label, batches, loads, flags) in &inputs {
        eprintln!("sidebyside: ingest: {label}");
        let strata = best_of(o, runs, &db, &|| {
            batches
                .iter()
                .map(|files| {
                    let mut c = Command::new(&o.strata);
                    c.arg("ingest")
                        .arg(&db)
                        .args(files.iter())
                        .args(flags.iter());
                    c
                })
                .collect()
        });
        let strata = match strata {
            Ok(s) => s,
            Err(e) => {
                out.ok = false;
                println!("| {label} | failed: {e} | | | | | | | | |");
                continue;
            }
        };
        let duckdb = match &o.duck {
            Ok(py) => match best_of(o, runs, &duckfile, &|| {
                loads
                    .iter()
                    .map(|tables| {
                        let mut c = Command::new(py);
                        c.arg("-c").arg(duck::load_script(&duckfile, tables));
                        c
                    })
                    .collect()
            }) {
                Ok(d) => Some(d),
                Err(e) => {
                    out.ok = false;
                    println!("| {label} | | | | DuckDB failed: {e} | | | | | |");
                    None
                }
            },
            Err(_) => None,
        };
        let (s, sb) = &strata;
        let d = duckdb.as_ref().map_or_else(
            || "– | – | – | – | – | –".to_owned(),
            |(d, db_bytes)| {
                format!(
                    "{:.2} | {:.0} | {:.1} | {:.2}x | {:.2}x | {:.2}x",
                    d.wall,
                    mb(d.rss_kib),
                    *db_bytes as f64 / 1e6,
                    s.wall / d.wall,
                    s.rss_kib as f64 / d.rss_kib as f64,
                    *sb as f64 / *db_bytes as f64
                )
            },
        );
        println!(
            "| {label} | {:.2} | {:.0} | {:.1} | {d} |",
            s.wall,
            mb(s.rss_kib),
            *sb as f64 / 1e6
        );
        out.rows.push((label.clone(), strata, duckdb));
    }
    println!();
    println!(
        "Best of {runs} runs each (a fresh database each run); Strata's file is the database \
         directory's bytes, DuckDB's the .duckdb file after a checkpoint (columns typed as \
         above: VARCHAR, INTEGER; no index but where a row says so, an ART index built \
         after the load)."
    );
    println!();
    Ok(out)
}

/// The lines of `path`, read in blocks (this process stays small: see `child`).
fn count_lines(path: &Path) -> BenchResult<u64> {
    let mut input = std::fs::File::open(path)?;
    let mut block = vec![0u8; 1 << 16];
    let mut lines = 0u64;
    loop {
        let n = std::io::Read::read(&mut input, &mut block)?;
        if n == 0 {
            return Ok(lines);
        }
        lines += block[..n].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

fn thousands(n: u64) -> String {
    strata_benches::sidebyside::thousands(n)
}

/// What the page rows measured: per closure, the count's best run and the page's.
pub struct Pages {
    /// Each closure's label, the count's best run and the first page's.
    pub rows: Vec<(String, Run, Run)>,
    /// Whether every run succeeded and each page's total was the count.
    pub ok: bool,
}

/// The total and the rows of a `--json` page.
fn page_total(out: &str) -> Option<(u64, usize)> {
    let v: serde_json::Value = serde_json::from_str(out).ok()?;
    Some((v.get("total")?.as_u64()?, v.get("rows")?.as_array()?.len()))
}

/// The first page of 20 pairs of each closure the count table ran, with witnesses, beside
/// its count without them; the two alternate, `runs` times each.
pub fn page_rows(o: &Opts, root: &Path) -> BenchResult<Pages> {
    let mut out = Pages {
        rows: Vec::new(),
        ok: true,
    };
    println!(
        "| closure | count s | count peak MB | first page s | first page peak MB | time ÷ \
         count | memory ÷ count |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for &case in o.only.iter().filter(|c| c.is_closure()) {
        let db = root.join(case.name()).join("db");
        eprintln!("sidebyside: pages: {}", case.name());
        let mut count: Option<(Run, u64)> = None;
        let mut page: Option<Run> = None;
        let mut failed = None;
        for _ in 0..o.runs {
            let mut c = strata_query(o, &db, &case.count_program(), &["--no-witnesses", "--json"]);
            match measured(&mut c, o.timeout, strata_count) {
                Ok((r, n)) if count.as_ref().is_none_or(|(b, _)| r.wall < b.wall) => {
                    count = Some((r, n))
                }
                Ok(_) => {}
                Err(e) => failed = Some(format!("count: {e}")),
            }
            let program = format!("{} tc(?x, ?y) => ?x, ?y", case.rules());
            let mut p = strata_query(o, &db, &program, &["--limit", "20", "--json"]);
            match measure::run(&mut p, o.timeout) {
                Ok(r) => {
                    let expect = count.as_ref().map(|&(_, n)| n);
                    match page_total(&r.stdout) {
                        Some((total, 20)) if Some(total) == expect => {
                            if page.as_ref().is_none_or(|b| r.wall < b.wall) {
                                page = Some(r);
                            }
                        }
                        got => {
                            failed = Some(format!(
                                "the page answered (total, rows) {got:?}, the count {expect:?}"
                            ))
                        }
                    }
                }
                Err(e) => failed = Some(format!("page: {e}")),
            }
            if failed.is_some() {
                break;
            }
        }
        let label = case.name().to_owned();
        match (count, page, failed) {
            (Some((c, _)), Some(p), None) => {
                println!(
                    "| {} | {:.2} | {:.0} | {:.2} | {:.0} | {:.2}x | {:.2}x |",
                    case.name(),
                    c.wall,
                    mb(c.rss_kib),
                    p.wall,
                    mb(p.rss_kib),
                    p.wall / c.wall,
                    p.rss_kib as f64 / c.rss_kib as f64
                );
                out.rows.push((label, c, p));
            }
            (_, _, why) => {
                out.ok = false;
                println!(
                    "| {} | failed: {} | | | | | |",
                    case.name(),
                    why.unwrap_or_default()
                );
            }
        }
    }
    println!();
    println!(
        "The count: `RULES tc(?x, ?y) => count(?y)` with `--no-witnesses`; the first page: \
         `RULES tc(?x, ?y) => ?x, ?y` with `--limit 20` and witnesses (its total checked to be \
         the count). Both `--json`, best of {} alternating runs.",
        o.runs
    );
    println!();
    Ok(out)
}

/// Issue 31's targets, each met or missed by what the suite measured.
pub fn print_targets(v: &Verdicts, ingest: &Ingest, pages: &Pages) {
    println!("| target | measured | met |");
    println!("|---|---|---|");
    let yes = |ok: bool| if ok { "yes" } else { "**no**" };
    for &(case, ratio, x_floor) in &v.ratios {
        if let Some(r) = ratio {
            println!(
                "| {}: Strata ≤ 0.8x the best other | {r:.2}x | {} |",
                case.name(),
                yes(r <= 0.8)
            );
        }
        if let Some(x) = x_floor {
            let limit = if case == Case::Chain { 10.0 } else { 4.0 };
            println!(
                "| {}: within {limit:.0}x of the BFS floor | {x:.1}x | {} |",
                case.name(),
                yes(x <= limit)
            );
        }
    }
    for (label, (s, sb), d) in &ingest.rows {
        let Some((d, db)) = d else { continue };
        let (t, m, f) = (
            s.wall / d.wall,
            s.rss_kib as f64 / d.rss_kib as f64,
            *sb as f64 / *db as f64,
        );
        println!(
            "| {label}: ingest no slower than DuckDB's load, no more memory | {t:.2}x, {m:.2}x \
             | {} |",
            yes(t <= 1.0 && m <= 1.0)
        );
        println!(
            "| {label}: file ≤ 1.5x DuckDB's | {f:.2}x | {} |",
            yes(f <= 1.5)
        );
    }
    for (label, c, p) in &pages.rows {
        let (t, m) = (p.wall / c.wall, p.rss_kib as f64 / c.rss_kib as f64);
        println!(
            "| {label}: first page with witnesses within 1.3x the count's time and memory | \
             {t:.2}x, {m:.2}x | {} |",
            yes(t <= 1.3 && m <= 1.3)
        );
    }
}

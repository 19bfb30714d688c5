//! Workloads for Strata's benchmarks: generated dumps cached on disk, stores built from them,
//! the two floor programs the ingest targets are measured against, and lookup samples.
//!
//! - [`dumps`] materialises the code-graph generator's string edge dump, attribute dump and
//!   numeric `edge.facts` (the same graph) for one size and seed, once, under
//!   `target/bench-data/` (or `$STRATA_BENCH_DATA`).
//! - [`ingest_file`] is the real thing: open (create) a store, one batch, one dump, commit.
//! - [`parse_and_intern_floor`] and [`redb_write_floor`] are the floors: what reading and
//!   interning a string dump costs with nothing stored, and what one durable redb commit of the
//!   numeric edge pairs costs with nothing else done.
//! - [`LookupSample`] picks existing terms of a stored relation to look up, and
//!   [`lookup_count`] runs one lookup.
//!
//! - [`workload`]: the engine workloads (closure, same generation, points-to, chains and
//!   trees, bound reachability), seeded and sized by a [`workload::Scale`], as fact files.
//! - [`engines`]: each workload through Strata, datafrog, ascent, crepe, a BFS and Soufflé.
//! - [`mcp`]: an MCP client of `strata serve` (the example database, a stdio session).
//! - [`sidebyside`]: issue 31's workloads as TSV, each engine a whole child process measured
//!   from outside (the `sidebyside` binary).
//!
//! The criterion benches (`benches/ingest.rs`, `lookup.rs`, `engine.rs`, `mcp.rs`) and the
//! `ingest-report`, `mcp-bench` and `compare` binaries are built on these.

pub mod engines;
pub mod mcp;
pub mod sidebyside;
pub mod workload;

use std::error::Error;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, BufWriter};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use redb::{Database, TableDefinition};
use rustc_hash::FxHashMap;
use strata_eval::{FactSource, Term, Value};
use strata_fixtures::codegraph::{self, Config};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, BatchSummary, OpenOptions, Store};

/// Errors of the bench helpers: I/O, store, redb and fact-source errors, boxed.
pub type BenchError = Box<dyn Error + Send + Sync>;

/// A result of the bench helpers.
pub type BenchResult<T> = Result<T, BenchError>;

/// The seed every bench uses unless told otherwise.
pub const DEFAULT_SEED: u64 = 0;

/// Edge count of the default (quick) criterion ingest benches.
pub const SMALL_EDGES: u64 = 1_000_000;

/// Edge count of the large runs (`STRATA_BENCH_LARGE=1`, and `ingest-report`'s default).
pub const LARGE_EDGES: u64 = 10_000_000;

/// File name of the string edge dump inside a dump directory.
pub const EDGES_FILE: &str = "code.edges.tsv";
/// File name of the attribute dump inside a dump directory.
pub const ATTRS_FILE: &str = "code.attrs.tsv";
/// File name of the numeric edge list inside a dump directory (relation `edge`).
pub const FACTS_FILE: &str = "edge.facts";

/// Whether the 10M-edge workloads are asked for: the `large` feature, or
/// `STRATA_BENCH_LARGE` set (to anything but `0`).
pub fn large() -> bool {
    cfg!(feature = "large")
        || std::env::var_os("STRATA_BENCH_LARGE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The edge count the criterion benches use: [`SMALL_EDGES`], or [`LARGE_EDGES`] when
/// [`large`].
pub fn bench_edges() -> u64 {
    if large() { LARGE_EDGES } else { SMALL_EDGES }
}

/// Where generated dumps are cached: `$STRATA_BENCH_DATA`, else `$CARGO_TARGET_DIR/bench-data`,
/// else the workspace's `target/bench-data`.
pub fn data_root() -> PathBuf {
    if let Some(d) = std::env::var_os("STRATA_BENCH_DATA") {
        return PathBuf::from(d);
    }
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(t).join("bench-data");
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("target")
        .join("bench-data")
}

/// The dump files of one generated code graph.
#[derive(Clone, Debug)]
pub struct Dumps {
    /// The directory holding them.
    pub dir: PathBuf,
    /// `code.edges.tsv`: `src<TAB>KIND<TAB>dst`, string ids (`file:…`, `sym:…#…`).
    pub edges: PathBuf,
    /// `code.attrs.tsv`: `node<TAB>key<TAB>value` of the same nodes.
    pub attrs: PathBuf,
    /// `edge.facts`: the same edges as `a<TAB>b` u32 node numbers.
    pub facts: PathBuf,
}

impl Dumps {
    /// The dumps of a directory that already holds them (`ingest-report --data DIR`, or the
    /// output of `gen-codegraph` run twice, with and without `--numeric`).
    pub fn existing(dir: &Path) -> BenchResult<Dumps> {
        let d = Dumps::at(dir);
        for p in [&d.edges, &d.facts] {
            if !p.is_file() {
                return Err(format!("{} is missing", p.display()).into());
            }
        }
        Ok(d)
    }

    fn at(dir: &Path) -> Dumps {
        Dumps {
            dir: dir.to_owned(),
            edges: dir.join(EDGES_FILE),
            attrs: dir.join(ATTRS_FILE),
            facts: dir.join(FACTS_FILE),
        }
    }
}

/// The dumps of `Config::with_edges(edges).seed(seed)`, generated into
/// `data_root()/edges-EDGES-seed-SEED/` on the first call and reused after.
pub fn dumps(edges: u64, seed: u64) -> BenchResult<Dumps> {
    dumps_in(&data_root(), edges, seed)
}

/// As [`dumps`], cached under `root` instead of [`data_root`].
pub fn dumps_in(root: &Path, edges: u64, seed: u64) -> BenchResult<Dumps> {
    let dir = root.join(format!("edges-{edges}-seed-{seed}"));
    fs::create_dir_all(&dir)?;
    let d = Dumps::at(&dir);
    let cfg = Config::with_edges(edges).seed(seed);
    materialise(&d.edges, |w| codegraph::write_edges(&cfg, w).map(drop))?;
    materialise(&d.attrs, |w| codegraph::write_attrs(&cfg, w).map(drop))?;
    materialise(&d.facts, |w| {
        codegraph::write_numeric_facts(&cfg, w).map(drop)
    })?;
    Ok(d)
}

/// Writes `path` with `write` unless it exists; writes a temporary file and renames it, so a
/// file that exists is complete even when two processes generate at once.
fn materialise(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> BenchResult<()> {
    if path.is_file() {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut w = BufWriter::new(File::create(&tmp)?);
    write(&mut w)?;
    w.into_inner().map_err(io::IntoInnerError::into_error)?;
    fs::rename(&tmp, path)?;
    Ok(())
}

/// The spec of a string edge dump (`*.edges.tsv`).
pub fn edges_spec(path: &Path) -> DumpSpec {
    DumpSpec {
        label: path.display().to_string(),
        format: Format::Edges,
        relation: None,
        unit: None,
        checkout: None,
    }
}

/// The spec of a Soufflé-style fact file, holding the relation its name gives (`edge`).
pub fn facts_spec(path: &Path) -> DumpSpec {
    DumpSpec {
        label: path.display().to_string(),
        format: Format::Facts,
        relation: strata_store::dump::facts_relation(path),
        unit: None,
        checkout: None,
    }
}

/// Opens the store in `dir`, creating it if needed, with the store's default options.
pub fn open_store(dir: &Path) -> BenchResult<Store> {
    Ok(Store::open(
        dir,
        OpenOptions {
            create: true,
            ..OpenOptions::default()
        },
    )?)
}

/// A database of the generated code graph of `edges` edges (seed `seed`, the string edge
/// dump), built in a new temporary directory: the directory (removed when dropped) and the
/// database's path in it.
pub fn code_graph_db(edges: u64, seed: u64) -> BenchResult<(tempfile::TempDir, PathBuf)> {
    let d = dumps(edges, seed)?;
    let tmp = tempfile::tempdir()?;
    let db = tmp.path().join("db");
    ingest_file(&db, &d.edges, &edges_spec(&d.edges))?;
    Ok((tmp, db))
}

/// The real ingest: opens (creates) the store in `db`, reads `path` as `spec` into one
/// default batch and commits it (durably, every index written).
pub fn ingest_file(db: &Path, path: &Path, spec: &DumpSpec) -> BenchResult<BatchSummary> {
    Ok(ingest_file_timed(db, path, spec)?.summary)
}

/// What [`ingest_file_timed`] did, and how long each step took.
#[derive(Clone, Debug)]
pub struct Ingested {
    /// The batch's summary.
    pub summary: BatchSummary,
    /// `Store::open` (creating the database) and `Store::batch`.
    pub open: Duration,
    /// `Batch::read_file`: reading, parsing and interning the dump.
    pub read: Duration,
    /// `Batch::commit`: sorting, writing every column, index and the dictionary, and the
    /// durable commit.
    pub commit: Duration,
}

/// [`ingest_file`], timing its steps.
pub fn ingest_file_timed(db: &Path, path: &Path, spec: &DumpSpec) -> BenchResult<Ingested> {
    let t = Instant::now();
    let store = open_store(db)?;
    let mut batch = store.batch(BatchOptions::default())?;
    let open = t.elapsed();
    let t = Instant::now();
    batch.read_file(path, spec)?;
    let read = t.elapsed();
    let t = Instant::now();
    let summary = batch.commit()?;
    Ok(Ingested {
        summary,
        open,
        read,
        commit: t.elapsed(),
    })
}

/// The parse-and-intern floor: reads a string edge dump line by line (64 KiB buffered
/// reader, one reused line buffer, UTF-8 checked), splits each line on tabs, and interns its
/// src, kind and dst into one `rustc_hash::FxHashMap<Box<str>, u32>` (a lookup by `&str`
/// first, so only a new text allocates), keeping every row as three ids in a `Vec`.
/// Blank lines are skipped; a line without three fields is an error. Returns the rows read
/// and the distinct texts.
///
/// This is what any ingest of a string dump must do at least, with nothing stored: no
/// number detection, no escapes, no index, no disk writes.
pub fn parse_and_intern_floor(path: &Path) -> io::Result<(u64, u64)> {
    let mut input = BufReader::with_capacity(1 << 16, File::open(path)?);
    let mut ids: FxHashMap<Box<str>, u32> = FxHashMap::default();
    let mut rows: Vec<[u32; 3]> = Vec::new();
    let mut line = Vec::with_capacity(256);
    let mut intern = |s: &str| -> u32 {
        if let Some(&id) = ids.get(s) {
            return id;
        }
        let id = ids.len() as u32;
        ids.insert(s.into(), id);
        id
    };
    let mut line_no = 0u64;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        line_no += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        let text = std::str::from_utf8(&line).map_err(|e| bad_line(path, line_no, &e))?;
        let mut fields = text.split('\t');
        let (Some(src), Some(kind), Some(dst)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(bad_line(path, line_no, &"fewer than three fields"));
        };
        rows.push([intern(src), intern(kind), intern(dst)]);
    }
    let distinct = ids.len() as u64;
    Ok((std::hint::black_box(rows).len() as u64, distinct))
}

fn bad_line(path: &Path, line: u64, what: &dyn std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}:{line}: {what}", path.display()),
    )
}

/// Reads a two-column numeric fact file (`a<TAB>b` u32s) into pairs, in file order.
pub fn read_pairs(path: &Path) -> io::Result<Vec<(u32, u32)>> {
    let mut input = BufReader::with_capacity(1 << 16, File::open(path)?);
    let mut pairs = Vec::new();
    let mut line = Vec::with_capacity(64);
    let mut line_no = 0u64;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        line_no += 1;
        let text = std::str::from_utf8(&line).map_err(|e| bad_line(path, line_no, &e))?;
        let text = text.trim_end();
        if text.is_empty() {
            continue;
        }
        let parsed = text
            .split_once('\t')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
        match parsed {
            Some(p) => pairs.push(p),
            None => return Err(bad_line(path, line_no, &"not two u32 fields")),
        }
    }
    Ok(pairs)
}

/// The table [`redb_write_floor`] writes.
const FLOOR_PAIRS: TableDefinition<'_, (u32, u32), ()> = TableDefinition::new("pairs");

/// The redb write floor: creates a redb file at `path` (with the store's default page cache
/// size), and in one durable write transaction inserts every pair as a `(u32, u32)` key with
/// a `()` value into one table, in the order given, then commits.
pub fn redb_write_floor(pairs: &[(u32, u32)], path: &Path) -> Result<(), redb::Error> {
    let mut builder = Database::builder();
    builder.set_cache_size(strata_store::DEFAULT_CACHE_BYTES);
    let db = builder.create(path)?;
    let txn = db.begin_write()?;
    {
        let mut table = txn.open_table(FLOOR_PAIRS)?;
        for &p in pairs {
            table.insert(p, ())?;
        }
    }
    txn.commit()?;
    Ok(())
}

/// Existing terms and texts of one relation, to look up.
#[derive(Clone, Debug, Default)]
pub struct LookupSample {
    /// Distinct first-column terms, spread over the relation.
    pub src: Vec<Term>,
    /// Whole stored rows `(c0, c1)`, one per sampled first-column term.
    pub pairs: Vec<(Term, Term)>,
    /// The texts of the sampled first-column terms.
    pub texts: Vec<String>,
}

impl LookupSample {
    /// Up to `n` distinct first-column values of `relation` (arity 2 or more), spread evenly
    /// over its rows, with one stored row each and the text each stands for.
    pub fn take(snap: &impl FactSource, relation: &str, n: usize) -> BenchResult<LookupSample> {
        let info = snap
            .relation(relation)?
            .ok_or_else(|| format!("no relation \"{relation}\""))?;
        if info.arity() < 2 {
            return Err(format!("relation \"{relation}\" has fewer than two columns").into());
        }
        let stride = (info.rows / n.max(1) as u64).max(1);
        let mut sample = LookupSample::default();
        let mut seen = rustc_hash::FxHashSet::default();
        let mut i = 0u64;
        snap.scan(relation, &mut |row| {
            if i.is_multiple_of(stride) && seen.insert(row[0]) {
                sample.src.push(row[0]);
                sample.pairs.push((row[0], row[1]));
            }
            i += 1;
            if sample.src.len() >= n {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        for &t in &sample.src {
            match snap.value(t)? {
                Value::Text(s) => sample.texts.push(s),
                other => sample.texts.push(format!("{other:?}")),
            }
        }
        Ok(sample)
    }
}

/// Runs one lookup of `relation` with `bound` and returns how many rows it visited.
pub fn lookup_count(
    snap: &impl FactSource,
    relation: &str,
    bound: &[(usize, Term)],
) -> BenchResult<u64> {
    let mut n = 0u64;
    snap.lookup(relation, bound, &mut |row| {
        std::hint::black_box(row);
        n += 1;
        ControlFlow::Continue(())
    })?;
    Ok(n)
}

/// The names `find-bench` and `scale-bench` look up by default, of several kinds (an exact
/// symbol name, words of one, a misspelling, a path part, a long phrase, a short string):
/// on the code-graph generator's names (`sym:...#parse_entry_3`).
pub const FIND_NAMES: &[&str] = &[
    "parse_entry_3",
    "parse entry",
    "prase_entry",
    "lexer table",
    "sync_0/src/http",
    "the config loader of the http client",
    "zq",
];

/// The CPU time this process has used so far (user and system, all its threads, those
/// ended included) in seconds, from `getrusage`; unlike wall time it does not grow when
/// other programs share the cores.
pub fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` writes a `rusage` through the pointer, which points to one
    // (zeroed, so valid whatever it leaves); on failure the zeroes read as no time.
    #[allow(unsafe_code)]
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// This process's peak resident set size in KiB (`VmHWM` of `/proc/self/status`), where
/// the kernel reports it.
pub fn peak_rss_kib() -> Option<u64> {
    status_kib("VmHWM:")
}

/// This process's resident set size now in KiB (`VmRSS` of `/proc/self/status`), where the
/// kernel reports it.
pub fn rss_kib() -> Option<u64> {
    status_kib("VmRSS:")
}

fn status_kib(field: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}

/// The median of `v` (sorted in place); 0 for an empty slice.
pub fn median(v: &mut [f64]) -> f64 {
    percentile(v, 50.0)
}

/// The `p`th percentile of `v` (nearest rank, sorted in place); 0 for an empty slice.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Runs this bench binary again as `BIN --child ARGS...` (a measure in a process of its own,
/// so its peak RSS and CPU time are its own) and answers what it printed; a child that
/// failed is an error carrying its standard error.
pub fn run_child(args: &[&str]) -> BenchResult<String> {
    let out = std::process::Command::new(std::env::current_exe()?)
        .arg("--child")
        .args(args)
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "child {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// The system's load averages (the first three fields of `/proc/loadavg`), or `?` where
/// there is none: printed beside every timing so a reader knows how busy the machine was.
pub fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_and_ingest_agree_on_a_small_dump() -> BenchResult<()> {
        let root = tempfile::tempdir()?;
        let d = dumps_in(root.path(), 5_000, 1)?;
        let (rows, distinct) = parse_and_intern_floor(&d.edges)?;
        let pairs = read_pairs(&d.facts)?;
        assert_eq!(rows, pairs.len() as u64);
        assert!(distinct > 100);

        let db = root.path().join("db");
        let s = ingest_file(&db, &d.edges, &edges_spec(&d.edges))?;
        assert_eq!(s.facts_read, rows);
        let s = ingest_file(&db, &d.facts, &facts_spec(&d.facts))?;
        assert_eq!(s.facts_read, rows);
        redb_write_floor(&pairs, &root.path().join("floor.redb"))?;

        let store = open_store(&db)?;
        let snap = store.snapshot()?;
        let sample = LookupSample::take(&snap, "calls", 50)?;
        assert_eq!(sample.src.len(), 50);
        for (i, &t) in sample.src.iter().enumerate() {
            assert!(lookup_count(&snap, "calls", &[(0, t)])? >= 1);
            let (a, b) = sample.pairs[i];
            assert_eq!(lookup_count(&snap, "calls", &[(0, a), (1, b)])?, 1);
            assert_eq!(snap.term(&Value::text(sample.texts[i].clone()))?, Some(t));
        }
        // A second call reuses the cached files.
        let again = dumps_in(root.path(), 5_000, 1)?;
        assert_eq!(
            fs::metadata(&again.edges)?.len(),
            fs::metadata(&d.edges)?.len()
        );
        Ok(())
    }

    #[test]
    fn percentiles() {
        let mut v = vec![5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(median(&mut v), 3.0);
        assert_eq!(percentile(&mut v, 99.0), 5.0);
        assert_eq!(percentile(&mut [], 50.0), 0.0);
        assert!(peak_rss_kib().is_some_and(|k| k > 0));
    }
}

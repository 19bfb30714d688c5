//! `scip-bench`: SCIP ingest throughput and peak memory against the floor of decoding the
//! same index with the same crate and doing nothing, and a re-ingest after a one-document
//! change against reading the index once.
//!
//! Each figure is wall time; the ingest reads on three threads (two decode) and encodes on a
//! second thread as it writes, so its CPU time (user and system, all threads) is printed
//! beside it: on a machine other work shares, the wall-time ratio to the floor moves with the
//! load, the CPU-time ratio much less.
//!
//! The index is made from a real one (`target/scip/rxjs.scip`, from
//! `store/tests/scip/make-indexes.sh`) by repeating its documents `--copies` times, each copy
//! under its own path prefix and package name (so symbols and paths grow as with more code),
//! and cached as `target/scip/large-N.scip`, beside `large-N-changed.scip` whose first document
//! lost one occurrence. Each measurement runs in a child process of this binary, so its peak
//! RSS (`VmHWM`) is its own:
//!
//! - floor: frame the index's fields and decode every document with the `scip` crate
//!   (`Document::parse_from_bytes`), keeping nothing;
//! - ingest: `strata ingest` of the index into a new database (read, write, commit);
//! - reingest: the changed index read with `--replace` into a copy of that database (only the
//!   changed document is decoded and rewritten).
//!
//! ```text
//! cargo run --release -p strata-benches --bin scip-bench [-- --copies N --runs R]
//! ```

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use protobuf::Message;
use scip::types::{Document, Index};
use strata_benches::{BenchResult, median, peak_rss_kib, run_child};
use strata_store::dump::{DumpSpec, Format};
use strata_store::{BatchOptions, OpenOptions, Store};

fn scip_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/scip")
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Renames a global symbol's package for copy `i`.
fn rename(symbol: &mut String, i: usize) {
    if !symbol.starts_with("local ") {
        *symbol = symbol.replacen(" rxjs 7.8.2 ", &format!(" rxjs-c{i} 7.8.2 "), 1);
    }
}

fn copy_of(doc: &Document, i: usize) -> Document {
    let mut d = doc.clone();
    d.relative_path = format!("c{i}/{}", d.relative_path);
    for o in &mut d.occurrences {
        rename(&mut o.symbol, i);
    }
    for s in &mut d.symbols {
        rename(&mut s.symbol, i);
        for r in &mut s.relationships {
            rename(&mut r.symbol, i);
        }
    }
    d
}

/// Writes `large-N.scip` and `large-N-changed.scip` unless they exist.
fn make_indexes(copies: usize) -> BenchResult<(PathBuf, PathBuf)> {
    let dir = scip_dir();
    let large = dir.join(format!("large-{copies}.scip"));
    let changed = dir.join(format!("large-{copies}-changed.scip"));
    if large.exists() && changed.exists() {
        return Ok((large, changed));
    }
    let source = dir.join("rxjs.scip");
    let bytes = std::fs::read(&source).map_err(|e| {
        format!(
            "{}: {e}; run store/tests/scip/make-indexes.sh first",
            source.display()
        )
    })?;
    let index = Index::parse_from_bytes(&bytes)?;
    for (path, change) in [(&large, false), (&changed, true)] {
        let mut out = BufWriter::new(std::fs::File::create(path)?);
        let mut head = Vec::new();
        let meta = index.metadata.write_to_bytes()?;
        head.push(0x0a);
        varint(meta.len() as u64, &mut head);
        out.write_all(&head)?;
        out.write_all(&meta)?;
        for i in 0..copies {
            for (n, doc) in index.documents.iter().enumerate() {
                let mut d = copy_of(doc, i);
                if change && i == 0 && n == 0 {
                    d.occurrences.pop();
                }
                let body = d.write_to_bytes()?;
                head.clear();
                head.push(0x12);
                varint(body.len() as u64, &mut head);
                out.write_all(&head)?;
                out.write_all(&body)?;
            }
        }
        out.flush()?;
    }
    Ok((large, changed))
}

/// Reads one varint; `None` at the end of the input.
fn read_varint(r: &mut impl BufRead) -> BenchResult<Option<u64>> {
    let mut v = 0u64;
    for i in 0..10 {
        let mut b = [0u8];
        if r.read(&mut b)? == 0 {
            return if i == 0 {
                Ok(None)
            } else {
                Err("truncated varint".into())
            };
        }
        v |= u64::from(b[0] & 0x7f) << (7 * i);
        if b[0] & 0x80 == 0 {
            return Ok(Some(v));
        }
    }
    Err("long varint".into())
}

/// The floor: every document decoded by the crate and dropped. Answers the documents read.
fn floor(path: &Path) -> BenchResult<u64> {
    let mut r = BufReader::with_capacity(1 << 16, std::fs::File::open(path)?);
    let mut buf = Vec::new();
    let mut docs = 0;
    while let Some(tag) = read_varint(&mut r)? {
        let len = read_varint(&mut r)?.ok_or("truncated")?;
        buf.resize(len as usize, 0);
        r.read_exact(&mut buf)?;
        if tag == 0x12 {
            std::hint::black_box(Document::parse_from_bytes(&buf)?);
            docs += 1;
        }
    }
    Ok(docs)
}

fn spec(path: &Path) -> DumpSpec {
    DumpSpec {
        label: path.display().to_string(),
        format: Format::Scip,
        relation: None,
        unit: None,
        checkout: None,
    }
}

/// Ingests `path` into the database `db` (replacing when asked); answers facts read.
fn ingest(path: &Path, db: &Path, replace: bool) -> BenchResult<(u64, String)> {
    let store = Store::open(
        db,
        OpenOptions {
            create: true,
            ..OpenOptions::default()
        },
    )?;
    let mut batch = store.batch(BatchOptions {
        replace,
        ..BatchOptions::default()
    })?;
    batch.read_file(path, &spec(path))?;
    let changes = batch.documents();
    let summary = batch.commit()?;
    let note = if replace {
        changes.to_string()
    } else {
        format!(
            "read {:.3} s, write {:.3} s, sync {:.3} s",
            summary.read_time.as_secs_f64(),
            summary.write_time.as_secs_f64(),
            summary.sync_time.as_secs_f64()
        )
    };
    Ok((summary.facts_read, note))
}

/// The CPU time (user and system, all threads) this process used so far, in seconds, from
/// `/proc/self/stat` (Linux's clock ticks, 100 a second); 0 where that cannot be read.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The fields after the command name (which may hold spaces), from field 3 on.
    let Some((_, rest)) = stat.rsplit_once(") ") else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// The child: runs one measurement and prints `seconds cpu_seconds facts peak_kib note`.
fn child(args: &[String]) -> BenchResult<()> {
    let (what, path) = (args[0].as_str(), Path::new(&args[1]));
    let start = Instant::now();
    let (facts, note) = match what {
        "floor" => (floor(path)?, "documents".to_owned()),
        "ingest" => ingest(path, Path::new(&args[2]), false)?,
        _ => ingest(path, Path::new(&args[2]), true)?,
    };
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{secs} {} {facts} {} {note}",
        cpu_seconds(),
        peak_rss_kib().unwrap_or_default()
    );
    Ok(())
}

/// What one child measured.
struct Measured {
    seconds: f64,
    cpu: f64,
    facts: u64,
    peak_kib: u64,
    note: String,
}

/// Runs a child; answers what it measured.
fn run(args: &[&str]) -> BenchResult<Measured> {
    let text = run_child(args)?;
    let mut f = text.trim().splitn(5, ' ');
    let mut next = || f.next().unwrap_or_default().to_owned();
    Ok(Measured {
        seconds: next().parse()?,
        cpu: next().parse()?,
        facts: next().parse()?,
        peak_kib: next().parse()?,
        note: next(),
    })
}

fn copy_dir(from: &Path, to: &Path) -> BenchResult<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        if e.file_type()?.is_file() {
            std::fs::copy(e.path(), to.join(e.file_name()))?;
        }
    }
    Ok(())
}

fn main_inner() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1..]);
    }
    let mut copies = 32usize;
    let mut runs = 3usize;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().ok_or(format!("{a} needs a value"))?;
        match a.as_str() {
            "--copies" => copies = value.parse()?,
            "--runs" => runs = value.parse()?,
            _ => return Err(format!("unknown option {a}").into()),
        }
    }
    let (large, changed) = make_indexes(copies)?;
    let mb = std::fs::metadata(&large)?.len() as f64 / 1e6;
    println!(
        "index: {} ({mb:.1} MB, {copies} copies of rxjs 7.8.2)",
        large.display()
    );
    let tmp = tempfile::tempdir()?;
    let (mut floor_t, mut ingest_t, mut re_t) = (Vec::new(), Vec::new(), Vec::new());
    let (mut floor_c, mut ingest_c) = (Vec::new(), Vec::new());
    let (mut floor_peak, mut ingest_peak, mut re_peak) = (0, 0, 0);
    let (mut docs, mut facts, mut re_facts, mut re_note) = (0, 0, 0, String::new());
    for r in 0..runs {
        let m = run(&["floor", &large.display().to_string()])?;
        floor_t.push(m.seconds);
        floor_c.push(m.cpu);
        floor_peak = floor_peak.max(m.peak_kib);
        docs = m.facts;
        let db = tmp.path().join(format!("db{r}"));
        let m = run(&[
            "ingest",
            &large.display().to_string(),
            &db.display().to_string(),
        ])?;
        ingest_t.push(m.seconds);
        ingest_c.push(m.cpu);
        ingest_peak = ingest_peak.max(m.peak_kib);
        facts = m.facts;
        println!(
            "  run {r}: ingest {:.3} s, cpu {:.2} s ({})",
            m.seconds, m.cpu, m.note
        );
        let again = tmp.path().join(format!("again{r}"));
        copy_dir(&db, &again)?;
        let m = run(&[
            "reingest",
            &changed.display().to_string(),
            &again.display().to_string(),
        ])?;
        re_t.push(m.seconds);
        re_peak = re_peak.max(m.peak_kib);
        re_facts = m.facts;
        re_note = m.note;
        std::fs::remove_dir_all(&db)?;
        std::fs::remove_dir_all(&again)?;
    }
    let (f, i, re) = (
        median(&mut floor_t),
        median(&mut ingest_t),
        median(&mut re_t),
    );
    let (fc, ic) = (median(&mut floor_c), median(&mut ingest_c));
    let mib = |k: u64| k as f64 / 1024.0;
    println!("median of {runs} runs, each in its own process:");
    println!(
        "  floor (decode {docs} documents, keep nothing): {f:.3} s, cpu {fc:.2} s, {:.1} MB/s, \
         peak {:.0} MiB",
        mb / f,
        mib(floor_peak)
    );
    println!(
        "  ingest ({facts} facts):                        {i:.3} s, cpu {ic:.2} s, {:.1} MB/s, \
         {:.0} facts/s, peak {:.0} MiB, {:.2}x the floor (cpu {:.2}x)",
        mb / i,
        facts as f64 / i,
        mib(ingest_peak),
        i / f,
        ic / fc.max(0.01)
    );
    println!(
        "  re-ingest, one document changed ({re_facts} facts read; {re_note}): {re:.3} s, \
         peak {:.0} MiB, {:.2}x the floor, {:.2}x the ingest",
        mib(re_peak),
        re / f,
        re / i
    );
    Ok(())
}

fn main() -> ExitCode {
    match main_inner() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scip-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

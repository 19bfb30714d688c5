//! Crash safety of `strata ingest`.
//!
//! A process killed with SIGKILL in the middle of an ingest must leave a database that opens,
//! passes `check`, holds every batch acknowledged before (a batch is acknowledged when its
//! `strata ingest` exited 0), and holds the interrupted batch whole or not at all. Retrying
//! the interrupted batch with the same `--batch-id` then lands it exactly once.
//!
//! The kill loop keeps a model of what the database must hold (every fact with the units that
//! state it) and compares the store with the model before and after each interrupted batch.
//! Kills are timed either by a delay (drawn around the batch's expected run time) or by a
//! change to a database file (the writes of a commit, which a delay rarely hits). The batches
//! are deterministic by seed; where the kills land depends on timing, so every iteration's
//! outcome is printed (`--nocapture`):
//!
//! - `STRATA_CRASH_SEED=N` (decimal or `0x` hex) picks the batches and the kill schedule;
//! - `STRATA_CRASH_ITERATIONS=N` runs N kill iterations instead of the default 32 (a soak).
//!
//! The other tests here: a second process gets a clear "in use" error while an ingest holds
//! the database, and a malformed line or a relation clash stops the batch with
//! `FILE:LINE: message` and stores nothing of it.
//!
//! And a kill while a new database or tier file is being created leaves a usable database
//! (redb initializes a new file in steps; the store creates files under a temporary name and
//! renames them into place).
#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use strata_eval::{FactSource, Term, Value};
use strata_fixtures::codegraph::{Config, write_edges};
use strata_store::{Catalog, OpenOptions, Store};

const BIN: &str = env!("CARGO_BIN_EXE_strata");

/// The seed used when `STRATA_CRASH_SEED` is not set.
const DEFAULT_SEED: u64 = 0x5EED_C0DE_2024;
/// Kill iterations when `STRATA_CRASH_ITERATIONS` is not set.
const DEFAULT_ITERATIONS: usize = 32;
/// Units (`u0`..) the unit-owned batches draw from.
const UNITS: u64 = 16;
/// SIGKILL's number.
const SIGKILL: i32 = 9;

// ---- a tiny deterministic PRNG (SplitMix64) ----------------------------------------------

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim().replace('_', "");
    let parsed = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|e| panic!("{name}={v}: not a number: {e}")))
}

// ---- the model: what the database must hold ----------------------------------------------

/// A fact's owner: a unit, or `None` for a fact stated without one.
type Owner = Option<String>;

#[derive(Clone, Debug, PartialEq)]
struct RelModel {
    tier: String,
    facts: BTreeMap<(String, String), BTreeSet<Owner>>,
}

#[derive(Clone, Debug, Default)]
struct Model {
    rels: BTreeMap<String, RelModel>,
}

struct Fact {
    rel: String,
    src: String,
    dst: String,
    unit: Owner,
}

enum Change {
    Ingest {
        tier: String,
        replace: bool,
        facts: Vec<Fact>,
    },
    Retract {
        units: Vec<String>,
    },
}

impl Model {
    fn remove_units(&mut self, units: &BTreeSet<String>) {
        for rel in self.rels.values_mut() {
            rel.facts.retain(|_, owners| {
                owners.retain(|o| !o.as_ref().is_some_and(|u| units.contains(u)));
                !owners.is_empty()
            });
        }
    }

    /// The model after `change` commits.
    fn apply(&self, change: &Change) -> Model {
        let mut m = self.clone();
        match change {
            Change::Ingest {
                tier,
                replace,
                facts,
            } => {
                if *replace {
                    let units: BTreeSet<String> =
                        facts.iter().filter_map(|f| f.unit.clone()).collect();
                    m.remove_units(&units);
                }
                for f in facts {
                    let rel = m.rels.entry(f.rel.clone()).or_insert_with(|| RelModel {
                        tier: tier.clone(),
                        facts: BTreeMap::new(),
                    });
                    assert_eq!(&rel.tier, tier, "test bug: {} changes tier", f.rel);
                    rel.facts
                        .entry((f.src.clone(), f.dst.clone()))
                        .or_default()
                        .insert(f.unit.clone());
                }
            }
            Change::Retract { units } => m.remove_units(&units.iter().cloned().collect()),
        }
        m
    }

    fn total(&self) -> u64 {
        self.rels.values().map(|r| r.facts.len() as u64).sum()
    }
}

// ---- the operations of the loop ----------------------------------------------------------

struct Op {
    /// Its `--batch-id`.
    id: String,
    /// What it is, for the log.
    what: String,
    /// The `strata` arguments.
    args: Vec<String>,
    change: Change,
    /// Lines of input, for the time estimate.
    weight: u64,
    /// Its kind, for the kill schedule: an index into [`CLASSES`].
    class: usize,
}

/// The kinds of operation.
const CLASSES: [&str; 5] = [
    "plain, default tier",
    "plain, tier big",
    "units, default tier",
    "units, tier big",
    "retract",
];

fn unit_name(k: u64) -> String {
    format!("u{k}")
}

/// A batch of code-graph edges without units: the default tier keeps the generator's kinds
/// (so batches add to relations earlier batches made, with some facts already stored), tier
/// `big` gets them as `BIG_KIND`. Each is one of 12 graphs per tier, so a long soak run does
/// not grow the database without bound (and a graph drawn again is a batch of duplicates).
fn plain_op(rng: &mut Rng, i: usize, db: &Path, inputs: &Path, big: bool) -> Op {
    let graph = rng.range(0, 11);
    let edges = 800 + graph * 330;
    let seed = graph + if big { 100 } else { 0 };
    let mut raw = Vec::new();
    write_edges(&Config::with_edges(edges).seed(seed), &mut raw).expect("generate edges");
    let raw = String::from_utf8(raw).expect("the generator writes UTF-8");
    let mut text = String::with_capacity(raw.len() + raw.len() / 8);
    let mut facts = Vec::new();
    for line in raw.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 3, "test bug: unexpected generator line {line:?}");
        assert!(!line.contains('\\'), "test bug: escapes in {line:?}");
        let kind = if big {
            format!("BIG_{}", f[1])
        } else {
            f[1].to_owned()
        };
        writeln!(text, "{}\t{kind}\t{}", f[0], f[2]).expect("write to a String");
        facts.push(Fact {
            rel: kind.to_lowercase(),
            src: f[0].to_owned(),
            dst: f[2].to_owned(),
            unit: None,
        });
    }
    let file = inputs.join(format!("op{i}.edges.tsv"));
    std::fs::write(&file, &text).expect("write a dump");
    let id = format!("op-{i}");
    let tier = if big { "big" } else { "default" };
    let args = vec![
        "ingest".to_owned(),
        db.display().to_string(),
        file.display().to_string(),
        "--tier".to_owned(),
        tier.to_owned(),
        "--batch-id".to_owned(),
        id.clone(),
        "--label".to_owned(),
        format!("op={i}"),
    ];
    Op {
        what: format!("{} plain edges into tier {tier}", facts.len()),
        weight: facts.len() as u64,
        class: usize::from(big),
        id,
        args,
        change: Change::Ingest {
            tier: tier.to_owned(),
            replace: false,
            facts,
        },
    }
}

/// A batch of unit-owned facts (relation `owns`, or `big_owns` in tier `big`), maybe with
/// `--replace`. Each unit states facts of its own, whose destinations depend on the batch
/// (so a replacement removes some and keeps some), and a few facts other units state too.
fn unit_op(rng: &mut Rng, i: usize, db: &Path, inputs: &Path, big: bool, replace: bool) -> Op {
    let count = rng.range(1, 6);
    let mut units = BTreeSet::new();
    while (units.len() as u64) < count {
        units.insert(rng.range(0, UNITS - 1));
    }
    let kind = if big { "BIG_OWNS" } else { "OWNS" };
    let tier = if big { "big" } else { "default" };
    // One unit, half the time: a 3-column dump with `--unit`.
    let whole_file_unit = units.len() == 1 && rng.chance(0.5);
    let mut text = String::new();
    let mut facts = Vec::new();
    for &k in &units {
        let u = unit_name(k);
        let own = rng.range(20, 400);
        let shift = rng.range(0, 10);
        let mut lines: Vec<(String, String)> = (0..own)
            .map(|j| (format!("{u}:s{j}"), format!("{u}:d{}", (j + shift) % 11)))
            .collect();
        let first_shared = rng.range(0, 20);
        lines.extend(
            (first_shared..first_shared + 4)
                .map(|j| (format!("shared:s{j}"), format!("hub:h{}", j % 3))),
        );
        for (src, dst) in lines {
            if whole_file_unit {
                writeln!(text, "{src}\t{kind}\t{dst}").expect("write to a String");
            } else {
                writeln!(text, "{src}\t{kind}\t{dst}\t{u}").expect("write to a String");
            }
            facts.push(Fact {
                rel: kind.to_lowercase(),
                src,
                dst,
                unit: Some(u.clone()),
            });
        }
    }
    let file = inputs.join(format!("op{i}.edges.tsv"));
    std::fs::write(&file, &text).expect("write a dump");
    let id = format!("op-{i}");
    let mut args = vec![
        "ingest".to_owned(),
        db.display().to_string(),
        file.display().to_string(),
        "--tier".to_owned(),
        tier.to_owned(),
        "--batch-id".to_owned(),
        id.clone(),
    ];
    if whole_file_unit {
        args.extend([
            "--unit".to_owned(),
            unit_name(units.first().copied().unwrap_or(0)),
        ]);
    }
    if replace {
        args.push("--replace".to_owned());
    }
    let names: Vec<String> = units.iter().map(|&k| unit_name(k)).collect();
    Op {
        what: format!(
            "{} facts of units {}{} into tier {tier}{}",
            facts.len(),
            names.join(","),
            if whole_file_unit { " (--unit)" } else { "" },
            if replace { " with --replace" } else { "" }
        ),
        weight: facts.len() as u64,
        class: 2 + usize::from(big),
        id,
        args,
        change: Change::Ingest {
            tier: tier.to_owned(),
            replace,
            facts,
        },
    }
}

fn retract_op(rng: &mut Rng, i: usize, db: &Path) -> Op {
    let count = rng.range(1, 3);
    let mut units = BTreeSet::new();
    while (units.len() as u64) < count {
        units.insert(unit_name(rng.range(0, UNITS - 1)));
    }
    let id = format!("op-{i}");
    let mut args = vec!["retract".to_owned(), db.display().to_string()];
    for u in &units {
        args.extend(["--unit".to_owned(), u.clone()]);
    }
    args.extend(["--batch-id".to_owned(), id.clone()]);
    let units: Vec<String> = units.into_iter().collect();
    Op {
        what: format!("retract units {}", units.join(",")),
        weight: 0,
        class: 4,
        id,
        args,
        change: Change::Retract { units },
    }
}

fn next_op(rng: &mut Rng, i: usize, db: &Path, inputs: &Path) -> Op {
    let r = rng.unit();
    if r < 0.30 {
        plain_op(rng, i, db, inputs, false)
    } else if r < 0.45 {
        plain_op(rng, i, db, inputs, true)
    } else if r < 0.85 {
        let big = rng.chance(0.4);
        let replace = rng.chance(0.7);
        unit_op(rng, i, db, inputs, big, replace)
    } else {
        retract_op(rng, i, db)
    }
}

// ---- running `strata` --------------------------------------------------------------------

fn strata(args: &[String]) -> (Output, Duration) {
    let start = Instant::now();
    let out = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run strata");
    (out, start.elapsed())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The database files a run watches: the base file and tier `big`'s.
const WATCHED: [&str; 2] = ["strata.redb", "tier-big.redb"];

/// When to SIGKILL a run.
#[derive(Clone, Copy, Debug)]
enum Kill {
    Never,
    /// This long after the start.
    After(Duration),
    /// `extra` after the `nth` change (of modification time or length) of `WATCHED[file]`:
    /// the writes of a commit, which a timed kill rarely lands in.
    AtChange {
        file: usize,
        nth: usize,
        extra: Duration,
    },
}

impl Kill {
    fn describe(&self) -> String {
        match *self {
            Kill::Never => "no kill".to_owned(),
            Kill::After(d) => format!("kill after {:.1} ms", d.as_secs_f64() * 1000.0),
            Kill::AtChange { file, nth, extra } => format!(
                "kill {} µs after change {nth} of {}",
                extra.as_micros(),
                WATCHED[file]
            ),
        }
    }
}

struct Run {
    /// The output when the process exited by itself (successfully or not); `None`: killed.
    output: Option<Output>,
    elapsed: Duration,
    /// When the kill was sent, if it was.
    killed_at: Option<Duration>,
    /// Changes seen to each watched file while the process ran.
    changes: [usize; 2],
}

fn file_state(path: &Path) -> Option<(std::time::SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Runs `strata`, watching the database's files, and SIGKILLs it as `kill` says.
fn run_strata(args: &[String], db: &Path, kill: Kill) -> Run {
    let paths = WATCHED.map(|f| db.join(f));
    let mut last = paths.each_ref().map(|p| file_state(p));
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start strata");
    let mut changes = [0usize; 2];
    let mut deadline = match kill {
        Kill::After(d) => Some(start + d),
        _ => None,
    };
    let mut killed_at = None;
    loop {
        if child.try_wait().expect("poll strata").is_some() {
            break;
        }
        for (i, p) in paths.iter().enumerate() {
            let s = file_state(p);
            if s != last[i] {
                last[i] = s;
                changes[i] += 1;
                if let Kill::AtChange { file, nth, extra } = kill
                    && file == i
                    && changes[i] == nth
                {
                    deadline = Some(Instant::now() + extra);
                }
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            // Killing a child that exited meanwhile (but was not reaped) is harmless: its
            // exit status says it exited.
            let _ = child.kill();
            killed_at = Some(start.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    let out = child.wait_with_output().expect("wait for strata");
    let elapsed = start.elapsed();
    let killed = out.status.signal() == Some(SIGKILL);
    assert!(
        !killed || killed_at.is_some(),
        "strata {args:?} died of a SIGKILL the test did not send"
    );
    Run {
        output: (!killed).then_some(out),
        elapsed,
        killed_at,
        changes,
    }
}

/// The stdout of a run that exited 0 (its batch is acknowledged), or `None` when it was
/// killed; a run that failed by itself fails the test.
fn acknowledged(run: &Run, args: &[String]) -> Option<String> {
    let out = run.output.as_ref()?;
    let stderr = text(&out.stderr);
    assert!(
        out.status.success(),
        "strata {args:?} failed on its own ({}):\nstdout: {}\nstderr: {stderr}",
        out.status,
        text(&out.stdout),
    );
    assert!(
        !stderr.contains("panicked"),
        "strata {args:?} panicked: {stderr}"
    );
    Some(text(&out.stdout))
}

/// How long to wait before a timed kill: mostly within the batch's expected run time, with
/// more weight on its end (the commit), some during process start and the open (redb's repair
/// of the last crash), and some past the end (the batch is acknowledged).
fn pick_delay(rng: &mut Rng, est: f64, startup: f64) -> Duration {
    let r = rng.unit();
    let ms = if r < 0.15 {
        rng.unit() * startup
    } else if r < 0.55 {
        rng.unit() * est
    } else if r < 0.90 {
        est * (0.6 + 0.4 * rng.unit())
    } else {
        est * (1.0 + 0.4 * rng.unit())
    };
    Duration::from_secs_f64(ms / 1000.0)
}

/// A kill at a change of a database file, drawn from what the last full run of the same
/// kind of batch changed: the tier file's changes when it had any, else the base file's.
fn pick_change(rng: &mut Rng, seen: [usize; 2]) -> Kill {
    let file = if seen[1] > 0 && (seen[0] == 0 || rng.chance(0.6)) {
        1
    } else {
        0
    };
    let n = seen[file].max(4) as u64;
    let nth = rng.range(1, n) as usize;
    let extra = if rng.chance(0.5) {
        Duration::ZERO
    } else {
        Duration::from_micros(rng.range(0, 1500))
    };
    Kill::AtChange { file, nth, extra }
}

// ---- checking the store against the model ------------------------------------------------

fn open(db: &Path) -> Store {
    Store::open(db, OpenOptions::default())
        .unwrap_or_else(|e| panic!("the database does not open: {e}"))
}

fn render(v: Value) -> String {
    match v {
        Value::Text(s) => s,
        other => format!("{other}"),
    }
}

/// Every fact of a relation in the store, as texts.
fn content(store: &Store, rel: &str) -> BTreeSet<(String, String)> {
    let snap = store.snapshot().expect("snapshot");
    let mut rows: Vec<(Term, Term)> = Vec::new();
    snap.scan(rel, &mut |row| {
        rows.push((row[0], row[1]));
        std::ops::ControlFlow::Continue(())
    })
    .unwrap_or_else(|e| panic!("scan {rel}: {e}"));
    let mut names: HashMap<Term, String> = HashMap::new();
    let mut name = |t: Term| -> String {
        names
            .entry(t)
            .or_insert_with(|| render(snap.value(t).unwrap_or_else(|e| panic!("{rel}: {e}"))))
            .clone()
    };
    let set: BTreeSet<(String, String)> = rows.iter().map(|&(a, b)| (name(a), name(b))).collect();
    assert_eq!(set.len(), rows.len(), "relation {rel} holds a fact twice");
    set
}

/// Compares the catalog's relations (names, tiers, row counts) with a model.
fn counts_match(catalog: &Catalog, model: &Model) -> Result<(), String> {
    let stored: BTreeSet<&String> = catalog.relations.keys().collect();
    let expected: BTreeSet<&String> = model.rels.keys().collect();
    if stored != expected {
        return Err(format!(
            "relations differ: stored {stored:?}, expected {expected:?}"
        ));
    }
    for (name, meta) in &catalog.relations {
        let m = &model.rels[name];
        if meta.tier != m.tier || meta.rows != m.facts.len() as u64 {
            return Err(format!(
                "relation {name}: stored {} rows in tier {}, expected {} in tier {}",
                meta.rows,
                meta.tier,
                m.facts.len(),
                m.tier
            ));
        }
    }
    Ok(())
}

fn content_matches(store: &Store, model: &Model, rel: &str) -> Result<(), String> {
    let stored = content(store, rel);
    let expected: BTreeSet<(String, String)> = model.rels[rel].facts.keys().cloned().collect();
    if stored == expected {
        return Ok(());
    }
    let missing: Vec<_> = expected.difference(&stored).take(3).collect();
    let extra: Vec<_> = stored.difference(&expected).take(3).collect();
    Err(format!(
        "relation {rel}: {} facts stored, {} expected; missing e.g. {missing:?}, extra e.g. \
         {extra:?}",
        stored.len(),
        expected.len()
    ))
}

/// After a kill: the database opens, passes `check`, and holds `before` (the batch did not
/// land) or `after` (it landed whole, as batch `seq + 1`). Returns whether it landed.
fn verify_after_kill(
    db: &Path,
    before: &Model,
    after: &Model,
    seq: u64,
    op: &Op,
    acknowledged: bool,
    full: bool,
) -> bool {
    let store = open(db);
    let report = store
        .check()
        .unwrap_or_else(|e| panic!("check fails to run after the kill: {e}"));
    assert!(report.ok(), "check after the kill:\n{report}");
    let catalog = store.catalog().expect("catalog");
    assert!(
        catalog.seq == seq || catalog.seq == seq + 1,
        "seq {} after the kill; batch {seq} was the last acknowledged",
        catalog.seq
    );
    let landed = catalog.seq == seq + 1;
    if acknowledged {
        assert!(
            landed,
            "an acknowledged batch is missing: seq is still {seq}"
        );
    }
    if landed {
        let id = catalog.last_batch.as_ref().and_then(|b| b.batch_id.clone());
        assert_eq!(id.as_deref(), Some(op.id.as_str()), "the last batch's id");
    }
    let (expected, other) = if landed {
        (after, before)
    } else {
        (before, after)
    };
    if let Err(e) = counts_match(&catalog, expected) {
        let hint = match counts_match(&catalog, other) {
            Ok(()) => "the data matches the other outcome: seq and data disagree".to_owned(),
            Err(_) => "the data matches neither outcome: half a batch landed".to_owned(),
        };
        panic!(
            "after the kill (seq {}, batch {}): {e}; {hint}",
            catalog.seq,
            if landed { "landed" } else { "did not land" }
        );
    }
    // The facts themselves: of every relation the batch changes (all of them now and then).
    for name in expected.rels.keys() {
        if (full || before.rels.get(name) != after.rels.get(name))
            && let Err(e) = content_matches(&store, expected, name)
        {
            panic!(
                "after the kill (batch {}): {e}",
                if landed { "landed" } else { "did not land" }
            );
        }
    }
    landed
}

// ---- the kill loop -----------------------------------------------------------------------

#[derive(Default)]
struct Tally {
    killed_rolled_back: usize,
    killed_committed: usize,
    acknowledged: usize,
    second_kills: usize,
    check_kills: usize,
    at_change: usize,
    by_class: [[usize; 3]; 5],
}

/// Runs an operation that must not be killed (the set-up) and returns its run.
fn run_through(op: &Op, db: &Path, seq: u64) -> Run {
    let run = run_strata(&op.args, db, Kill::Never);
    let stdout = acknowledged(&run, &op.args).unwrap_or_default();
    assert!(
        stdout.starts_with(&format!("batch {}: ", seq + 1)),
        "{}: {stdout}",
        op.id
    );
    run
}

#[test]
fn sigkill_during_ingest_leaves_a_consistent_database() {
    let started = Instant::now();
    let seed = env_u64("STRATA_CRASH_SEED").unwrap_or(DEFAULT_SEED);
    let iterations = env_u64("STRATA_CRASH_ITERATIONS").map_or(DEFAULT_ITERATIONS, |n| n as usize);
    eprintln!(
        "crash test: seed {seed:#x}, {iterations} kill iterations \
         (set STRATA_CRASH_SEED / STRATA_CRASH_ITERATIONS to change)"
    );
    let tmp = tempfile::tempdir().expect("temp dir");
    let db = tmp.path().join("db");
    let inputs = tmp.path().join("inputs");
    std::fs::create_dir(&inputs).expect("inputs dir");
    // The data comes from one stream and the kill schedule from another, so the batches
    // are the same for a seed however the kills land.
    let mut rng = Rng(seed);
    let mut kill_rng = Rng(seed ^ 0x4B11_0000_4B11);
    // The file changes the last full run of each kind of operation made.
    let mut history = [[0usize; 2]; 5];

    // Two batches, never killed, create the database and tier `big`'s file (a kill while a
    // file is created is the subject of its own tests below) and time a batch.
    let mut model = Model::default();
    let mut seq = 0u64;
    let mut first_run = None;
    for (i, big) in [(0, false), (1, true)] {
        let op = plain_op(&mut rng, i, &db, &inputs, big);
        let run = run_through(&op, &db, seq);
        history[op.class] = run.changes;
        model = model.apply(&op.change);
        seq += 1;
        first_run.get_or_insert((op.weight, run.elapsed));
    }
    let (first_weight, first_elapsed) = first_run.unwrap_or_default();

    // Process start plus open, and milliseconds per input line.
    let stats_args = vec!["stats".to_owned(), db.display().to_string()];
    let mut startups: Vec<f64> = (0..3)
        .map(|_| {
            let (out, t) = strata(&stats_args);
            assert!(out.status.success(), "stats: {}", text(&out.stderr));
            t.as_secs_f64() * 1000.0
        })
        .collect();
    startups.sort_by(f64::total_cmp);
    let startup = startups[1];
    let mut per_line =
        (first_elapsed.as_secs_f64() * 1000.0 - startup).max(1.0) / first_weight.max(1) as f64;
    eprintln!(
        "first batch: {first_weight} lines in {:.0} ms; start-up {startup:.0} ms, {per_line:.3} \
         ms per line",
        first_elapsed.as_secs_f64() * 1000.0,
    );

    let mut tally = Tally::default();
    // How long the last check after a kill took (with the comparison with the model).
    let mut check_ms = startup;
    for it in 1..=iterations {
        let op = next_op(&mut rng, it + 1, &db, &inputs);
        let after = model.apply(&op.change);
        let est = startup + per_line * op.weight as f64;
        let kill = if kill_rng.chance(0.5) {
            Kill::After(pick_delay(&mut kill_rng, est, startup))
        } else {
            tally.at_change += 1;
            pick_change(&mut kill_rng, history[op.class])
        };
        let mut log = format!(
            "iteration {it}: {} (batch {}, expect ~{est:.0} ms), {}: ",
            op.what,
            seq + 1,
            kill.describe()
        );
        let run = run_strata(&op.args, &db, kill);
        let mut acked = false;
        match acknowledged(&run, &op.args) {
            Some(stdout) => {
                assert!(
                    stdout.starts_with(&format!("batch {}: ", seq + 1)),
                    "an acknowledged batch says: {stdout}"
                );
                acked = true;
                let _ = write!(
                    log,
                    "finished in {:.0} ms, before the kill (acknowledged)",
                    run.elapsed.as_secs_f64() * 1000.0
                );
            }
            None => {
                let _ = write!(
                    log,
                    "killed mid-batch at {:.1} ms",
                    run.killed_at.unwrap_or_default().as_secs_f64() * 1000.0
                );
                // Sometimes kill the retry too, early: during start-up and the open, which
                // repairs the file the first kill left. Or kill a `strata check`, which
                // repairs it too and undoes a tier batch the base file never acknowledged.
                let r = kill_rng.unit();
                if r < 0.2 {
                    let d = Duration::from_secs_f64(
                        kill_rng.unit() * 1.2 * (startup + check_ms) / 1000.0,
                    );
                    let args = vec!["check".to_owned(), db.display().to_string()];
                    tally.check_kills += 1;
                    let run = run_strata(&args, &db, Kill::After(d));
                    let _ = match acknowledged(&run, &args) {
                        Some(_) => write!(log, ", then `strata check` passed"),
                        None => write!(
                            log,
                            ", then `strata check` killed at {:.1} ms",
                            d.as_secs_f64() * 1000.0
                        ),
                    };
                } else if r < 0.5 {
                    let d = Duration::from_secs_f64(kill_rng.unit() * 2.0 * startup / 1000.0);
                    tally.second_kills += 1;
                    let again = run_strata(&op.args, &db, Kill::After(d));
                    match acknowledged(&again, &op.args) {
                        Some(stdout) => {
                            acked = true;
                            let _ = write!(
                                log,
                                ", a retry finished before a kill at {:.1} ms: {}",
                                d.as_secs_f64() * 1000.0,
                                stdout.trim_end()
                            );
                        }
                        None => {
                            let _ = write!(
                                log,
                                ", a retry killed too at {:.1} ms",
                                d.as_secs_f64() * 1000.0
                            );
                        }
                    }
                }
            }
        }
        let full = it % 6 == 0 || it == iterations;
        let checked = Instant::now();
        let landed = verify_after_kill(&db, &model, &after, seq, &op, acked, full);
        check_ms = checked.elapsed().as_secs_f64() * 1000.0;
        let outcome = if acked {
            tally.acknowledged += 1;
            2
        } else if landed {
            tally.killed_committed += 1;
            log.push_str(", batch landed whole (committed, not acknowledged)");
            1
        } else {
            tally.killed_rolled_back += 1;
            log.push_str(", batch absent (rolled back)");
            0
        };
        tally.by_class[op.class][outcome] += 1;

        // The retry, to completion: lands the batch exactly once.
        let retry = run_strata(&op.args, &db, Kill::Never);
        let stdout = acknowledged(&retry, &op.args).unwrap_or_default();
        if landed {
            let expected = format!(
                "batch already committed as batch {}: nothing written",
                seq + 1
            );
            assert!(
                stdout.starts_with(&expected),
                "retry of a landed batch says: {stdout}"
            );
        } else {
            assert!(
                stdout.starts_with(&format!("batch {}: ", seq + 1)),
                "retry of a batch that did not land says: {stdout}"
            );
            history[op.class] = retry.changes;
            if op.weight > 200 {
                let ms = retry.elapsed.as_secs_f64() * 1000.0;
                let sample = (ms - startup).max(1.0) / op.weight as f64;
                per_line = 0.7 * per_line + 0.3 * sample;
            }
        }
        seq += 1;
        model = after;
        {
            let store = open(&db);
            let catalog = store.catalog().expect("catalog");
            assert_eq!(catalog.seq, seq, "seq after the retry");
            if let Err(e) = counts_match(&catalog, &model) {
                panic!("after the retry of {}: {e}", op.id);
            }
        }
        let _ = write!(log, "; retry ok ({} facts stored)", model.total());
        eprintln!("{log}");
    }

    // The end: the command-line check agrees, and everything is there.
    let (out, _) = strata(&["check".to_owned(), db.display().to_string()]);
    assert!(
        out.status.success() && text(&out.stdout).starts_with("ok: "),
        "strata check at the end: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let store = open(&db);
    for name in model.rels.keys() {
        if let Err(e) = content_matches(&store, &model, name) {
            panic!("at the end: {e}");
        }
    }
    let killed = tally.killed_rolled_back + tally.killed_committed;
    eprintln!(
        "crash test: seed {seed:#x}: {iterations} iterations in {:.1} s ({} with a kill timed \
         by a file change): {killed} killed mid-batch ({} rolled back, {} landed \
         unacknowledged), {} finished before the kill, {} retries and {} checks killed as well; \
         {} facts in {} relations at the end",
        started.elapsed().as_secs_f64(),
        tally.at_change,
        tally.killed_rolled_back,
        tally.killed_committed,
        tally.acknowledged,
        tally.second_kills,
        tally.check_kills,
        model.total(),
        model.rels.len()
    );
    for (class, [rolled_back, landed, acked]) in CLASSES.iter().zip(tally.by_class) {
        eprintln!(
            "  {class}: {rolled_back} rolled back, {landed} landed unacknowledged, {acked} \
             acknowledged"
        );
    }
    let needed = (iterations / 4).max(3).min(iterations);
    assert!(
        killed >= needed,
        "only {killed} of {iterations} iterations were killed mid-batch (need {needed}): the \
         kills came too late to test anything"
    );
}

// ---- a held database -----------------------------------------------------------------------

#[test]
fn a_second_process_gets_a_clear_in_use_error() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let db = tmp.path().join("db");
    let seed_file = tmp.path().join("seed.edges.tsv");
    std::fs::write(&seed_file, "a\tIMPORTS\tb\n").expect("write");
    let dbs = db.display().to_string();
    let (out, _) = strata(&[
        "ingest".to_owned(),
        dbs.clone(),
        seed_file.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    // A long ingest from standard input, fed by a writer that pauses until we say.
    let mut child = Command::new(BIN)
        .args(["ingest", &dbs, "-", "--format", "edges"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start strata");
    let mut stdin = child.stdin.take().expect("stdin");
    let (fed_tx, fed_rx) = std::sync::mpsc::channel::<()>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let lines_per_part = 10_000;
    let writer = std::thread::spawn(move || {
        let part = |p: usize| -> String {
            let mut s = String::new();
            for j in 0..lines_per_part {
                writeln!(s, "n{p}_{j}\tSTDIN_EDGE\tn{p}_{}", j + 1).expect("write to a String");
            }
            s
        };
        // More than a pipe holds: once written, the ingest has read some, so it holds the
        // database (it opens it before reading).
        stdin
            .write_all(part(0).as_bytes())
            .expect("feed the ingest");
        fed_tx.send(()).expect("signal");
        go_rx.recv().expect("wait for the go");
        stdin
            .write_all(part(1).as_bytes())
            .expect("feed the ingest");
        // Dropping stdin ends the input.
    });
    fed_rx.recv().expect("the writer fed the ingest");

    for args in [
        vec!["stats".to_owned(), dbs.clone()],
        vec!["check".to_owned(), dbs.clone()],
        vec![
            "ingest".to_owned(),
            dbs.clone(),
            seed_file.display().to_string(),
        ],
        vec![
            "retract".to_owned(),
            dbs.clone(),
            "--unit".to_owned(),
            "x".to_owned(),
        ],
    ] {
        let (out, _) = strata(&args);
        let stderr = text(&out.stderr);
        assert!(
            !out.status.success(),
            "strata {args:?} succeeded on a held database"
        );
        assert!(
            !stderr.contains("panicked"),
            "strata {args:?} panicked: {stderr}"
        );
        assert!(stderr.contains("in use"), "strata {args:?} says: {stderr}");
        assert!(
            stderr.starts_with("error: "),
            "strata {args:?} says: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    }
    // The library says the same.
    match Store::open(&db, OpenOptions::default()) {
        Ok(_) => panic!("the library opened a held database"),
        Err(e) => assert!(e.to_string().contains("in use"), "{e}"),
    }

    go_tx.send(()).expect("go");
    writer.join().expect("writer");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "the held ingest failed: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).starts_with("batch 2: "),
        "{}",
        text(&out.stdout)
    );
    let store = open(&db);
    let catalog = store.catalog().expect("catalog");
    assert_eq!(
        catalog.relations["stdin_edge"].rows,
        2 * lines_per_part as u64
    );
    assert!(store.check().expect("check").ok());
}

// ---- malformed input -----------------------------------------------------------------------

/// A database with two relations: `imports` (edges) and `pair` (a 2-column `.facts` file).
fn small_db(dir: &Path) -> PathBuf {
    let db = dir.join("db");
    std::fs::write(dir.join("base.edges.tsv"), "a\tIMPORTS\tb\nb\tIMPORTS\tc\n").expect("write");
    std::fs::write(dir.join("pair.facts"), "x\ty\n").expect("write");
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["ingest", "db", "base.edges.tsv", "pair.facts"])
        .output()
        .expect("run strata");
    assert!(out.status.success(), "{}", text(&out.stderr));
    db
}

/// What a refused batch must leave as it was.
fn snapshot_of(dir: &Path, db: &Path) -> (String, String) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["stats", "db"])
        .output()
        .expect("run strata");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Everything but the bytes on disk per tier (redb may trim a file when it closes it).
    let stats = text(&out.stdout);
    let stats = stats.split("tiers:").next().unwrap_or_default().to_owned();
    let store = open(db);
    let c = store.catalog().expect("catalog");
    (
        stats,
        format!("{} {:?} {} {}", c.seq, c.relations, c.texts, c.numbers),
    )
}

/// Ingests `good.edges.tsv` (valid, new facts) and then `name` holding `bytes` as one batch
/// with a batch id, and expects exactly `stderr`, a failure, and nothing stored; then the
/// good file alone, with the same batch id, lands.
fn refused(name: &str, bytes: &[u8], extra: &[&str], stderr: &str) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let db = small_db(dir);
    let before = snapshot_of(dir, &db);
    std::fs::write(dir.join("good.edges.tsv"), "c\tIMPORTS\td\nq\tNEWKIND\tr\n").expect("write");
    std::fs::write(dir.join(name), bytes).expect("write");
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["ingest", "db", "good.edges.tsv", name, "--batch-id", "b-1"])
        .args(extra)
        .output()
        .expect("run strata");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{name}: exit status {}",
        out.status
    );
    assert_eq!(
        text(&out.stderr),
        format!("error: {stderr}\n"),
        "{name}: stderr"
    );
    assert_eq!(text(&out.stdout), "", "{name}: stdout");
    assert_eq!(
        snapshot_of(dir, &db),
        before,
        "{name}: the refused batch changed the database"
    );
    assert!(open(&db).check().expect("check").ok());
    // The refused batch's id was not used up: the corrected batch lands under it.
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["ingest", "db", "good.edges.tsv", "--batch-id", "b-1"])
        .output()
        .expect("run strata");
    assert!(
        out.status.success() && text(&out.stdout).starts_with("batch 2: "),
        "{name}: the corrected batch: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[test]
fn a_malformed_line_stops_the_batch_and_stores_nothing() {
    refused(
        "bad.edges.tsv",
        b"# two good lines, then a short one\nm\tIMPORTS\tn\n\nn\tIMPORTS\to\nshort\tIMPORTS\n",
        &[],
        "bad.edges.tsv:5: expected 3 or 4 tab-separated fields (src, kind, dst[, unit]), found 2",
    );
    refused(
        "bad.edges.tsv",
        b"m\tIMPORTS\tn\tunit\textra\n",
        &[],
        "bad.edges.tsv:1: expected 3 or 4 tab-separated fields (src, kind, dst[, unit]), found 5",
    );
    refused(
        "bad.edges.tsv",
        b"m\tIMPORTS\tn\nm\\qx\tIMPORTS\tn\n",
        &[],
        "bad.edges.tsv:2: field 1: bad escape \"\\q\" (write \\t, \\n, \\r or \\\\; a field \
         that is exactly \\N is absent)",
    );
    refused(
        "bad.edges.tsv",
        b"m\tIMPORTS\tn\nm\tIMPORTS\tn\\\n",
        &[],
        "bad.edges.tsv:2: field 3: a field ends with a lone backslash (write \\\\)",
    );
    refused(
        "bad.edges.tsv",
        b"m\tIMPORTS\tn\nm\xff\tIMPORTS\tn\n",
        &[],
        "bad.edges.tsv:2: invalid UTF-8 at byte 2 of the line",
    );
    refused(
        "bad.edges.tsv",
        b"m\tIMPORTS\tn\n\tIMPORTS\tn\n",
        &[],
        "bad.edges.tsv:2: field 1 (src) is empty",
    );
    refused(
        "bad.edges.tsv",
        b"m\tIMPORTS\tn\nm\tIMPORTS\t\n",
        &[],
        "bad.edges.tsv:2: field 3 (dst) is empty",
    );
    refused(
        "bad.edges.tsv",
        b"m\tIMPORTS\tn\nm\tIMPORTS\tn\t\n",
        &[],
        "bad.edges.tsv:2: the unit field is empty; leave it out instead",
    );
    refused(
        "bad.facts",
        b"1\t2\n3\t4\t5\n",
        &[],
        "bad.facts:2: expected 2 tab-separated fields like the lines before, found 3",
    );
}

#[test]
fn a_relation_clash_stops_the_batch_and_stores_nothing() {
    // `pair` is stored with 2 columns; the clash names the first line of the relation.
    refused(
        "pair.facts",
        b"# a comment first\nx\ty\tz\n",
        &[],
        "pair.facts:2: relation \"pair\" is stored with 2 columns (c1, c2), but this dump \
         gives it 3",
    );
    // An edge kind that lower-cases to a stored `.facts` relation.
    refused(
        "clash.edges.tsv",
        b"m\tIMPORTS\tn\nm\tPair\tn\n",
        &[],
        "clash.edges.tsv:2: \"Pair\" (an edge kind) names the same relation \"pair\" as the \
         stored \"pair\" (a .facts file); rename one of them",
    );
    // A stored relation of the default tier, ingested into another.
    refused(
        "tier.edges.tsv",
        b"m\tIMPORTS\tn\n",
        &["--tier", "big"],
        "good.edges.tsv:1: relation \"imports\" lives in tier \"default\", not \"big\"; ingest \
         it with --tier default",
    );
}

// ---- a kill while a database file is created -----------------------------------------------
//
// redb initializes a new file by growing it to its first layout, writing and flushing the
// header without its magic number, and only then writing the magic number: a process killed
// in between would leave a file every later open refuses. The store therefore creates each
// file under a temporary name and renames it into place once initialized (found by these
// tests when the store created files in place).

/// Kills `strata ingest` at moments just after it creates a database file (the base file of
/// a new database, or with `tier` the file of a new tier) and checks that the database stays
/// usable: `strata stats` works (or says there is no database yet), the same ingest run again
/// succeeds, and `strata check` passes.
fn kill_while_creating(tier: Option<&str>) {
    let seed = env_u64("STRATA_CRASH_SEED").unwrap_or(DEFAULT_SEED);
    let mut rng = Rng(seed ^ 0xC4EA_7E00);
    let tmp = tempfile::tempdir().expect("temp dir");
    let kind = if tier.is_some() { "BIG_EDGE" } else { "EDGE" };
    let dump = tmp.path().join("d.edges.tsv");
    let mut lines = String::new();
    for j in 0..500 {
        writeln!(lines, "n{j}\t{kind}\tn{}", j + 1).expect("write to a String");
    }
    std::fs::write(&dump, lines).expect("write");
    let seed_dump = tmp.path().join("seed.edges.tsv");
    std::fs::write(&seed_dump, "a\tIMPORTS\tb\n").expect("write");
    let file_name = tier.map_or(strata_store::layout::BASE_FILE.to_owned(), |t| {
        strata_store::layout::tier_file(t)
    });
    let mut killed = 0;
    let mut failures = Vec::new();
    for attempt in 0..40 {
        let db = tmp.path().join(format!("db{attempt}"));
        let dbs = db.display().to_string();
        if tier.is_some() {
            let (out, _) = strata(&[
                "ingest".to_owned(),
                dbs.clone(),
                seed_dump.display().to_string(),
            ]);
            assert!(out.status.success(), "{}", text(&out.stderr));
        }
        let mut args = vec!["ingest".to_owned(), dbs.clone(), dump.display().to_string()];
        if let Some(t) = tier {
            args.extend(["--tier".to_owned(), t.to_owned()]);
        }
        let file = db.join(&file_name);
        let mut child = Command::new(BIN)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start strata");
        while !file.exists() && child.try_wait().expect("poll").is_none() {
            std::thread::sleep(Duration::from_micros(20));
        }
        let delay = Duration::from_micros(rng.range(0, 3000));
        std::thread::sleep(delay);
        let _ = child.kill();
        if child.wait().expect("wait").success() {
            continue;
        }
        killed += 1;
        let size = std::fs::metadata(&file).map_or(0, |m| m.len());
        let what = format!(
            "killed {} µs after {file_name} appeared (left {size} bytes)",
            delay.as_micros()
        );
        let (out, _) = strata(&["stats".to_owned(), dbs.clone()]);
        let stderr = text(&out.stderr);
        if !out.status.success() && !stderr.contains("is not a Strata database") {
            failures.push(format!("{what}: `strata stats` says {}", stderr.trim_end()));
        }
        let (out, _) = strata(&args);
        if !out.status.success() {
            failures.push(format!(
                "{what}: the same `strata ingest` again says {}",
                text(&out.stderr).trim_end()
            ));
            continue;
        }
        let (out, _) = strata(&["check".to_owned(), dbs.clone()]);
        if !out.status.success() {
            failures.push(format!(
                "{what}: `strata check` says {}",
                text(&out.stderr).trim_end()
            ));
        }
    }
    eprintln!(
        "{killed} kills while creating {file_name}, {} left it unusable",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {killed} kills while creating {file_name} left a database that does not work:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_kill_while_creating_the_database_leaves_it_usable() {
    kill_while_creating(None);
}

#[test]
fn a_kill_while_creating_a_tier_file_leaves_the_tier_usable() {
    kill_while_creating(Some("big"));
}

//! Issue 30: the files of a real database directory damaged on disk, end to end through the
//! binary. Each of the base file, a tier file, their stamps and the find index is cut,
//! emptied, bit-flipped, overwritten with random bytes or grown, and `strata stats`, `query`
//! (over the base file and over the tier) and `find` must each answer as on the intact
//! database (a stamp or the find index being caches: verified again, rebuilt) or refuse
//! naming the file; never hang (each run has a time limit), never crash. A FIFO as the pack
//! or as a module makes `query` refuse naming it within seconds.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest a command may take here (a hang is a failure, not a wait).
const LIMIT: Duration = Duration::from_secs(60);

/// What a run of the binary gave.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `strata ARGS`, killed (and the test failed) past [`LIMIT`].
fn strata(args: &[&str]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("strata {args:?} still running after {LIMIT:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        took: started.elapsed(),
    }
}

/// The bundled example ingested into `dir`, with relation `hotedge` in tier `hot`, and its
/// find index built.
fn example(dir: &Path) -> String {
    let files = strata_fixtures::example::write_example(dir).unwrap();
    let db = dir.to_str().unwrap().to_owned();
    let mut args = vec!["ingest".to_owned(), db.clone()];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = strata(&args);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let hot = dir.join("hot.edges.tsv");
    std::fs::write(&hot, "a\thotedge\tb\nb\thotedge\tc\n").unwrap();
    let r = strata(&["ingest", &db, hot.to_str().unwrap(), "--tier", "hot"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = strata(&["find", &db, "api"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    db
}

/// The reads tried on each damaged directory.
fn reads(db: &str) -> Vec<Vec<String>> {
    [
        vec!["stats", db],
        vec!["query", db, r#"deps.depends_on("app", ?d) => ?d"#],
        vec!["query", db, "hotedge(?a, ?b) => ?b"],
        vec!["find", db, "api"],
        vec!["find", db, "depend_on"],
    ]
    .into_iter()
    .map(|a| a.into_iter().map(str::to_owned).collect())
    .collect()
}

fn run(args: &[String]) -> Run {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    strata(&args)
}

/// An answer without the files' sizes `stats` reports (a file grown, or trimmed by redb as
/// it closes, is the same database).
fn answer(out: &str) -> String {
    out.lines()
        .map(|l| match l.strip_suffix(" bytes") {
            Some(rest) => rest.trim_end_matches(|c: char| c.is_ascii_digit()),
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A seeded stream of bytes and positions: std's hasher with its fixed keys over a counter.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        use std::hash::{Hash, Hasher};
        self.0 += 1;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.0.hash(&mut h);
        h.finish()
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The damaged versions of a file's bytes `b`, with what each is.
fn variants(b: &[u8], rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![
        ("emptied".to_owned(), Vec::new()),
        ("cut to 7 bytes".to_owned(), b[..b.len().min(7)].to_vec()),
        ("cut in half".to_owned(), b[..b.len() / 2].to_vec()),
        (
            "cut by one byte".to_owned(),
            b[..b.len().saturating_sub(1)].to_vec(),
        ),
        (
            "random bytes of its length".to_owned(),
            (0..b.len()).map(|_| rng.next() as u8).collect(),
        ),
        ("grown by 100 bytes".to_owned(), {
            let mut v = b.to_vec();
            v.extend((0..100).map(|_| rng.next() as u8));
            v
        }),
    ];
    if b.len() >= 4096 {
        out.push(("cut to a page".to_owned(), b[..4096].to_vec()));
    }
    for _ in 0..4 {
        let mut v = b.to_vec();
        if v.is_empty() {
            break;
        }
        // Bits flipped in the first pages (headers, roots) or anywhere.
        let span = if rng.below(2) == 0 {
            v.len().min(8192)
        } else {
            v.len()
        };
        let mut at = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(span);
            v[i] ^= 1 << rng.below(8);
            at.push(i);
        }
        out.push((format!("bits flipped at {at:?}"), v));
    }
    out
}

/// The files of the directory that are damaged in turn: name and whether it is a cache (a
/// stamp, the find index), which must never make a read fail.
fn targets(db: &Path) -> Vec<(String, bool)> {
    let mut names: Vec<String> = std::fs::read_dir(db)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".redb") || n.ends_with(".stamp") || n.ends_with(".idx"))
        .collect();
    names.sort();
    let cache = |n: &str| n.ends_with(".stamp") || n.ends_with(".idx");
    names.into_iter().map(|n| (n.clone(), cache(&n))).collect()
}

#[test]
fn issue_30_damaged_database_files_are_refused_or_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    std::fs::create_dir(&dir).unwrap();
    let db = example(&dir);
    let reads = reads(&db);
    let expected: Vec<String> = reads
        .iter()
        .map(|a| {
            let r = run(a);
            assert_eq!(r.code, Some(0), "{a:?}: {}", r.stderr);
            answer(&r.stdout)
        })
        .collect();
    let targets = targets(&dir);
    let names: Vec<&str> = targets.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"strata.redb")
            && names.contains(&"tier-hot.redb")
            && names.contains(&"strata.redb.stamp")
            && names.contains(&"tier-hot.redb.stamp")
            && names.iter().any(|n| n.starts_with("find-")),
        "{names:?}"
    );
    // Every file as it is now, restored before each case.
    let pristine: Vec<(PathBuf, Vec<u8>)> = targets
        .iter()
        .map(|(n, _)| (dir.join(n), std::fs::read(dir.join(n)).unwrap()))
        .collect();
    let restore = || {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            if n.ends_with(".stamp") || n.ends_with(".idx") {
                std::fs::remove_file(&p).unwrap();
            }
        }
        for (p, b) in &pristine {
            std::fs::write(p, b).unwrap();
        }
    };
    let mut rng = Rng(30);
    let (mut answered, mut refused) = (0, 0);
    for ((name, cache), (_, bytes)) in targets.iter().zip(&pristine) {
        for (what, damaged) in variants(bytes, &mut rng) {
            for (args, expected) in reads.iter().zip(&expected) {
                restore();
                std::fs::write(dir.join(name), &damaged).unwrap();
                let r = run(args);
                let case = format!("{name} {what}, strata {:?}", &args[..1]);
                assert!(
                    !r.stderr.contains("panicked"),
                    "{case}: a panic: {}",
                    r.stderr
                );
                match r.code {
                    Some(0) => {
                        assert_eq!(&answer(&r.stdout), expected, "{case}: answered otherwise");
                        answered += 1;
                    }
                    Some(1) if !cache => {
                        assert!(
                            r.stderr.contains(name.as_str()),
                            "{case}: refused without naming the file: {}",
                            r.stderr
                        );
                        refused += 1;
                    }
                    code => panic!("{case}: exit {code:?}: {}{}", r.stdout, r.stderr),
                }
            }
        }
    }
    restore();
    eprintln!(
        "{} files damaged, {answered} reads answered as before, {refused} refused naming the file",
        targets.len()
    );
    assert!(refused > 0 && answered > 0);
    // The intact directory still answers as before.
    for (args, expected) in reads.iter().zip(&expected) {
        let r = run(args);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(&answer(&r.stdout), expected);
    }
}

fn mkfifo(path: &Path) -> bool {
    Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn issue_30_a_fifo_as_the_pack_or_a_module_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    std::fs::create_dir(&dir).unwrap();
    let db = example(&dir);
    let pack = dir.join("strata.toml");
    std::fs::remove_file(&pack).unwrap();
    if !mkfifo(&pack) {
        eprintln!("*** SKIPPED: mkfifo is not available ***");
        return;
    }
    let r = strata(&["query", &db, r#"deps.depends_on("app", ?d) => ?d"#]);
    assert!(r.took < Duration::from_secs(10), "{:?}", r.took);
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("strata.toml") && r.stderr.contains("is a FIFO, not a regular file"),
        "{}",
        r.stderr
    );
    std::fs::remove_file(&pack).unwrap();
    let module = dir.join("modules").join("x.dl");
    assert!(mkfifo(&module));
    // A program that uses it is refused, the module named; one that does not is answered
    // (a module fails alone), the module named on standard error.
    let r = strata(&["query", &db, "x.anything(?a) => ?a"]);
    assert!(r.took < Duration::from_secs(10), "{:?}", r.took);
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("modules/x.dl: cannot be read: not a regular file")
            && r.stderr.contains("unknown relation \"x.anything\""),
        "{}",
        r.stderr
    );
    let r = strata(&["query", &db, r#"deps.depends_on("app", ?d) => ?d"#]);
    assert!(r.took < Duration::from_secs(10), "{:?}", r.took);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.starts_with("columns: d\n1. api\n"), "{}", r.stdout);
    assert!(r.stderr.contains("modules/x.dl"), "{}", r.stderr);
}

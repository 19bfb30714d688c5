//! Damage: every page of a small database's files zeroed in turn, then every store operation
//! run on it. Each returns Ok or an error (one naming a file when it is damage); none panics.

#![allow(clippy::unwrap_used)]

use std::ops::ControlFlow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use strata_eval::{FactSource, Value};
use strata_store::dump::Format;
use strata_store::{BatchOptions, OpenOptions, Store, StoreError};

mod common;

use common::{create, read_into, spec};

const PAGE: usize = 4096;

/// A small database: two edge kinds in the base file, one attribute in tier `big`, units.
fn build(dir: &Path) {
    let store = create(dir);
    let mut edges = String::new();
    for i in 0..600 {
        edges.push_str(&format!("a{i}\tIMPORTS\tb{}\tu{}\n", i % 40, i % 7));
        edges.push_str(&format!("b{i}\tCALLS\ta{}\n", i % 55));
    }
    read_into(
        &store,
        "default",
        "e.edges.tsv",
        Format::Edges,
        edges.as_bytes(),
    )
    .commit()
    .unwrap();
    let mut attrs = String::new();
    for i in 0..300 {
        attrs.push_str(&format!("a{i}\tsize\t{}\n", i * 3));
    }
    read_into(
        &store,
        "big",
        "a.attrs.tsv",
        Format::Attrs,
        attrs.as_bytes(),
    )
    .commit()
    .unwrap();
}

/// Every operation of the store on the database in `dir`. Opening failing ends it (`Err`);
/// every other operation's error is collected (an error is a fine outcome; a panic is not).
fn exercise(dir: &Path, verify: bool) -> Result<Vec<String>, StoreError> {
    let store = Store::open(
        dir,
        OpenOptions {
            verify,
            ..OpenOptions::default()
        },
    )?;
    let mut errors = Vec::new();
    let mut note = |e: &dyn std::error::Error| errors.push(e.to_string());
    macro_rules! keep {
        ($e:expr) => {
            match $e {
                Ok(v) => Some(v),
                Err(e) => {
                    note(&e);
                    None
                }
            }
        };
    }
    keep!(store.stats());
    keep!(store.check());
    keep!(store.tiers_for(&["imports".to_owned(), "size".to_owned()]));
    for tiers in [&[][..], &["big"][..]] {
        let Some(snap) = keep!(store.snapshot_with_tiers(tiers)) else {
            continue;
        };
        let mut rows = 0u64;
        let mut count = |_: &[strata_eval::Term]| {
            rows += 1;
            ControlFlow::Continue(())
        };
        for rel in ["imports", "calls", "size"] {
            keep!(snap.scan(rel, &mut count));
            keep!(snap.estimate(rel, &[]));
        }
        if let Some(Some(t)) = keep!(snap.term(&Value::text("b3"))) {
            keep!(snap.lookup("imports", &[(1, t)], &mut count));
            keep!(snap.term_uses(t));
            keep!(snap.value(t));
        }
        keep!(snap.term(&Value::Number(1.5)));
        keep!(snap.for_each_text(1, &mut |_, _| ControlFlow::Continue(())));
    }
    if let Some(mut batch) = keep!(store.batch(BatchOptions::default())) {
        let more = "a1\tIMPORTS\tz\tu1\nq\tCALLS\tr\n";
        if keep!(batch.read_dump(more.as_bytes(), &spec("m.edges.tsv", Format::Edges))).is_some() {
            keep!(batch.commit());
        }
    }
    keep!(store.retract(&["u3".to_owned()], BatchOptions::default()));
    keep!(store.check());
    Ok(errors)
}

/// Whether an error says which file of the database `dir` it is about, or is one that is
/// about no file (what damage left out of the catalog is then simply not there).
fn names_a_file(error: &str, dir: &Path) -> bool {
    error.contains(&dir.display().to_string())
        || [
            "no relation named",
            "unknown relation",
            "no fact is stated by",
        ]
        .iter()
        .any(|p| error.starts_with(p))
}

/// What is done to one page of a file.
#[derive(Clone, Copy, Debug)]
enum Harm {
    /// Every byte of the page zeroed.
    Zero,
    /// The file cut at the page's start.
    Truncate,
    /// Eight bytes of the page flipped.
    Flip,
}

impl Harm {
    fn apply(self, bytes: &mut Vec<u8>, page: usize) {
        let start = page * PAGE;
        let end = (start + PAGE).min(bytes.len());
        match self {
            Harm::Zero => bytes[start..end].fill(0),
            Harm::Truncate => bytes.truncate(start),
            Harm::Flip => {
                for i in 0..8 {
                    let at = start + (i * 509 + 17) % (end - start);
                    bytes[at] ^= 0x5a;
                }
            }
        }
    }
}

/// Harms each page of `file` in turn (in a fresh copy of `orig`), and runs every operation
/// (opening without and, for zeroed pages, with `verify`). Returns the pages where something
/// panicked, with what.
/// What a sweep found: pages swept, runs where an operation returned an error, runs where
/// every operation answered, and the runs that panicked.
type Swept = (usize, usize, usize, Vec<String>);

fn sweep(orig: &Path, file: &str, harm: Harm, scratch: &Path) -> Swept {
    let len = std::fs::metadata(orig.join(file)).unwrap().len() as usize;
    let pages = len.div_ceil(PAGE);
    let mut panics = Vec::new();
    let (mut errors, mut answers) = (0, 0);
    let verifies: &[bool] = match harm {
        Harm::Zero => &[false, true],
        _ => &[false],
    };
    for page in 0..pages {
        for &verify in verifies {
            let dir = scratch.join(format!("{file}-{page}-{verify}"));
            std::fs::create_dir_all(&dir).unwrap();
            for e in std::fs::read_dir(orig).unwrap() {
                let e = e.unwrap();
                std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
            }
            let mut bytes = std::fs::read(dir.join(file)).unwrap();
            harm.apply(&mut bytes, page);
            std::fs::write(dir.join(file), &bytes).unwrap();
            let run = catch_unwind(AssertUnwindSafe(|| exercise(&dir, verify)));
            match run {
                Err(p) => panics.push(format!(
                    "{file} page {page} {harm:?} (verify {verify}): {}",
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_default()
                )),
                Ok(Err(e)) => {
                    errors += 1;
                    let shown = e.to_string();
                    assert!(
                        names_a_file(&shown, &dir),
                        "{file} page {page} {harm:?}: opening says no file: {shown}"
                    );
                }
                Ok(Ok(found)) if !found.is_empty() => {
                    errors += 1;
                    for shown in found {
                        assert!(
                            names_a_file(&shown, &dir),
                            "{file} page {page} {harm:?}: an error names no file: {shown}"
                        );
                    }
                }
                Ok(Ok(_)) => answers += 1,
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    (pages, errors, answers, panics)
}

fn damage_never_panics(harm: Harm) {
    let root = tempfile::tempdir().unwrap();
    let orig = root.path().join("orig");
    build(&orig);
    let scratch = root.path().join("scratch");
    let mut all = Vec::new();
    let mut swept = 0;
    for file in ["strata.redb", "tier-big.redb"] {
        let (pages, errors, answers, panics) = sweep(&orig, file, harm, &scratch);
        eprintln!(
            "{harm:?} {file}: {pages} pages, {errors} runs met an error, {answers} \
             answered throughout, {} panicked",
            panics.len()
        );
        swept += pages;
        all.extend(panics);
    }
    assert!(swept > 20, "only {swept} pages swept");
    assert!(all.is_empty(), "{} panics:\n{}", all.len(), all.join("\n"));
}

#[test]
fn issue20_every_zeroed_page_is_an_error_or_an_answer_never_a_panic() {
    damage_never_panics(Harm::Zero);
}

#[test]
fn issue20_a_file_cut_at_any_page_is_an_error_or_an_answer_never_a_panic() {
    damage_never_panics(Harm::Truncate);
}

#[test]
fn issue20_flipped_bytes_in_any_page_are_an_error_or_an_answer_never_a_panic() {
    damage_never_panics(Harm::Flip);
}

//! The find index file as a fuzz target ([`crate::fuzz`]): arbitrary bytes written as the
//! file, opened and searched as `find` does.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::file::{self, IndexFile};
use super::indexed::classify;
use super::{Query, Scratch};

/// The queries each file that opens is searched with: one of each kind of match the index
/// answers (exact, last part, prefix, substring, token, fuzzy, some words, non-ASCII).
pub const QUERIES: [&str; 10] = [
    "alpha",
    "Delta",
    "beta_g",
    "gamma",
    "sym:a/b",
    "parse args",
    "alpah",
    "ünï",
    "b.rs#delta x",
    "zzz",
];

/// One search's answer: each match's id and text, and the total; or the error it answered.
pub type Searched = Result<(Vec<(u32, String)>, usize), String>;

/// What became of a find index file's bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum FindOutcome {
    /// Refused as it was opened: the message (which names the file).
    Refused(String),
    /// Opened: the texts it covers and each of [`QUERIES`]' answer, over all its texts and
    /// over the first half.
    Opened(u32, Vec<Searched>),
}

/// Files written by this process so far (for unique names).
static WRITTEN: AtomicU64 = AtomicU64::new(0);

/// A scratch file in the temporary directory, removed when dropped.
struct Scratchfile(PathBuf);

impl Drop for Scratchfile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Sets the fields of a find index header that say the body is whole (magic, version,
/// section count, body length and checksum) to what they must be for `data`'s body, so the
/// body's structure is what is tried.
pub fn seal(data: &mut [u8]) {
    file::seal(data);
}

/// Writes `data` as a find index file and opens and searches it as `find` does; with
/// `sealed`, its header is first made to match its body ([`seal`]).
pub fn find_outcome(data: &[u8], sealed: bool) -> FindOutcome {
    // Panics caught as damage (`fst`'s, on a malformed map) are not reported: as in the
    // `strata` binary, and so libFuzzer's hook does not take them for crashes.
    strata_store::quiet_caught_panics();
    let mut data = data.to_vec();
    if sealed {
        seal(&mut data);
    }
    let n = WRITTEN.fetch_add(1, Ordering::Relaxed);
    let path =
        std::env::temp_dir().join(format!(".strata-fuzz-find-{}-{n}.idx", std::process::id()));
    let _removed = Scratchfile(path.clone());
    if let Err(e) = std::fs::write(&path, &data) {
        return FindOutcome::Refused(format!("(not written: {e})"));
    }
    match IndexFile::open(&path) {
        Err(e) => {
            let message = e.to_string();
            assert!(names(&message, &path), "{message}");
            FindOutcome::Refused(message)
        }
        Ok(f) => {
            let texts = f.texts();
            let mut answers = Vec::new();
            for q in QUERIES {
                for upto in [texts, texts / 2] {
                    answers.push(search(&f, &path, q, upto));
                }
            }
            FindOutcome::Opened(texts, answers)
        }
    }
}

/// Whether `message` names the file at `path`.
fn names(message: &str, path: &Path) -> bool {
    message.contains(&path.display().to_string())
}

/// Searches `f` for `q` over ids `1..=upto`, checking what it answers: at most the matches
/// asked for, each an id in range whose text the scan matches the same way, a total no less
/// than the matches; an error names the file.
fn search(f: &IndexFile, path: &Path, q: &str, upto: u32) -> Searched {
    let query = Query::new(q).ok_or_else(|| "no query".to_owned())?;
    let keep = 5;
    match f.search(&query, upto, keep) {
        Err(e) => {
            let message = e.to_string();
            assert!(names(&message, path), "{message}");
            Err(message)
        }
        Ok(found) => {
            assert!(found.matches.len() <= keep, "{q}: {:?}", found.matches);
            assert!(found.total >= found.matches.len(), "{q}: {found:?}");
            let mut scratch = Scratch::default();
            let mut out = Vec::new();
            for m in &found.matches {
                assert!((1..=upto).contains(&m.id), "{q}: id {} of {upto}", m.id);
                let text = found.texts.get(&m.id).expect("every match's text");
                assert_eq!(
                    classify(&query, m.id, text, &mut scratch).as_ref(),
                    Some(m),
                    "{q}: {text:?} answered as it does not match"
                );
                out.push((m.id, text.clone()));
            }
            Ok((out, found.total))
        }
    }
}

/// The find index file target: the first byte says whether the header is made to match the
/// body ([`seal`], odd) or left as it is; the rest is the file.
pub fn find_index(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let _ = find_outcome(rest, pick & 1 == 1);
}

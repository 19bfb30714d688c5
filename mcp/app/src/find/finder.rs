//! The [`Finder`]: what `find` searches. The persistent index file of the database (texts
//! `1..=n`, memory-mapped, built on first use and rebuilt on a thread of its own when the
//! texts newer than it grow past [`delta_limit`]), and those newer texts in memory, scanned
//! as before.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use strata_store::{Snapshot, Store};

use super::file::{self, IndexFile, IndexFileError, Texts};
use super::indexed::Found;
use super::rank::rank;
use super::{Index, Match, Query};

/// Why the finder could not read the dictionary.
#[derive(Debug, thiserror::Error)]
pub enum FinderError {
    /// Reading the store failed.
    #[error(transparent)]
    Store(#[from] strata_store::StoreError),
    /// The index file failed mid-search (it is removed, and rebuilt on the next call).
    #[error(transparent)]
    File(#[from] IndexFileError),
}

/// How many texts newer than the index file are kept in memory before it is rebuilt: an
/// eighth of what it covers, and at least 100,000.
pub fn delta_limit(covered: u32) -> u32 {
    (covered / 8).max(MIN_DELTA)
}

/// The least [`delta_limit`].
const MIN_DELTA: u32 = 100_000;

/// The dictionary `find` searches: an index file and the texts newer than it.
#[derive(Clone, Debug)]
pub struct Finder {
    file: Option<Arc<IndexFile>>,
    delta: Index,
    dir: Option<PathBuf>,
    /// The least number of newer texts that make it rebuild ([`MIN_DELTA`]; tests lower
    /// it).
    min_delta: u32,
    /// The rebuild of the index file running now, if one is.
    rebuild: Option<Arc<Rebuild>>,
    /// Whether no call waits for the index: a missing or stale file is built on a thread
    /// of its own, and meanwhile at most [`delta_limit`] texts past the file are read into
    /// memory and searched (a server's finder: [`Finder::open_deferred`]).
    deferred: bool,
}

/// What a rebuild answers: the new index file, `None` when it could not be written.
type Built = Result<Option<IndexFile>, strata_store::StoreError>;

/// A rebuild of the index file on a thread of its own, so that no `find` call waits for it
/// (at 8M texts it takes about 100 s); the calls meanwhile search the old file and the newer
/// texts in memory.
#[derive(Debug)]
struct Rebuild {
    thread: Mutex<Option<JoinHandle<Built>>>,
}

impl Rebuild {
    /// Starts building the file of texts `1..=count` of `store` in `dir`; `None` when no
    /// thread could be started (the next call tries again).
    fn start(dir: PathBuf, store: Store, count: u32) -> Option<Rebuild> {
        let thread = std::thread::Builder::new()
            .name("strata-find-index".to_owned())
            .spawn(move || {
                let snap = store.snapshot()?;
                build(&dir, &snap, count)
            })
            .ok()?;
        Some(Rebuild {
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Its answer once the thread has finished (waiting for it when `wait`).
    fn take(&self, wait: bool) -> Taken {
        let mut slot = self.thread.lock().unwrap_or_else(PoisonError::into_inner);
        match slot.take() {
            Some(h) if wait || h.is_finished() => {
                // A thread that panicked wrote no usable file.
                Taken::Done(h.join().unwrap_or(Ok(None)))
            }
            Some(h) => {
                *slot = Some(h);
                Taken::Running
            }
            None => Taken::Gone,
        }
    }
}

/// Where a rebuild is.
enum Taken {
    /// Still running.
    Running,
    /// Finished, with this answer.
    Done(Built),
    /// Finished, and another clone of the finder took its answer.
    Gone,
}

/// The ranked matches of a search, how many matched in all, and their texts.
#[derive(Debug, Default)]
pub struct FinderAnswer {
    /// The best matches, ranked.
    pub matches: Vec<Match>,
    /// How many texts matched in all.
    pub total: usize,
    /// How many of the texts up to the one searched were not searched: those a deferred
    /// finder has not read while its index file is built ([`Finder::open_deferred`]).
    pub unsearched: u32,
    found: Found,
}

impl FinderAnswer {
    /// The text of a match.
    pub fn text(&self, id: u32) -> Option<&str> {
        self.found.texts.get(&id).map(String::as_str)
    }
}

impl Finder {
    /// A finder with no index file: the whole dictionary in memory (a database whose
    /// folder cannot be written).
    pub fn in_memory() -> Finder {
        Finder {
            file: None,
            delta: Index::new(),
            dir: None,
            min_delta: MIN_DELTA,
            rebuild: None,
            deferred: false,
        }
    }

    /// The finder of the database in `dir` as of `snap`: its index file when one is
    /// intact, covers part of `snap`'s dictionary and leaves fewer than [`delta_limit`]
    /// newer texts, else a new one built from the store; texts newer than the file are read
    /// into memory. Without a file it can write, the whole dictionary is held in memory.
    pub fn open(dir: &Path, snap: &Snapshot) -> Result<Finder, strata_store::StoreError> {
        let count = snap.text_count();
        let file = match usable(dir, snap)? {
            Some(f) if count - f.texts() <= delta_limit(f.texts()) => Some(f),
            _ => build(dir, snap, count)?,
        };
        let mut finder = Finder {
            delta: Index::after(file.as_ref().map_or(0, |f| f.texts())),
            // Without a file it could write, it does not try again.
            dir: file.is_some().then(|| dir.to_owned()),
            file: file.map(Arc::new),
            min_delta: MIN_DELTA,
            rebuild: None,
            deferred: false,
        };
        finder.extend_from(snap)?;
        Ok(finder)
    }

    /// [`Finder::open`] for a server, where no call may wait for the index to be built:
    /// the index file in `dir` is taken however far behind `snap` it is (none when there is
    /// none), a new one is built on a thread of its own when it is missing or too far
    /// behind, and meanwhile at most [`delta_limit`] texts past the file are read into
    /// memory and searched; the rest are found once the new file is in place
    /// ([`Finder::unsearched`] says how many are not yet).
    pub fn open_deferred(dir: &Path, snap: &Snapshot) -> Result<Finder, strata_store::StoreError> {
        let file = usable(dir, snap)?;
        let mut finder = Finder {
            delta: Index::after(file.as_ref().map_or(0, |f| f.texts())),
            dir: Some(dir.to_owned()),
            file: file.map(Arc::new),
            min_delta: MIN_DELTA,
            rebuild: None,
            deferred: true,
        };
        finder.extend_from(snap)?;
        Ok(finder)
    }

    /// Reads the texts `snap` has and the finder does not yet. When they are too many, the
    /// index file is rebuilt over all of `snap`'s texts on a thread of its own; a later call
    /// that finds the rebuild finished takes the new file (the newer texts are then read
    /// again after it). A rebuild that failed to read the store answers its error here once.
    pub fn extend_from(&mut self, snap: &Snapshot) -> Result<(), strata_store::StoreError> {
        self.take_rebuild(false)?;
        let covered = self.delta.base();
        let limit = (covered / 8).max(self.min_delta);
        let behind = snap.text_count().saturating_sub(covered) > limit;
        // A deferred finder with no file yet builds one, as `open` would have.
        let unbuilt = self.deferred && self.file.is_none() && snap.text_count() > 0;
        if self.rebuild.is_none()
            && let Some(dir) = &self.dir
            && (behind || unbuilt)
        {
            self.rebuild =
                Rebuild::start(dir.clone(), snap.store().clone(), snap.text_count()).map(Arc::new);
        }
        if self.deferred && behind && self.dir.is_some() {
            // Past the limit, the texts wait for the new file rather than hold up the call.
            return self.delta.extend_to(snap, covered.saturating_add(limit));
        }
        self.delta.extend_from(snap)
    }

    /// How many of `snap`'s texts it does not search yet: those past what a deferred
    /// finder read while its new index file is built (0 for any other finder).
    pub fn unsearched(&self, snap: &Snapshot) -> u32 {
        snap.text_count().saturating_sub(self.len())
    }

    /// Takes the rebuild's new file if it has finished (waiting for it when `wait`): the
    /// texts in memory are then those after it. The file may cover more texts than the
    /// snapshot a call reads; searches take only the ids the call's snapshot has.
    fn take_rebuild(&mut self, wait: bool) -> Result<(), strata_store::StoreError> {
        let built = match self.rebuild.as_ref().map(|r| r.take(wait)) {
            None | Some(Taken::Running) => return Ok(()),
            Some(Taken::Gone) => {
                self.rebuild = None;
                return Ok(());
            }
            Some(Taken::Done(built)) => built,
        };
        self.rebuild = None;
        match built? {
            Some(f) => {
                self.delta = Index::after(f.texts());
                self.file = Some(Arc::new(f));
            }
            // The folder cannot be written: keep the texts in memory from now on.
            None => self.dir = None,
        }
        Ok(())
    }

    /// Waits for a rebuild started by [`Finder::extend_from`], takes its file, and reads
    /// the texts of `snap` after it (for tests and benches that need the file in place).
    pub fn finish_rebuild(&mut self, snap: &Snapshot) -> Result<(), strata_store::StoreError> {
        self.take_rebuild(true)?;
        self.delta.extend_from(snap)
    }

    /// Whether a rebuild of the index file is running.
    pub fn rebuilding(&self) -> bool {
        self.rebuild.is_some()
    }

    /// Sets the least number of newer texts that make it rebuild (for tests).
    #[cfg(test)]
    pub(super) fn set_min_delta(&mut self, n: u32) {
        self.min_delta = n;
    }

    /// How many texts it holds (ids `1..=len`).
    pub fn len(&self) -> u32 {
        self.delta.last_id()
    }

    /// Whether it holds no text.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The texts its index file covers (0 without one).
    pub fn covered(&self) -> u32 {
        self.file.as_ref().map_or(0, |f| f.texts())
    }

    /// Its index file's path, if it has one.
    pub fn file_path(&self) -> Option<&Path> {
        self.file.as_deref().map(IndexFile::path)
    }

    /// The best `keep` texts with an id up to `upto` matching `query`, ranked as
    /// [`Index::search`] ranks them, and how many matched in all.
    pub fn search(&self, query: &str, upto: u32, keep: usize) -> Result<FinderAnswer, FinderError> {
        let Some(q) = Query::new(query) else {
            return Ok(FinderAnswer::default());
        };
        let mut found = match &self.file {
            Some(f) => f.search(&q, upto, keep)?,
            None => Found::default(),
        };
        let (more, total) = self.delta.search(query, upto, keep);
        found.total += total;
        for m in more {
            let text = self.delta.text(m.id).unwrap_or_default();
            found.texts.insert(m.id, text.to_owned());
            found.matches.push(m);
        }
        let matches = match keep {
            0 => Vec::new(),
            _ => {
                let texts = &found.texts;
                rank(std::mem::take(&mut found.matches), keep, |id| {
                    texts.get(&id).map_or("", String::as_str)
                })
            }
        };
        Ok(FinderAnswer {
            matches,
            total: found.total,
            unsearched: upto.saturating_sub(self.len()),
            found,
        })
    }
}

/// The text with id `id` of `snap`.
fn text_at(snap: &Snapshot, id: u32) -> Result<Option<String>, strata_store::StoreError> {
    let mut out = None;
    snap.for_each_text(id, &mut |got, t| {
        if got == id {
            out = Some(t.to_owned());
        }
        ControlFlow::Break(())
    })?;
    Ok(out)
}

/// The newest intact index file in `dir` covering part of `snap`'s dictionary (by its
/// fingerprint); a damaged or foreign one is removed.
fn usable(dir: &Path, snap: &Snapshot) -> Result<Option<IndexFile>, strata_store::StoreError> {
    let count = snap.text_count();
    let mut named: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = file::covered_by_name(e.file_name().to_str()?)?;
            Some((n, e.path()))
        })
        .filter(|(n, _)| *n <= count && *n > 0)
        .collect();
    named.sort_unstable_by_key(|e| std::cmp::Reverse(e.0));
    for (n, path) in named {
        let Ok(f) = IndexFile::open(&path) else {
            let _ = std::fs::remove_file(&path);
            continue;
        };
        let first = text_at(snap, 1)?.unwrap_or_default();
        let last = text_at(snap, n)?.unwrap_or_default();
        if f.texts() == n && f.fingerprint() == file::fingerprint(&first, &last) {
            return Ok(Some(f));
        }
        let _ = std::fs::remove_file(&path);
    }
    Ok(None)
}

/// Builds the index file of texts `1..=count` of `snap`'s dictionary in `dir` and removes
/// older ones; `None` when it cannot be written or read back (the folder is read-only, the
/// disk full).
fn build(dir: &Path, snap: &Snapshot, count: u32) -> Built {
    let count = count.min(snap.text_count());
    if count == 0 {
        return Ok(None);
    }
    let mut texts = Texts::default();
    snap.for_each_text(1, &mut |id, t| {
        if id > count {
            return ControlFlow::Break(());
        }
        texts.push(t);
        ControlFlow::Continue(())
    })?;
    let path = dir.join(file::file_name(count));
    if file::write(&path, &texts).is_err() {
        return Ok(None);
    }
    drop(texts);
    let Ok(f) = IndexFile::open(&path) else {
        return Ok(None);
    };
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name();
        let name = name.to_str().unwrap_or_default();
        if file::covered_by_name(name).is_some_and(|n| n != count) || abandoned(name) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    Ok(Some(f))
}

/// Whether `name` is the temporary file of a build whose process is gone
/// (`find-N.tmpPID`, no `/proc/PID`): a build that crashed before its rename.
fn abandoned(name: &str) -> bool {
    let Some(pid) = name
        .strip_prefix("find-")
        .and_then(|r| r.split_once(".tmp"))
        .and_then(|(_, pid)| pid.parse::<u32>().ok())
    else {
        return false;
    };
    cfg!(target_os = "linux")
        && pid != std::process::id()
        && !Path::new("/proc").join(pid.to_string()).exists()
}

//! Giving back, by itself, the space batches leave unused in a database's files, and keeping
//! each file's page cache sized for the file as it is now.
//!
//! redb reuses the pages a batch frees but never gives them back, and a value rewritten in
//! place of a smaller one (a postings chunk a later batch grows) leaves its leaves mostly
//! empty: a store grown by several batches is larger than the same facts ingested as one.
//! After each commit the store measures each file the batch wrote (its tables' statistics:
//! see [`measure`]), but for a file of at most 256 MiB the batch was the first to write,
//! which is as small as one batch of its facts makes it (measuring reads a file whole: a
//! second on 124 MB; see [`first_measured`]); when what a reclaim would give back passes
//! [`Reclaim::share`] of the
//! file and [`Reclaim::min_bytes`], it repacks the tables whose leaves are half empty (one
//! write transaction, as `strata compact` does) and then compacts the file with redb's
//! `Database::compact` until nothing moves.
//!
//! The repack is an ordinary write transaction, run under the writer lock (no batch runs
//! beside it; readers read on). redb's compaction needs the file to itself: no read
//! transaction may be live (it answers `CompactionError::TransactionInProgress` otherwise,
//! before it writes anything). So it runs only at a quiet moment: with the writer lock and
//! the file's slot held exclusively (no snapshot can begin; one that tries waits), when no
//! other handle of the file is alive and redb finds no read live. When a read is live, the
//! compaction is left pending: a store opened with [`Reclaim::background`] (a server's)
//! retries on a thread of its own, every 50 ms to 1 s, each time holding new snapshots back
//! for at most 250 ms so that the reads running can end (reads overlap on a busy server);
//! one reclaiming in the committing thread retries after its next commit. A reader never
//! sees an error or another answer because of it: it waits, at most 250 ms and one
//! compaction.
//!
//! Every step is one of redb's atomic commits (the repack is one transaction; the
//! compaction is a series of two-phase commits), and none changes what a file holds, so a
//! crash at any point leaves the database as its last acknowledged batch left it. A failed
//! step marks the store for reopening (see `heal`) and is retried after a later commit.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, MutexGuard, PoisonError};
use std::time::Duration;

use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition, TableHandle};

use crate::db::{COMPACT_NEW_FILE_BYTES, File, Store, open_file, scaled_cache_bytes_from};
use crate::error::Fault;
use crate::guard::faults;
use crate::layout::DEFAULT_TIER;

/// When a store gives back, by itself, the space its batches left unused in its files
/// ([`crate::OpenOptions::reclaim`]).
///
/// ```
/// use strata_store::Reclaim;
///
/// let r = Reclaim::default();
/// assert_eq!((r.share, r.min_bytes, r.background), (0.2, 256 << 10, false));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reclaim {
    /// A file is reclaimed when what a reclaim would give back (its free pages, and the
    /// empty part of the leaves of tables a repack fills) is at least this share of its
    /// length (default 0.2: a file left at most 1.25 times what its tables need)...
    pub share: f64,
    /// ...and at least this many bytes (default 256 KiB; a file shorter than this is not
    /// measured). Small files need it too: redb grows a small file that runs out of pages by
    /// doubling it, so a second batch of 50K edges left 1.27 MB where one batch takes 0.66 MB
    /// (and compacting it took 20 ms).
    pub min_bytes: u64,
    /// Reclaim on a thread of the store's own, never in the committing thread (a server's
    /// choice: an ingest is answered when its batch is committed). Such a store also opens
    /// a file again, at a quiet moment, when its size calls for another page cache
    /// ([`crate::scaled_cache_bytes`]).
    pub background: bool,
}

impl Default for Reclaim {
    fn default() -> Self {
        Reclaim {
            share: 0.2,
            min_bytes: 256 << 10,
            background: false,
        }
    }
}

/// redb's page size.
const PAGE: u64 = 4096;

/// How long the background thread first waits for a quiet moment; it doubles up to
/// [`MAX_WAIT`] while reads keep the file busy.
const FIRST_WAIT: Duration = Duration::from_millis(50);
const MAX_WAIT: Duration = Duration::from_secs(1);

/// How long the background thread holds new snapshots back, at most, for the reads running
/// to end, when it found the file busy.
const DRAIN: Duration = Duration::from_millis(250);

/// What is pending for one file.
#[derive(Clone, Copy, Debug, Default)]
struct Pending {
    /// Its waste is to be measured (a batch wrote it).
    measure: bool,
    /// It was repacked, or found with free pages: compact it at a quiet moment.
    compact: bool,
}

/// What giving back space has yet to do in this process, and what it did.
#[derive(Debug, Default)]
pub(crate) struct ReclaimState {
    /// By tier.
    pending: BTreeMap<String, Pending>,
    /// Each file's length when its waste was last measured (or after its last reclaim).
    measured: HashMap<String, u64>,
    /// Whether the background thread runs.
    worker: bool,
    /// Files reclaimed so far.
    reclaimed: u64,
    /// Files measured so far.
    measures: u64,
    /// Files opened again for another page cache so far.
    resized: u64,
}

/// What a file's pages hold that a reclaim would give back.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Waste {
    /// Bytes of pages no table uses (free pages; and redb's own few).
    pub(crate) free: u64,
    /// Tables whose leaves a repack would fill.
    pub(crate) repack: Vec<String>,
    /// Bytes those tables' repack would give back.
    pub(crate) gain: u64,
}

impl Waste {
    /// What a reclaim would give back.
    pub(crate) fn total(&self) -> u64 {
        self.free + self.gain
    }
}

/// Measures what a reclaim of `db`, `len` bytes long, would give back: its pages no table
/// uses, and, for each table of small entries (under half a page on average, so that a
/// repack fills its leaves), the empty part of its leaves beyond a sixteenth of its pages.
/// A table of larger entries (a version 4 column block of 5 to 8 KiB takes a page run of
/// 8) gains nothing from a repack and is left as it is. It reads every page of the tables'
/// trees (redb's `TableStats`), as `strata stats --space` does.
pub(crate) fn measure(db: &redb::Database, len: u64) -> Result<Waste, Fault> {
    let txn = db.begin_read()?;
    let mut used = 0u64;
    let mut waste = Waste::default();
    for handle in txn.list_tables()? {
        let name = handle.name().to_owned();
        let def: TableDefinition<'_, &str, &[u8]> = TableDefinition::new(&name);
        let table = txn.open_untyped_table(def)?;
        let stats = table.stats()?;
        let entries = table.len()?;
        let total = stats.stored_bytes() + stats.metadata_bytes() + stats.fragmented_bytes();
        used += total;
        if entries == 0 || stats.stored_bytes() / entries >= PAGE / 2 {
            continue;
        }
        let gain = stats.fragmented_bytes().saturating_sub(total / 16);
        if gain >= (total / 8).max(64 << 10) {
            waste.repack.push(name);
            waste.gain += gain;
        }
    }
    waste.free = len.saturating_sub(used);
    Ok(waste)
}

/// Whether a file a batch just committed into, `len` bytes long, is measured when the batch
/// was the `first` to write it. The first batch leaves a file as small as one batch of those
/// facts does (what a reclaim aims at), a base file once the open that created it compacts
/// it ([`COMPACT_NEW_FILE_BYTES`]): measuring it would read it whole for nothing. A larger
/// one is measured: a batch of several flushes can leave it half empty (50M integer pairs in
/// four flushes: 590 MB of 1.07 GB unused). A batch that `removed` facts freed pages.
fn first_measured(first: bool, removed: bool, len: u64) -> bool {
    !first || removed || len > COMPACT_NEW_FILE_BYTES
}

/// What one attempt at a file's compaction found.
enum Quiet {
    /// Done (or nothing to do).
    Done,
    /// A read is live, or another handle of the file: try again later.
    Busy,
}

impl Store {
    /// After a batch committed into the files of `tiers` (`removed`: it removed facts):
    /// measures their waste and reclaims them, in this thread or on the store's own (see
    /// the module's documentation). Never fails: a failed reclaim marks the store for
    /// reopening after a storage failure, and is tried again after a later commit.
    pub(crate) fn after_commit(&self, tiers: &[String], first: &[bool], removed: bool) {
        let Some(reclaim) = self.inner.options.reclaim else {
            return;
        };
        {
            let mut state = self.reclaim_state();
            for (tier, &first) in tiers.iter().zip(first) {
                let p = state.pending.entry(tier.clone()).or_default();
                let len = std::fs::metadata(self.tier_path(tier)).map_or(0, |m| m.len());
                if !first_measured(first, removed, len) {
                    // Its length is the one later growth counts from.
                    state.measured.insert(tier.clone(), len);
                    continue;
                }
                p.measure = true;
                if removed {
                    // Removals free pages without the file growing.
                    state.measured.remove(tier);
                }
            }
            if reclaim.background {
                if !state.worker {
                    state.worker = true;
                    drop(state);
                    self.spawn_worker();
                }
                return;
            }
        }
        let writer = self
            .inner
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let _ = self.upkeep(&writer, reclaim);
    }

    /// How many files this process reclaimed so far, and how many it opened again for
    /// another page cache.
    pub fn reclaimed(&self) -> (u64, u64) {
        let state = self.reclaim_state();
        (state.reclaimed, state.resized)
    }

    /// The page cache, in bytes, of the open file of `tier` (`default`: the base file), or
    /// `None` when this process has not opened it.
    pub fn cache_bytes(&self, tier: &str) -> Option<usize> {
        if tier == DEFAULT_TIER {
            self.inner.base_file().map(|f| f.cache_bytes)
        } else {
            self.lock_tiers().get(tier).map(|f| f.cache_bytes)
        }
    }

    fn reclaim_state(&self) -> MutexGuard<'_, crate::reclaim::ReclaimState> {
        self.inner
            .reclaim
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the background thread, which holds the store only while it works on it: a
    /// store dropped meanwhile closes when that step ends.
    fn spawn_worker(&self) {
        let weak = Arc::downgrade(&self.inner);
        let started = std::thread::Builder::new()
            .name("strata-reclaim".to_owned())
            .spawn(move || {
                let mut wait = FIRST_WAIT;
                loop {
                    std::thread::sleep(wait);
                    let Some(inner) = weak.upgrade() else {
                        return;
                    };
                    let store = Store { inner };
                    let Some(reclaim) = store.inner.options.reclaim else {
                        return;
                    };
                    let busy = match store.inner.writer.try_lock() {
                        Ok(writer) => store.upkeep(&writer, reclaim),
                        Err(std::sync::TryLockError::Poisoned(p)) => {
                            store.upkeep(&p.into_inner(), reclaim)
                        }
                        // A batch runs; its commit hands its files over again.
                        Err(std::sync::TryLockError::WouldBlock) => true,
                    };
                    let mut state = store.reclaim_state();
                    if state.pending.is_empty() {
                        state.worker = false;
                        return;
                    }
                    // Busy: wait longer; else a commit handed over more meanwhile.
                    wait = if busy {
                        (wait * 2).min(MAX_WAIT)
                    } else {
                        FIRST_WAIT
                    };
                }
            });
        if started.is_err() {
            self.reclaim_state().worker = false;
        }
    }

    /// Does what is pending for each file: measures it, repacks it, and compacts it (and
    /// opens it again for another page cache) at a quiet moment. The caller holds the writer
    /// lock. Returns whether something is left for a quiet moment.
    fn upkeep(&self, _writer: &MutexGuard<'_, ()>, reclaim: Reclaim) -> bool {
        if self
            .inner
            .poisoned
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            // The files are opened again first (see `heal`); the next commit retries.
            self.reclaim_state().pending.clear();
            return false;
        }
        // Taken out, so that what a commit hands over meanwhile stays.
        let tiers = std::mem::take(&mut self.reclaim_state().pending);
        let mut busy = false;
        for (tier, mut p) in tiers {
            let result = self.upkeep_file(&tier, &mut p, reclaim);
            let mut state = self.reclaim_state();
            match result {
                Ok(Quiet::Done) => {}
                Ok(Quiet::Busy) => {
                    busy = true;
                    let e = state.pending.entry(tier).or_default();
                    e.measure |= p.measure;
                    e.compact |= p.compact;
                }
                Err(fault) => {
                    // Nothing was lost (each step is atomic); try again after a later
                    // commit, once the files are opened again.
                    state.measured.remove(&tier);
                    drop(state);
                    self.note(&fault);
                }
            }
        }
        busy
    }

    fn upkeep_file(&self, tier: &str, p: &mut Pending, reclaim: Reclaim) -> Result<Quiet, Fault> {
        let path = self.tier_path(tier);
        let Ok(len) = std::fs::metadata(&path).map(|m| m.len()) else {
            return Ok(Quiet::Done);
        };
        let file = if tier == DEFAULT_TIER {
            self.inner.base_file()
        } else {
            self.lock_tiers().get(tier).cloned()
        };
        let Some(file) = file else {
            return Ok(Quiet::Done);
        };
        if p.measure {
            p.measure = false;
            let last = self.reclaim_state().measured.get(tier).copied();
            // A file that did not grow by a sixteenth since it was last measured (and from
            // which nothing was removed) is not measured again: measuring reads it whole.
            let grown = last.is_none_or(|l| len >= l + l / 16);
            if grown && len >= reclaim.min_bytes {
                let waste = faults(|| measure(&file, len))?;
                let mut state = self.reclaim_state();
                state.measured.insert(tier.to_owned(), len);
                state.measures += 1;
                drop(state);
                let wasteful = waste.total() >= reclaim.min_bytes
                    && waste.total() as f64 >= reclaim.share * len as f64;
                if wasteful {
                    if !waste.repack.is_empty() {
                        faults(|| crate::space::repack_file(&file, Some(&waste.repack)))?;
                    }
                    p.compact = true;
                }
            }
        }
        drop(file);
        let resize = reclaim.background && self.cache_off(tier);
        if !p.compact && !resize {
            return Ok(Quiet::Done);
        }
        let attempt = || {
            if tier == DEFAULT_TIER {
                self.quiet_base(resize)
            } else {
                self.quiet_tier(tier, resize)
            }
        };
        let mut quiet = attempt()?;
        if let (Quiet::Busy, true) = (&quiet, reclaim.background) {
            // Reads overlap one another on a busy server: hold new snapshots back for a
            // moment, so that those running can end.
            let _held = self
                .inner
                .commit_lock
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let start = std::time::Instant::now();
            while let Quiet::Busy = quiet
                && start.elapsed() < DRAIN
            {
                std::thread::sleep(Duration::from_millis(2));
                quiet = attempt()?;
            }
        }
        if let Quiet::Done = quiet {
            let mut state = self.reclaim_state();
            if p.compact {
                state.reclaimed += 1;
                if let Ok(m) = std::fs::metadata(&path) {
                    state.measured.insert(tier.to_owned(), m.len());
                }
            }
            if resize {
                state.resized += 1;
            }
            p.compact = false;
        }
        Ok(quiet)
    }

    /// Whether the open file of `tier` has a page cache of another size class than its
    /// length now calls for (half or twice as much, or further).
    fn cache_off(&self, tier: &str) -> bool {
        if self.inner.options.cache_bytes.is_some() {
            return false;
        }
        let Some(now) = self.cache_bytes(tier) else {
            return false;
        };
        let Ok(len) = std::fs::metadata(self.tier_path(tier)).map(|m| m.len()) else {
            return false;
        };
        let wanted = scaled_cache_bytes_from(Some(len), self.inner.options.min_cache_bytes);
        wanted >= now.saturating_mul(2) || wanted.saturating_mul(2) <= now
    }

    /// Compacts the base file, and opens it again with the page cache its length calls for
    /// (`resize`), when no read is live. Readers that begin meanwhile wait for the file.
    fn quiet_base(&self, resize: bool) -> Result<Quiet, Fault> {
        let mut slot = self
            .inner
            .base
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(file) = slot.as_mut().and_then(Arc::get_mut) else {
            return Ok(Quiet::Busy);
        };
        if let Quiet::Busy = compact_quiet(file)? {
            return Ok(Quiet::Busy);
        }
        if resize {
            // Closed cleanly (and stamped, when trusted), then opened again as it is.
            let path = self.base_path();
            *slot = None;
            match open_file(&path, &self.inner.options, false, None) {
                Ok(file) => *slot = Some(Arc::new(file)),
                Err(e) => {
                    // Readers answer that the file is closed until the store opens it
                    // again (see `heal`).
                    self.inner
                        .poisoned
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                    return Err(Fault::Open(e));
                }
            }
        }
        Ok(Quiet::Done)
    }

    /// [`Store::quiet_base`] for a tier's file, which is opened again on its next use.
    fn quiet_tier(&self, tier: &str, resize: bool) -> Result<Quiet, Fault> {
        let mut tiers = self.lock_tiers();
        let Some(file) = tiers.get_mut(tier).and_then(Arc::get_mut) else {
            return Ok(Quiet::Busy);
        };
        if let Quiet::Busy = compact_quiet(file)? {
            return Ok(Quiet::Busy);
        }
        if resize {
            tiers.remove(tier);
        }
        Ok(Quiet::Done)
    }
}

/// Compacts `file` until nothing moves (one call of redb's `compact`, which repeats its
/// passes until then; a second call would read every page again to find nothing to move),
/// which also checks that no read is live: redb refuses to compact while one is, before it
/// writes anything.
fn compact_quiet(file: &mut File) -> Result<Quiet, Fault> {
    let db: &mut redb::Database = file;
    faults(|| match db.compact() {
        Ok(_) => Ok(Quiet::Done),
        Err(redb::CompactionError::TransactionInProgress) => Ok(Quiet::Busy),
        // A tier's batch in the middle of its commit protocol, or a leftover that the tier's
        // next opening deletes: not now.
        Err(
            redb::CompactionError::PersistentSavepointExists
            | redb::CompactionError::EphemeralSavepointExists,
        ) => Ok(Quiet::Busy),
        Err(e) => Err(e.into()),
    })
}

#[cfg(test)]
mod tests {
    use crate::dump::{DumpSpec, Format};
    use crate::{OpenOptions, Store};

    fn batch(store: &Store, relation: &str, from: u32, n: u32) {
        let spec = DumpSpec {
            label: format!("{relation}.facts"),
            format: Format::Facts,
            relation: Some(relation.to_owned()),
            unit: None,
            checkout: None,
        };
        let text: String = (from..from + n)
            .map(|i| format!("sym:pkg_{}/src/f_{i}.rs\t{i}\n", i / 100))
            .collect();
        let mut b = store
            .batch(Default::default())
            .unwrap_or_else(|e| panic!("{e}"));
        b.read_dump(text.as_bytes(), &spec)
            .unwrap_or_else(|e| panic!("{e}"));
        b.commit().unwrap_or_else(|e| panic!("{e}"));
    }

    /// A first batch's file is measured only when the compaction of a new file would leave
    /// it as it is (too large), or when the batch removed facts.
    #[test]
    fn a_first_batch_s_file_is_measured_only_when_too_large_to_compact_new() {
        use super::{COMPACT_NEW_FILE_BYTES, first_measured};
        assert!(!first_measured(true, false, 0));
        assert!(!first_measured(true, false, COMPACT_NEW_FILE_BYTES));
        assert!(first_measured(true, false, COMPACT_NEW_FILE_BYTES + 1));
        assert!(first_measured(true, true, 4 << 20));
        assert!(first_measured(false, false, 4 << 20));
    }

    /// A database's first batch leaves its file as one batch does: it is not read whole to
    /// measure it. A later batch that grows the file is measured.
    #[test]
    fn a_first_batch_is_not_measured_a_later_one_is() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let open = OpenOptions {
            create: true,
            ..OpenOptions::default()
        };
        let store = Store::open(dir.path(), open).unwrap_or_else(|e| panic!("{e}"));
        batch(&store, "owns", 0, 150_000);
        let len = std::fs::metadata(store.tier_path("default")).map_or(0, |m| m.len());
        assert!(
            len >= super::Reclaim::default().min_bytes,
            "{len} bytes: under the size a file is measured at"
        );
        assert_eq!(store.reclaim_state().measures, 0);
        assert_eq!(store.reclaim_state().measured.get("default"), Some(&len));
        batch(&store, "more", 150_000, 150_000);
        assert_eq!(store.reclaim_state().measures, 1);
    }
}

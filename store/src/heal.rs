//! Reopening a store's files after a storage failure, so that a process that keeps a store
//! open (a running `strata serve`) never needs a restart after a full disk or an EIO.
//!
//! redb latches the first failed I/O call on a file (a write on a full disk, an EIO while
//! reading): every later call on that `Database`, reads included, answers "Previous I/O
//! error occurred" until the file is closed and opened again. So the store does that by
//! itself:
//!
//! - A storage call that fails marks the store (`Inner::poisoned`): a commit or a flush of a
//!   batch, a read of a snapshot or of the catalog ([`Store::note`]).
//! - The next batch ([`Store::batch`], with the writer lock held) and the next snapshot or
//!   catalog read ([`Store::heal_for_read`], only when no batch is running: a batch's end
//!   reopens them) close the base file and every open tier file, and open the base file
//!   again. Tier files are opened again on their next use, and their opening undoes any
//!   batch the base file on disk never acknowledged (see `docs/design.md`, "Tiers and
//!   atomicity").
//! - A file closed after a failure is distrusted (its stamp removed), so its next opening
//!   verifies every page.
//!
//! What is on disk is the last committed batch (redb's commits are atomic), so nothing
//! committed is lost: the failed batch is not there, or, when only the base file's final
//! durable commit failed, wholly there (the batch's [`crate::CommitError::Write`] says which
//! is possible). A snapshot begun before the reopening still reads the closed file and fails
//! with an error; the next one reads the reopened file. When reopening fails (no space for
//! redb's recovery of the file, a file gone), every read answers that error, naming the file,
//! and the next call tries again, at most once per [`RETRY`].

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::db::{Inner, OpenOptions, Store, open_file};
use crate::error::{Fault, OpenError, ReadError};
use crate::guard::guarded;

/// How long after a failed reopening the next call may try again.
pub(crate) const RETRY: Duration = Duration::from_millis(500);

/// How long a reopening waits for the calls still holding the closed base file (a catalog
/// read in flight) to let go of it: redb locks the file until it is closed, and a second
/// open of it in the same process would find it in use.
const HOLDERS: Duration = Duration::from_secs(2);

/// What reopening after failures has done in this process.
#[derive(Debug, Default)]
pub(crate) struct HealState {
    /// When reopening was last tried.
    last_try: Option<Instant>,
    /// Why the last reopening failed, while it stays failed.
    last_error: Option<String>,
    /// How many times the files were reopened.
    reopened: u64,
}

/// The fault of a base file that is closed: reopening it after a failure failed.
pub(crate) fn closed_fault(inner: &Inner) -> Fault {
    let why = lock(inner)
        .last_error
        .clone()
        .unwrap_or_else(|| "it is being opened again".to_owned());
    Fault::Engine(redb::Error::Io(std::io::Error::other(format!(
        "the file was closed after a storage failure and could not be opened again: {why}"
    ))))
}

fn lock(inner: &Inner) -> MutexGuard<'_, HealState> {
    inner.heal.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Fault {
    /// Whether the fault is a failed storage call, after which redb refuses every call on the
    /// file until it is opened again.
    pub(crate) fn is_storage_failure(&self) -> bool {
        matches!(
            self,
            Fault::Engine(
                redb::Error::Io(_)
                    | redb::Error::PreviousIo
                    | redb::Error::DatabaseClosed
                    | redb::Error::Backend(_)
            ) | Fault::Damaged(crate::error::Damage::Panic(_))
        )
    }
}

impl Store {
    /// Marks the store for reopening when `fault` is a failed storage call.
    pub(crate) fn note(&self, fault: &Fault) {
        if fault.is_storage_failure() {
            self.inner.poisoned.store(true, Ordering::SeqCst);
        }
    }

    /// `fault` as an error reading the base file, marking the store for reopening when it
    /// is a failed storage call.
    pub(crate) fn read_fault(&self, fault: Fault) -> ReadError {
        self.read_fault_at(fault, self.base_path())
    }

    /// `fault` as an error reading the file at `path`, marking the store for reopening when
    /// it is a failed storage call.
    pub(crate) fn read_fault_at(&self, fault: Fault, path: impl Into<PathBuf>) -> ReadError {
        self.note(&fault);
        fault.read(path)
    }

    /// How many times this store reopened its files after a storage failure.
    pub fn reopened(&self) -> u64 {
        lock(&self.inner).reopened
    }

    /// For readers: reopens the files when a storage failure marked the store and no batch
    /// is running (a running batch reopens them when it ends). A failure to reopen is left
    /// for the read itself to report ([`closed_fault`]).
    pub(crate) fn heal_for_read(&self) {
        if !self.inner.poisoned.load(Ordering::SeqCst) {
            return;
        }
        let writer = match self.inner.writer.try_lock() {
            Ok(w) => w,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let _ = self.heal_locked(&writer);
    }

    /// Reopens the files when a storage failure marked the store; the caller holds the
    /// writer lock, so no batch is running. Fails when the base file cannot be opened again
    /// (or was tried too lately: see [`RETRY`]).
    pub(crate) fn heal_locked(&self, _writer: &MutexGuard<'_, ()>) -> Result<(), OpenError> {
        if !self.inner.poisoned.load(Ordering::SeqCst) {
            return Ok(());
        }
        let path = self.base_path();
        {
            let mut state = lock(&self.inner);
            let closed = self.inner.base_file().is_none();
            if closed
                && let (Some(at), Some(why)) = (state.last_try, state.last_error.as_ref())
                && at.elapsed() < RETRY
            {
                return Err(not_reopened(&path, why));
            }
            state.last_try = Some(Instant::now());
        }
        // No snapshot begins while the files are swapped.
        let _commit = self
            .inner
            .commit_lock
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        self.close_tiers();
        let mut slot = self
            .inner
            .base
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = slot.take() {
            old.stamper.distrust();
            let gone = Arc::downgrade(&old);
            drop(old);
            let start = Instant::now();
            while gone.strong_count() > 0 && start.elapsed() < HOLDERS {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        *self
            .inner
            .catalog_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        let opened = guarded(
            || {
                // A failed storage call inside redb is the crash its commits are made to
                // survive: redb's own recovery on opening suffices, and verifying every page
                // here would keep readers waiting on a large file. The file stays distrusted,
                // so the next process to open it verifies it.
                let options = OpenOptions {
                    verify: crate::stamp::Verify::Never,
                    ..self.inner.options.clone()
                };
                let file = open_file(&path, &options, false, None)?;
                let id = crate::identity::of_base(&file).map_err(|f| f.open(&path))?;
                if id != self.inner.identity {
                    return Err(crate::error::damaged(
                        "the file opened again is another database's (its identity changed)",
                    )
                    .open(&path));
                }
                Ok(file)
            },
            |source| OpenError::Damaged {
                path: path.clone(),
                source,
            },
        );
        let mut state = lock(&self.inner);
        match opened {
            Ok(file) => {
                *slot = Some(Arc::new(file));
                self.inner.poisoned.store(false, Ordering::SeqCst);
                state.reopened += 1;
                state.last_error = None;
                Ok(())
            }
            Err(e) => {
                let why = crate::error::chain(&e);
                state.last_error = Some(why.clone());
                Err(not_reopened(&path, &why))
            }
        }
    }

    /// After a batch failed: reopens the files at once when the failure marked the store,
    /// so that readers need not wait for it. A failure to reopen is left for the next batch
    /// or read to report.
    pub(crate) fn heal_after_batch(&self) {
        if !self.inner.poisoned.load(Ordering::SeqCst) {
            return;
        }
        let writer = self
            .inner
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let _ = self.heal_locked(&writer);
    }

    /// Closes every open tier file (distrusted: verified when next opened); each is opened
    /// again on its next use.
    fn close_tiers(&self) {
        let closed: Vec<_> = self.lock_tiers().drain().collect();
        for (_, file) in &closed {
            file.stamper.distrust();
        }
    }
}

/// The error of a base file that could not be opened again.
fn not_reopened(path: &std::path::Path, why: &str) -> OpenError {
    OpenError::Io {
        path: PathBuf::from(path),
        source: std::io::Error::other(format!(
            "reopening the file after a storage failure failed: {why}"
        )),
    }
}

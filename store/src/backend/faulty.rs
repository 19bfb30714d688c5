//! Storage backends for fault injection, put under the store through
//! [`OpenOptions::backends`](crate::OpenOptions::backends): one that fails the Nth read, write,
//! `set_len` or `sync_data` (counted together over every file the store opens), one that
//! panics at the Nth (as redb does on some damaged pages), and one that simulates a power loss
//! at the Nth such call: that call and every later one fail, and the files keep only what the
//! last completed `sync_data` made durable.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Error, ErrorKind};
use std::ops::Bound;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::Backends;
use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

/// How the Nth call fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Only the Nth call fails; the file holds every write that succeeded.
    Fail,
    /// Power loss: the Nth call and all after it fail, and every write not yet synced is lost.
    Crash,
    /// Only the Nth call panics, inside redb, as redb itself does on some damaged pages (see
    /// the store's `guard`); the file holds every write that succeeded.
    Panic,
}

/// The fault plan shared by every file's backend.
#[derive(Debug)]
pub struct Plan {
    mode: Mode,
    /// The 1-based call that fails.
    at: u64,
    calls: AtomicU64,
    tripped: AtomicBool,
}

impl Plan {
    /// A plan failing call `at` (1-based) of any file.
    pub fn new(mode: Mode, at: u64) -> Arc<Plan> {
        Arc::new(Plan {
            mode,
            at,
            calls: AtomicU64::new(0),
            tripped: AtomicBool::new(false),
        })
    }

    /// Whether the fault happened.
    pub fn tripped(&self) -> bool {
        self.tripped.load(Ordering::SeqCst)
    }

    /// How many calls were counted.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Counts a call; an error when it is to fail.
    fn call(&self, what: &str) -> Result<(), Error> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let fail = match self.mode {
            Mode::Fail | Mode::Panic => n == self.at,
            Mode::Crash => n >= self.at,
        };
        if fail {
            self.tripped.store(true, Ordering::SeqCst);
            if self.mode == Mode::Panic {
                panic!("injected panic: {what} (call {n})");
            }
            return Err(Error::other(format!("injected fault: {what} (call {n})")));
        }
        Ok(())
    }

    /// The factory to put in `OpenOptions::backends`.
    pub fn backends(self: &Arc<Plan>) -> Backends {
        let plan = self.clone();
        Backends(Arc::new(move |_path: &Path, file: File| {
            let inner = FileBackend::new(file.try_clone()?).map_err(Error::other)?;
            let image = match plan.mode {
                Mode::Fail | Mode::Panic => None,
                Mode::Crash => {
                    let len = file.metadata()?.len() as usize;
                    let mut live = vec![0u8; len];
                    file.read_exact_at(&mut live, 0)?;
                    Some(Mutex::new(Image {
                        live,
                        dirty: BTreeSet::new(),
                    }))
                }
            };
            Ok(Box::new(Faulty {
                plan: plan.clone(),
                inner,
                file,
                image,
            }) as Box<dyn StorageBackend>)
        }))
    }
}

const PAGE: u64 = 4096;

/// What a crash-mode backend has not yet made durable.
#[derive(Debug)]
struct Image {
    /// The file as the process sees it.
    live: Vec<u8>,
    /// Pages written since the last sync.
    dirty: BTreeSet<u64>,
}

#[derive(Debug)]
struct Faulty {
    plan: Arc<Plan>,
    /// redb's own backend: every call in `Fail` mode, the locks in both.
    inner: FileBackend,
    file: File,
    /// `Crash` mode: the live bytes, written to `file` only by `sync_data`.
    image: Option<Mutex<Image>>,
}

impl StorageBackend for Faulty {
    fn len(&self) -> Result<u64, Error> {
        match &self.image {
            None => self.inner.len(),
            Some(i) => Ok(i
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .live
                .len() as u64),
        }
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), Error> {
        self.plan.call("read")?;
        let Some(image) = &self.image else {
            return self.inner.read(offset, out);
        };
        let i = image
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let start = offset as usize;
        let Some(bytes) = i.live.get(start..start + out.len()) else {
            return Err(Error::from(ErrorKind::UnexpectedEof));
        };
        out.copy_from_slice(bytes);
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<(), Error> {
        self.plan.call("set_len")?;
        let Some(image) = &self.image else {
            return self.inner.set_len(len);
        };
        image
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .live
            .resize(len as usize, 0);
        Ok(())
    }

    fn sync_data(&self) -> Result<(), Error> {
        self.plan.call("sync_data")?;
        let Some(image) = &self.image else {
            return self.inner.sync_data();
        };
        let mut i = image
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.file.set_len(i.live.len() as u64)?;
        for page in std::mem::take(&mut i.dirty) {
            let start = page * PAGE;
            if start >= i.live.len() as u64 {
                continue;
            }
            let end = (start + PAGE).min(i.live.len() as u64);
            self.file
                .write_all_at(&i.live[start as usize..end as usize], start)?;
        }
        self.file.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), Error> {
        self.plan.call("write")?;
        let Some(image) = &self.image else {
            return self.inner.write(offset, data);
        };
        let mut i = image
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let end = offset as usize + data.len();
        if end > i.live.len() {
            return Err(Error::from(ErrorKind::UnexpectedEof));
        }
        i.live[offset as usize..end].copy_from_slice(data);
        if !data.is_empty() {
            i.dirty.extend(offset / PAGE..=(end as u64 - 1) / PAGE);
        }
        Ok(())
    }

    fn close(&self) -> Result<(), Error> {
        self.inner.close()
    }
    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }
    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }
    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }
    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }
    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }
    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}

//! A hook to choose the redb storage backend of each file a database opens, so tests can put
//! a backend that fails or loses writes under the store (see `store/tests/faults.rs`).
//!
//! Not for production use: without it (the default) every file is opened by path, with
//! redb's own file backend and its file locks.

use std::fmt;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use redb::{BackendError, StorageBackend};

pub mod faulty;

/// What makes a file's backend: given the file's path and the file (opened for reading and
/// writing, created empty when the database creates it), the backend redb reads and writes
/// it through.
pub type MakeBackend =
    dyn Fn(&Path, std::fs::File) -> std::io::Result<Box<dyn StorageBackend>> + Send + Sync;

/// A factory of storage backends, one per file (base and tier files alike), carried by
/// [`OpenOptions::backends`](crate::OpenOptions::backends).
#[derive(Clone)]
pub struct Backends(pub Arc<MakeBackend>);

impl fmt::Debug for Backends {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Backends(..)")
    }
}

/// A boxed backend, which redb's `create_with_backend` takes by value.
#[derive(Debug)]
pub(crate) struct Boxed(pub(crate) Box<dyn StorageBackend>);

impl StorageBackend for Boxed {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.0.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.0.read(offset, out)
    }
    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> Result<(), std::io::Error> {
        self.0.sync_data()
    }
    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        self.0.write(offset, data)
    }
    fn close(&self) -> Result<(), std::io::Error> {
        self.0.close()
    }
    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.0.try_lock_range(start, end)
    }
    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.0.try_lock_shared_range(start, end)
    }
    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.lock_range(start, end)
    }
    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.lock_shared_range(start, end)
    }
    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.0.unlock_range(start, end)
    }
    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.0.query_lock_range(start, end)
    }
}

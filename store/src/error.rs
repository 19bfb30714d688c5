//! The store's one error type.

use std::path::PathBuf;

/// Everything that can go wrong in the store, each variant with a message a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing a file failed.
    #[error("{path}: {cause}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// What the operating system said (part of the message, so not chained again).
        cause: std::io::Error,
    },
    /// Another process (a running `strata serve`, or another ingest) holds the database.
    #[error(
        "{path} is in use by another process (a running `strata serve` or ingest holds it); \
         stop that process or send the work to it, then try again"
    )]
    InUse {
        /// The database file that is locked.
        path: PathBuf,
    },
    /// The directory is not a Strata database.
    #[error(
        "{path} is not a Strata database (no strata.redb in it); create one with `strata ingest`"
    )]
    NotADatabase {
        /// The directory given.
        path: PathBuf,
    },
    /// The database was written by a newer Strata whose format this one cannot read.
    #[error(
        "{path} has format version {found}, but this strata reads version {supported} at most; \
         upgrade strata to open it"
    )]
    NewerFormat {
        /// The file whose version is too new.
        path: PathBuf,
        /// The version stored in it.
        found: u32,
        /// The newest version this build understands.
        supported: u32,
    },
    /// A line of a dump cannot be read; nothing of the batch it belongs to was stored.
    #[error("{file}:{line}: {message}")]
    Malformed {
        /// The dump file (`-` for standard input).
        file: String,
        /// The 1-based line number.
        line: u64,
        /// What is wrong with the line.
        message: String,
    },
    /// A relation named by a batch clashes with what is stored; nothing of the batch was stored.
    #[error("{file}:{line}: {message}")]
    Clash {
        /// The dump file (`-` for standard input).
        file: String,
        /// The 1-based line number of the first fact of the clashing relation.
        line: u64,
        /// What clashes with what, and how to avoid it.
        message: String,
    },
    /// An argument given to the store is not valid (a tier name, a label, a unit).
    #[error("{0}")]
    Invalid(String),
    /// The database holds no relation of that name.
    #[error("no relation named \"{0}\" in this database")]
    UnknownRelation(String),
    /// A tier was committed to by another snapshot's writer after this snapshot began.
    #[error("tier \"{0}\" changed after this read began; run the read again")]
    SnapshotMoved(String),
    /// The database's files do not hold what the format says they must.
    #[error("the database is damaged: {0}; run `strata check` for a full report")]
    Corrupt(String),
    /// A relation or dictionary grew past what the format can address.
    #[error("{0} is full: the format addresses at most 2^31 values and 2^32 rows per relation")]
    Full(String),
    /// Writing a batch failed in the storage engine (a full disk, an I/O error).
    #[error("{dir}: writing batch {seq} failed: {message}; {outcome}")]
    WriteFailed {
        /// The database directory.
        dir: PathBuf,
        /// The sequence number the batch would have had.
        seq: u64,
        /// What the storage engine said.
        message: String,
        /// Whether anything of the batch may have been stored, and what to do.
        outcome: &'static str,
    },
    /// A SCIP index cannot be read; nothing of the batch it belongs to was stored.
    #[error(transparent)]
    Scip(#[from] crate::scip::ScipError),
    /// redb, the storage engine underneath, failed.
    #[error("storage engine: {0}")]
    Engine(#[from] redb::Error),
}

/// Converts every redb error type into [`StoreError::Engine`].
macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self {
                StoreError::Engine(e.into())
            }
        }
    )*};
}

from_redb!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SavepointError
);

impl StoreError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.into(),
            cause: source,
        }
    }
}

impl From<StoreError> for strata_eval::SourceError {
    fn from(e: StoreError) -> Self {
        strata_eval::SourceError::Storage(e.to_string())
    }
}

/// The store's result type.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

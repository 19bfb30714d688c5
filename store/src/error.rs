//! The store's errors, one type per operation, as redb has them: [`OpenError`] (opening a
//! database or a tier file), [`IngestError`] (reading dumps into a batch), [`CommitError`]
//! (writing a batch), [`ReadError`] (snapshots and lookups) and [`CheckError`] (`strata
//! check`). [`StoreError`] is the umbrella for callers that do several of them.
//!
//! Where an error has a cause (an I/O error, redb's error, what does not decode), the cause
//! is its [`std::error::Error::source`] and not part of its own message: render the chain
//! (anyhow's `{:#}`) to show both.

use std::path::PathBuf;

/// What is wrong with bytes the store read back from a file.
#[derive(Debug, thiserror::Error)]
pub enum Damage {
    /// A stored value does not decode as the format says (a column block, a posting, a
    /// dictionary chunk, a catalog entry), or what is stored contradicts the catalog.
    #[error("{0}")]
    Format(String),
    /// redb found its own structures damaged.
    #[error("the storage engine's pages do not hold what they must")]
    Engine(#[source] redb::StorageError),
    /// redb (or the find index's `fst`) panicked on the file's pages, which hold something
    /// it does not expect (see the `guard` module: the store catches the panic as a last
    /// resort).
    #[error("the storage engine failed on the file's pages ({0})")]
    Panic(String),
}

/// Why a database (or one of its tier files) could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The directory is not a Strata database.
    #[error(
        "{path} is not a Strata database (no strata.redb in it); create one with `strata ingest`"
    )]
    NotADatabase {
        /// The directory given.
        path: PathBuf,
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
    /// A file stores a format version no Strata writes (0, or below the oldest).
    #[error(
        "{path} has format version {found}, which no strata writes (this one reads versions \
         {oldest} to {supported}); the file is damaged or not a Strata file"
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// The version stored in it.
        found: u32,
        /// The oldest version this build reads.
        oldest: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// A tier file that is not this database's (another database's base or tier file
    /// copied in under a tier's name).
    #[error("{path}: not a tier file of this database: {why}; move it away")]
    ForeignTier {
        /// The file.
        path: PathBuf,
        /// Why it is not.
        why: String,
    },
    /// The database path names something that is not a directory (a regular file, say).
    #[error(
        "{path} is a file, not a database directory; name the directory that holds strata.redb"
    )]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// A file of the database directory is not a regular file (a FIFO, a device, a
    /// directory), or is of a size no such file has; it is not opened.
    #[error("{path} is {what}, not a regular file of the database; remove it")]
    NotARegularFile {
        /// The file.
        path: PathBuf,
        /// What it is (`a FIFO`, `a directory`...).
        what: String,
    },
    /// Reading, creating or renaming a file or directory failed.
    #[error("{path}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The file does not hold what the format says it must (or a file the catalog names is
    /// missing).
    #[error(
        "{path} is damaged; restore the database from a backup or ingest its dumps again into \
         a new one"
    )]
    Damaged {
        /// The damaged (or missing) file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Damage,
    },
    /// redb, the storage engine underneath, failed in another way.
    #[error("{path}: the storage engine could not open it")]
    Engine {
        /// The file being opened.
        path: PathBuf,
        /// redb's error.
        #[source]
        source: Box<redb::Error>,
    },
}

/// Why reading dumps (or facts, or units to retract) into a batch failed. Nothing of the
/// batch was stored.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// A line of a dump cannot be read.
    #[error("{file}:{line}: {message}")]
    Malformed {
        /// The dump file (`-` for standard input).
        file: String,
        /// The 1-based line number.
        line: u64,
        /// What is wrong with the line.
        message: String,
    },
    /// A relation named by the batch clashes with another of the batch or with what is
    /// stored.
    #[error("{file}:{line}: {message}")]
    Clash {
        /// The dump file (`-` for standard input).
        file: String,
        /// The 1-based line number of the first fact of the clashing relation.
        line: u64,
        /// What clashes with what, and how to avoid it.
        message: String,
    },
    /// An argument given to the store is not valid (a tier name, a relation name, a unit, a
    /// batch id).
    #[error("{0}")]
    Invalid(String),
    /// A dump file could not be opened.
    #[error("{path}")]
    Open {
        /// The file given.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// Reading a dump failed part way (an I/O error, a truncated or damaged `.gz`).
    #[error("{file}:{line}: cannot read")]
    Read {
        /// The dump file (`-` for standard input).
        file: String,
        /// The 1-based line being read when it failed.
        line: u64,
        /// What the reader (the operating system, or the gzip decoder) said.
        #[source]
        source: std::io::Error,
    },
    /// A relation or dictionary grew past what the format can address.
    #[error("{what} is full: the format addresses at most 2^31 values and 2^32 rows per relation")]
    Full {
        /// What is full ("the text dictionary", "relation \"imports\"").
        what: String,
    },
    /// None of the units given to retract states any fact, and the batch has no id (with one,
    /// the empty batch is committed so that a retry is recognised): nothing was committed.
    #[error(
        "no fact is stated by {}: nothing to retract, nothing was committed",
        units_named(.units)
    )]
    UnknownUnits {
        /// The units given.
        units: Vec<String>,
    },
    /// An earlier storage failure of this process (a full disk, an EIO) closed the
    /// database's files, and opening them again failed (the cause says why); the next batch
    /// tries again.
    #[error(
        "{dir}: an earlier storage failure closed the database's files and they could not be \
         opened again; free space or repair the cause, then try again"
    )]
    Poisoned {
        /// The database directory.
        dir: PathBuf,
        /// Why the files could not be opened again.
        #[source]
        source: Box<OpenError>,
    },
    /// What the batch read back from the database (to find stored facts) is damaged.
    #[error("{path} is damaged; run `strata check` on the database for a full report")]
    Damaged {
        /// The damaged file (or the database directory).
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Damage,
    },
    /// The storage engine failed while the batch gathered its facts (a full disk while
    /// facts were written into the batch's uncommitted transaction, say).
    #[error("{path}: the storage engine failed while gathering the batch; nothing was stored")]
    Engine {
        /// The database directory.
        path: PathBuf,
        /// redb's error.
        #[source]
        source: Box<redb::Error>,
    },
    /// A SCIP index cannot be read (`FILE: document N (path): what is wrong`).
    #[error(transparent)]
    Scip(#[from] crate::scip::ScipError),
    /// A tier file the batch writes to could not be opened.
    #[error(transparent)]
    Tier(OpenError),
}

/// Why writing a batch failed.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// The batch was refused before anything was written: starting it, or its last facts
    /// (a clash with a stored relation found when they were written, say). Nothing of the
    /// batch was stored.
    #[error(transparent)]
    Batch(#[from] IngestError),
    /// Writing the batch failed in the storage engine (a full disk, an I/O error).
    #[error(
        "{}: writing batch {seq} failed ({})",
        .dir.display(),
        outcome(*.may_have_landed)
    )]
    Write {
        /// The database directory.
        dir: PathBuf,
        /// The sequence number the batch would have had.
        seq: u64,
        /// Whether the batch may have been stored: only a failure of the final durable
        /// commit leaves that open, and running the same batch again is then safe.
        may_have_landed: bool,
        /// redb's error.
        #[source]
        source: Box<redb::Error>,
    },
    /// A relation or dictionary grew past what the format can address; nothing was stored.
    #[error("{what} is full: the format addresses at most 2^31 values and 2^32 rows per relation")]
    Full {
        /// What is full.
        what: String,
    },
    /// What the batch read back from the database is damaged; nothing was stored.
    #[error("{path} is damaged; run `strata check` on the database for a full report")]
    Damaged {
        /// The damaged file (or the database directory).
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Damage,
    },
    /// A tier file the batch writes to could not be opened; nothing was stored.
    #[error(transparent)]
    Tier(OpenError),
}

/// `unit "a"` or `units "a", "b"`, for messages.
fn units_named(units: &[String]) -> String {
    let quoted: Vec<String> = units.iter().map(|u| format!("\"{u}\"")).collect();
    match quoted.len() {
        1 => format!("unit {}", quoted[0]),
        _ => format!("units {}", quoted.join(", ")),
    }
}

/// What a failed write says about the batch.
fn outcome(may_have_landed: bool) -> &'static str {
    if may_have_landed {
        "the batch may or may not have been stored: run it again (a fact already stored is \
         not stored twice, a committed --batch-id is skipped)"
    } else {
        "nothing of the batch was stored"
    }
}

/// What can go wrong compacting a database ([`crate::compact`], `strata compact`).
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    /// The database did not open (absent, in use by a running `strata serve`, damaged).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Its catalog could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The storage engine failed to compact a file; the file is as it was before, or
    /// compacted in part, and opens either way.
    #[error("{path}: compacting failed in the storage engine")]
    Engine {
        /// The file.
        path: PathBuf,
        /// What redb said.
        #[source]
        source: Box<redb::Error>,
    },
}
/// Why a read (a snapshot, a lookup, the catalog, the dictionary) failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The database holds no relation of that name.
    #[error("no relation named \"{0}\" in this database")]
    UnknownRelation(String),
    /// A tier was committed to by another writer after this snapshot began.
    #[error("tier \"{0}\" changed after this read began; run the read again")]
    SnapshotMoved(String),
    /// A file does not hold what the format says it must.
    #[error("{path} is damaged; run `strata check` on the database for a full report")]
    Damaged {
        /// The damaged file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Damage,
    },
    /// Reading a file's metadata failed.
    #[error("{path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// redb, the storage engine underneath, failed (an I/O error while reading pages).
    #[error("{path}: reading failed in the storage engine")]
    Engine {
        /// The file being read.
        path: PathBuf,
        /// redb's error.
        #[source]
        source: Box<redb::Error>,
    },
    /// A tier file the read needs could not be opened.
    #[error(transparent)]
    Tier(OpenError),
}

/// Why `strata check` could not finish (what it finds wrong while it can read is its
/// report's problems, not an error).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A file is damaged past what the check can read.
    #[error("{path} is damaged past what the check can read")]
    Damaged {
        /// The damaged file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: Damage,
    },
    /// redb, the storage engine underneath, failed (an I/O error while reading pages).
    #[error("{path}: reading failed in the storage engine")]
    Engine {
        /// The file being read.
        path: PathBuf,
        /// redb's error.
        #[source]
        source: Box<redb::Error>,
    },
    /// A tier file could not be opened.
    #[error(transparent)]
    Tier(OpenError),
}

/// Any of the store's errors, for a caller that does several operations.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Opening the database or a tier failed.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Reading dumps into a batch failed.
    #[error(transparent)]
    Ingest(#[from] IngestError),
    /// Writing a batch failed.
    #[error(transparent)]
    Commit(#[from] CommitError),
    /// A read failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The integrity check could not finish.
    #[error(transparent)]
    Check(#[from] CheckError),
}

impl From<ReadError> for strata_eval::SourceError {
    /// An unknown relation stays the engine's own variant; every other read error is kept
    /// whole, with its source chain.
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::UnknownRelation(name) => strata_eval::SourceError::UnknownRelation(name),
            other => strata_eval::SourceError::Store(Box::new(other)),
        }
    }
}

/// A failure below the operations, before it is given the file and the operation it
/// belongs to (crate-internal: every public function returns its operation's error).
#[derive(Debug)]
pub(crate) enum Fault {
    /// redb failed (not damage).
    Engine(redb::Error),
    /// Bytes read back are damaged.
    Damaged(Damage),
    /// A relation or dictionary is full.
    Full(String),
    /// A tier file could not be opened.
    Open(OpenError),
    /// The batch was refused (a clash found while writing).
    Refused(Box<IngestError>),
}

/// Converts every redb error type into a [`Fault`], telling damage from other failures.
macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for Fault {
            fn from(e: $t) -> Self {
                Fault::from_redb(e.into())
            }
        }
    )*};
}

from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SavepointError,
    redb::CompactionError
);

impl From<Damage> for Fault {
    fn from(d: Damage) -> Self {
        Fault::Damaged(d)
    }
}

impl From<OpenError> for Fault {
    fn from(e: OpenError) -> Self {
        Fault::Open(e)
    }
}

impl From<IngestError> for Fault {
    fn from(e: IngestError) -> Self {
        Fault::Refused(Box::new(e))
    }
}

/// A [`Damage::Format`] fault.
pub(crate) fn damaged(what: impl Into<String>) -> Fault {
    Fault::Damaged(Damage::Format(what.into()))
}

impl Fault {
    fn from_redb(e: redb::Error) -> Fault {
        match e {
            redb::Error::Corrupted(m) => {
                Fault::Damaged(Damage::Engine(redb::StorageError::Corrupted(m)))
            }
            // redb latches a failed I/O call and answers every later call so; say what the
            // user can act on (the store reopens the file itself, see `heal`).
            redb::Error::PreviousIo => Fault::Engine(redb::Error::Io(std::io::Error::other(
                "an earlier read or write of the file failed (a full disk, or a failing device), so \
                 this call could not run; the file is opened again at the next call",
            ))),
            other => Fault::Engine(other),
        }
    }

    /// The fault as an error opening `path`.
    pub(crate) fn open(self, path: impl Into<PathBuf>) -> OpenError {
        let path = path.into();
        match self {
            Fault::Engine(redb::Error::Io(source)) => OpenError::Io { path, source },
            Fault::Engine(source) => OpenError::Engine {
                path,
                source: Box::new(source),
            },
            Fault::Damaged(source) => OpenError::Damaged { path, source },
            Fault::Full(what) => OpenError::Damaged {
                path,
                source: Damage::Format(format!("{what} is full")),
            },
            Fault::Open(e) => e,
            Fault::Refused(e) => OpenError::Damaged {
                path,
                source: Damage::Format(e.to_string()),
            },
        }
    }

    /// The fault as an error gathering a batch in the database at `path`.
    pub(crate) fn ingest(self, path: impl Into<PathBuf>) -> IngestError {
        let path = path.into();
        match self {
            Fault::Engine(source) => IngestError::Engine {
                path,
                source: Box::new(source),
            },
            Fault::Damaged(source) => IngestError::Damaged { path, source },
            Fault::Full(what) => IngestError::Full { what },
            Fault::Open(e) => IngestError::Tier(e),
            Fault::Refused(e) => *e,
        }
    }

    /// The fault as an error writing batch `seq` into the database `dir`.
    pub(crate) fn commit(self, dir: impl Into<PathBuf>, seq: u64, landed: bool) -> CommitError {
        let dir = dir.into();
        match self {
            Fault::Engine(source) => CommitError::Write {
                dir,
                seq,
                may_have_landed: landed,
                source: Box::new(source),
            },
            Fault::Damaged(source) => CommitError::Damaged { path: dir, source },
            Fault::Full(what) => CommitError::Full { what },
            Fault::Open(e) => CommitError::Tier(e),
            Fault::Refused(e) => CommitError::Batch(*e),
        }
    }

    /// The fault as an error reading `path`.
    pub(crate) fn read(self, path: impl Into<PathBuf>) -> ReadError {
        let path = path.into();
        match self {
            Fault::Engine(source) => ReadError::Engine {
                path,
                source: Box::new(source),
            },
            Fault::Damaged(source) => ReadError::Damaged { path, source },
            Fault::Full(what) => ReadError::Damaged {
                path,
                source: Damage::Format(format!("{what} is full")),
            },
            Fault::Open(e) => ReadError::Tier(e),
            Fault::Refused(e) => ReadError::Damaged {
                path,
                source: Damage::Format(e.to_string()),
            },
        }
    }

    /// The fault as an error checking `path`.
    pub(crate) fn check(self, path: impl Into<PathBuf>) -> CheckError {
        let path = path.into();
        match self {
            Fault::Engine(source) => CheckError::Engine {
                path,
                source: Box::new(source),
            },
            Fault::Damaged(source) => CheckError::Damaged { path, source },
            Fault::Open(OpenError::Damaged { path, source }) => {
                CheckError::Damaged { path, source }
            }
            Fault::Open(e) => CheckError::Tier(e),
            Fault::Full(what) => CheckError::Damaged {
                path,
                source: Damage::Format(format!("{what} is full")),
            },
            Fault::Refused(e) => CheckError::Damaged {
                path,
                source: Damage::Format(e.to_string()),
            },
        }
    }
}

/// The crate's internal result type.
pub(crate) type Result<T, E = Fault> = std::result::Result<T, E>;

/// An error and its sources, joined with ": ", as the command line prints them.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

//! Ingesting through a running daemon: while `strata serve` holds a database, it listens on
//! a Unix domain socket `DB/strata.sock`, and `strata ingest DB ...` hands its batch over
//! it instead of opening the (locked) database itself. The daemon commits the batch in its
//! own process; calls that start after the commit see the new facts, calls already running
//! keep their snapshot.
//!
//! # Protocol
//!
//! One batch per connection, client first:
//!
//! 1. One JSON header line (at most [`MAX_HEADER_BYTES`], ending in `\n`):
//!    `{"database", "files": [{"label", "format", "relation", "unit"}...], "tier", "replace",
//!    "labels", "batch_id", "buffer"}`. `database` names the database the client means
//!    ([`DatabaseId`]: its directory's device and inode, and path); the daemon refuses a
//!    batch meant for another database (a `strata.sock` linked to another database's
//!    socket). `label` is the name used in messages (the client's path), `format` one of
//!    `edges`, `attrs`, `nodes`, `facts`, `jsonl`; `relation` and `unit` may be null;
//!    `labels` is an object of strings; `buffer` the facts gathered in memory before they
//!    are written (capped by the daemon); `allow_empty` (optional) lets a replacing read of
//!    a SCIP index with no document retract its repository.
//! 2. For each file, in order, its bytes (already decompressed by the client) as frames: a
//!    `u64` little-endian length, then that many bytes; a frame of length 0 ends the file.
//!    A frame holds at most [`MAX_FRAME_BYTES`].
//! 3. The daemon spools the files to an unlinked file in the database directory, without
//!    holding the database's writer: a slow producer delays only itself, and one that sends
//!    nothing for the idle timeout ([`DEFAULT_IDLE_TIMEOUT`]) is dropped with an error,
//!    nothing of its batch stored; so is one too slow for the frame deadline
//!    ([`DEFAULT_FRAME_TIMEOUT`]: the header and the first [`MAX_FRAME_BYTES`] must arrive
//!    within it, and each further [`MAX_FRAME_BYTES`] earns it again), so a client sending a
//!    byte now and then cannot hold one of the [`MAX_CONNECTIONS`] slots for ever. Once every file is spooled it answers status lines
//!    (`"waiting for another ingest (started N s ago)"` as `{"waiting": "..."}` while
//!    another batch commits, then `"committing"` just before the commit starts), reads the
//!    spool into one batch (`Batch::read_dump`), commits it, and answers one JSON line:
//!    `{"ok": {summary fields}}` or `{"error": "message"}` (for a batch that read SCIP
//!    indexes, the summary's `documents` holds `read`, `unchanged`, `replaced`, `added` and
//!    `removed`). A malformed line gives the same
//!    `FILE:LINE: message` as a local ingest, and nothing of the batch is stored. The
//!    daemon may answer an error before it has read everything, then closes the
//!    connection. A connection that ends without an answer tells the client whether the
//!    batch may have landed: not before `"committing"`, perhaps after it.
//!
//! The same socket carries the command line's reads (`strata query`, `stats`, `find`,
//! `ask`...): a first line holding `"read"` is one, answered by the server over its
//! application (`reads`, [`crate::read`]); and its retractions (`strata retract`): a first
//! line holding `"retract"` is one, committed as a batch is (`retract`).
//!
//! The socket is created owner-only (mode 0600). A socket path longer than `sockaddr_un`
//! holds is bound and reached through `/proc/self/fd/N/strata.sock`, `N` a descriptor of
//! the database directory (Linux). A socket file left by a killed daemon is stale: the
//! daemon removes it at startup (it holds the database's lock, so no other daemon can be
//! listening), and removes its own at a clean shutdown; `strata ingest`, having opened the
//! database itself, removes one that nothing listens on.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use strata_store::dump::{self, DumpSpec, Format};
use strata_store::{BatchOptions, BatchSummary, Store};

/// The socket's file name inside the database directory.
pub const SOCKET_FILE: &str = "strata.sock";

/// The longest header line accepted, in bytes.
pub const MAX_HEADER_BYTES: u64 = 1 << 20;

/// The largest frame accepted, in bytes.
pub const MAX_FRAME_BYTES: u64 = crate::deadline::FRAME_UNIT;

/// The most files one batch may name.
pub const MAX_FILES: usize = 100_000;

/// The most facts a batch sent to the daemon may gather in memory before writing: the
/// default buffer (a client may ask for less, not more, of a shared server's memory).
pub const MAX_BUFFER_FACTS: usize = strata_store::BUFFER_FACTS;

/// The most connections served at once (more are answered "busy").
pub const MAX_CONNECTIONS: usize = 16;

/// How long the daemon waits for the next bytes of a client by default before it drops
/// the batch.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a client has by default for its header line and each [`MAX_FRAME_BYTES`] of
/// its batch (at least 140 KB a second) before it loses its slot (the frame deadline of
/// [`crate::deadline`], which the MCP socket's messages have too).
pub use crate::deadline::DEFAULT_FRAME_TIMEOUT;

/// How long a clean shutdown waits for commits in flight.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// The size of the frames the client sends.
const CLIENT_FRAME: usize = 1 << 16;

/// The socket path of the database in `db`.
pub fn socket_path(db: &Path) -> PathBuf {
    db.join(SOCKET_FILE)
}

/// Makes way for a listener at `path`, which only a process holding the database binds:
/// a socket file there is stale and is removed; anything else by that name is left alone
/// and refused. Every socket a server listens on (this one, the MCP socket) starts so.
pub fn clear_stale_socket(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path),
        Ok(_) => Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// One file of a batch, as the header names it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileHeader {
    /// The name used in messages (the client's path, `-` for standard input).
    pub label: String,
    /// `edges`, `attrs`, `nodes`, `facts` or `jsonl`.
    pub format: String,
    /// For `facts`: the relation the file holds.
    #[serde(default)]
    pub relation: Option<String>,
    /// The unit of every fact that names none itself.
    #[serde(default)]
    pub unit: Option<String>,
    /// For a SCIP index: the directory its repository is checked out in (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout: Option<std::path::PathBuf>,
}

impl FileHeader {
    /// The header of a file read with `spec`.
    pub fn from_spec(spec: &DumpSpec) -> FileHeader {
        FileHeader {
            label: spec.label.clone(),
            format: spec.format.name().to_owned(),
            relation: spec.relation.clone(),
            unit: spec.unit.clone(),
            checkout: spec.checkout.clone(),
        }
    }

    fn spec(&self) -> Result<DumpSpec, RequestError> {
        let format = Format::parse(&self.format).ok_or_else(|| RequestError::Format {
            label: self.label.clone(),
            format: self.format.clone(),
        })?;
        if format == Format::Facts && self.relation.is_none() {
            return Err(RequestError::NoRelation {
                label: self.label.clone(),
            });
        }
        if let Some(r) = &self.relation
            && !dump::valid_name(r)
        {
            return Err(RequestError::RelationName {
                label: self.label.clone(),
                relation: r.clone(),
            });
        }
        Ok(DumpSpec {
            label: self.label.clone(),
            format,
            relation: self.relation.clone(),
            unit: self.unit.clone(),
            checkout: self.checkout.clone(),
        })
    }
}

/// Why the daemon refused a batch sent to it: the message the client prints.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// Reading the request failed.
    #[error("reading the request: {0}")]
    Read(#[source] std::io::Error),
    /// The header line is longer than allowed.
    #[error("the request's header line is longer than {0} bytes")]
    HeaderTooLong(u64),
    /// The request ended inside its header line.
    #[error("the request ended before its header line did")]
    HeaderUnended,
    /// The header is not the JSON this protocol reads.
    #[error("the request's header is not valid: {0}")]
    Header(#[source] serde_json::Error),
    /// More files than [`MAX_FILES`].
    #[error("a batch may name at most {MAX_FILES} files, not {0}")]
    TooManyFiles(usize),
    /// A file's format is not one of the dumps'.
    #[error("{label}: unknown format \"{format}\": use edges, attrs, nodes, facts or jsonl")]
    Format {
        /// The file, as the client named it.
        label: String,
        /// The format given.
        format: String,
    },
    /// A `.facts` file without its relation.
    #[error("{label}: a .facts dump needs a relation")]
    NoRelation {
        /// The file, as the client named it.
        label: String,
    },
    /// A relation name no relation may have.
    #[error("{label}: \"{relation}\" cannot name a relation: use letters, digits, `_` and `-`")]
    RelationName {
        /// The file, as the client named it.
        label: String,
        /// The name given.
        relation: String,
    },
    /// Reading a file's frames failed.
    #[error("{label}: reading the request: {source}")]
    Frames {
        /// The file, as the client named it.
        label: String,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// The batch was meant for another database: the socket it came through is not this
    /// database's own (a link to another database's socket).
    #[error(
        "{}: this socket belongs to the server of {served}, not of {}; \
         remove the link {} and retry",
        .asked.path, .asked.path, socket_path(Path::new(&.asked.path)).display()
    )]
    WrongDatabase {
        /// The database the client meant.
        asked: DatabaseId,
        /// The database this daemon serves.
        served: String,
    },
    /// The client sent nothing for the idle timeout.
    #[error(
        "{label}: no bytes from the client for {} s (the server's idle timeout); \
         nothing of the batch was stored",
        .timeout.as_secs()
    )]
    Stalled {
        /// The file being received.
        label: String,
        /// The idle timeout.
        timeout: Duration,
    },
    /// The client delivered its batch too slowly for the frame deadline.
    #[error(
        "{label}: the client was too slow: the header and each {} MiB of a batch must \
         arrive within {} s (the server's frame deadline); the connection is closed and \
         nothing of the batch was stored",
        MAX_FRAME_BYTES >> 20,
        .deadline.as_secs_f64()
    )]
    TooSlow {
        /// What was being received: a file, or the request's header.
        label: String,
        /// The frame deadline.
        deadline: Duration,
    },
    /// Spooling the batch to the database directory failed.
    #[error("spooling the batch in the database directory: {0}; nothing of it was stored")]
    Spool(#[source] std::io::Error),
    /// The store refused the batch (a malformed line, a full disk, ...); nothing of it
    /// was stored. The message is the error and its sources, as the client prints it.
    #[error("{}", crate::read::error_text(.0.as_ref()))]
    Store(Box<dyn std::error::Error + Send + Sync>),
}

impl RequestError {
    pub(super) fn store<E: std::error::Error + Send + Sync + 'static>(e: E) -> RequestError {
        RequestError::Store(Box::new(e))
    }
}

/// The header line of a batch.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// The database the batch is meant for.
    pub database: DatabaseId,
    /// The files, in the order their bytes follow.
    pub files: Vec<FileHeader>,
    /// The tier new relations go to.
    pub tier: String,
    /// Replace every stored fact of each unit the batch names.
    #[serde(default)]
    pub replace: bool,
    /// Labels recorded with the batch.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// An id that makes a retry a no-op.
    #[serde(default)]
    pub batch_id: Option<String>,
    /// Facts gathered in memory before they are written.
    #[serde(default = "default_buffer")]
    pub buffer: usize,
    /// Let a replacing read of a SCIP index with no document retract its repository.
    #[serde(default)]
    pub allow_empty: bool,
    /// Relations to index on some columns only: each relation's indexed columns.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub indexes: BTreeMap<String, Vec<String>>,
}

fn default_buffer() -> usize {
    strata_store::BUFFER_FACTS
}

impl Header {
    /// The header for a batch into `database` with `options` reading files with `specs`.
    pub fn new(database: DatabaseId, options: &BatchOptions, specs: &[DumpSpec]) -> Header {
        Header {
            database,
            files: specs.iter().map(FileHeader::from_spec).collect(),
            tier: options.tier.clone(),
            replace: options.replace,
            labels: options.labels.clone(),
            batch_id: options.batch_id.clone(),
            buffer: options.buffer_facts,
            allow_empty: options.allow_empty,
            indexes: options.indexes.clone(),
        }
    }
}

/// The summary the daemon answers, [`BatchSummary`] with times in seconds.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct WireSummary {
    seq: u64,
    already_committed: bool,
    facts_read: u64,
    new: u64,
    duplicates: u64,
    removed: u64,
    relations: Vec<String>,
    unknown_units: Vec<String>,
    /// For a batch that read SCIP indexes: their documents and what became of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    documents: Option<Box<WireDocuments>>,
    /// The columns whose index the batch built or dropped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    indexes: Vec<WireIndexChange>,
    elapsed: f64,
    read_time: f64,
    write_time: f64,
    sync_time: f64,
}

/// [`strata_store::scip::DocumentChanges`] on the wire.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct WireDocuments {
    read: u64,
    unchanged: u64,
    replaced: u64,
    added: u64,
    removed: u64,
    #[serde(default)]
    repaired: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<WireSkipped>,
    /// The checkouts source files were hashed from, and how many were or were not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    checkouts: Vec<String>,
    #[serde(default)]
    sources_hashed: u64,
    #[serde(default)]
    sources_unreadable: u64,
    #[serde(default)]
    merged: u64,
}

/// [`strata_store::IndexChange`] on the wire.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct WireIndexChange {
    relation: String,
    column: String,
    built: bool,
    values: u64,
}

/// [`strata_store::scip::SkippedDocument`] on the wire.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct WireSkipped {
    number: u64,
    path: String,
    why: String,
}

impl From<&strata_store::scip::DocumentChanges> for WireDocuments {
    fn from(d: &strata_store::scip::DocumentChanges) -> Self {
        WireDocuments {
            read: d.read,
            unchanged: d.unchanged,
            replaced: d.replaced,
            added: d.added,
            removed: d.removed,
            repaired: d.repaired,
            merged: d.merged,
            skipped: d
                .skipped
                .iter()
                .map(|s| WireSkipped {
                    number: s.number,
                    path: s.path.clone(),
                    why: s.why.clone(),
                })
                .collect(),
            checkouts: d.sources.checkouts.clone(),
            sources_hashed: d.sources.hashed,
            sources_unreadable: d.sources.unreadable,
        }
    }
}

impl From<WireDocuments> for strata_store::scip::DocumentChanges {
    fn from(d: WireDocuments) -> Self {
        strata_store::scip::DocumentChanges {
            read: d.read,
            unchanged: d.unchanged,
            replaced: d.replaced,
            added: d.added,
            removed: d.removed,
            repaired: d.repaired,
            merged: d.merged,
            skipped: d
                .skipped
                .into_iter()
                .map(|s| strata_store::scip::SkippedDocument {
                    number: s.number,
                    path: s.path,
                    why: s.why,
                })
                .collect(),
            sources: strata_store::scip::SourceCounts {
                checkouts: d.checkouts,
                hashed: d.sources_hashed,
                unreadable: d.sources_unreadable,
            },
        }
    }
}

impl From<&BatchSummary> for WireSummary {
    fn from(s: &BatchSummary) -> Self {
        WireSummary {
            seq: s.seq,
            already_committed: s.already_committed,
            facts_read: s.facts_read,
            new: s.new,
            duplicates: s.duplicates,
            removed: s.removed,
            relations: s.relations.clone(),
            unknown_units: s.unknown_units.clone(),
            documents: s
                .documents
                .as_ref()
                .map(|d| Box::new(WireDocuments::from(d))),
            indexes: s
                .indexes
                .iter()
                .map(|c| WireIndexChange {
                    relation: c.relation.clone(),
                    column: c.column.clone(),
                    built: c.built,
                    values: c.values,
                })
                .collect(),
            elapsed: s.elapsed.as_secs_f64(),
            read_time: s.read_time.as_secs_f64(),
            write_time: s.write_time.as_secs_f64(),
            sync_time: s.sync_time.as_secs_f64(),
        }
    }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_default()
}

impl From<WireSummary> for BatchSummary {
    fn from(s: WireSummary) -> Self {
        BatchSummary {
            seq: s.seq,
            already_committed: s.already_committed,
            facts_read: s.facts_read,
            new: s.new,
            duplicates: s.duplicates,
            removed: s.removed,
            relations: s.relations,
            unknown_units: s.unknown_units,
            documents: s.documents.map(|d| (*d).into()),
            indexes: s
                .indexes
                .into_iter()
                .map(|c| strata_store::IndexChange {
                    relation: c.relation,
                    column: c.column,
                    built: c.built,
                    values: c.values,
                })
                .collect(),
            elapsed: secs(s.elapsed),
            read_time: secs(s.read_time),
            write_time: secs(s.write_time),
            sync_time: secs(s.sync_time),
        }
    }
}

/// The daemon's answer line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
enum Reply {
    /// The batch committed.
    Ok(WireSummary),
    /// The batch was refused or failed; nothing of it was stored.
    Error(String),
    /// A status line: the batch waits for another one to commit.
    Waiting(String),
    /// A status line: the commit starts now (from here a lost connection means the batch
    /// may have landed).
    Committing,
}

mod address;
mod client;
mod daemon;
#[cfg(test)]
mod hardening;
mod reads;
mod retract;
mod spool;

pub use address::DatabaseId;
pub use client::{SendError, remove_stale_socket, send_batch, server_listens};
use daemon::Frames;
use daemon::Shared;
pub use daemon::{IngestListener, ListenerOptions};
pub(crate) use daemon::{Request, parse_request, read_line};
pub use reads::{ReadSendError, send_read};
pub use retract::send_retract;
pub(crate) use spool::receive_frames;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::fuzz::frames;

    #[test]
    fn frames_read_back_as_one_stream() {
        let mut bytes = frames(&[b"ab", b"", b"cde"]);
        bytes.extend_from_slice(b"rest");
        let mut r = std::io::Cursor::new(bytes);
        let mut f = Frames {
            inner: &mut r,
            left: 0,
            done: false,
        };
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        // An empty frame ends the file.
        assert_eq!(s, "ab");
    }

    #[test]
    fn oversized_and_truncated_frames_are_errors() {
        let mut r = std::io::Cursor::new((MAX_FRAME_BYTES + 1).to_le_bytes().to_vec());
        let mut f = Frames {
            inner: &mut r,
            left: 0,
            done: false,
        };
        assert!(f.read_to_end(&mut Vec::new()).is_err());
        let mut bytes = 10u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(b"abc");
        let mut r = std::io::Cursor::new(bytes);
        let mut f = Frames {
            inner: &mut r,
            left: 0,
            done: false,
        };
        assert!(f.read_to_end(&mut Vec::new()).is_err());
    }

    #[test]
    fn the_header_line_is_capped() {
        let long = [b'x'; 100];
        assert!(read_line(&mut &long[..], 10, DEFAULT_FRAME_TIMEOUT).is_err());
        assert!(read_line(&mut &b"abc"[..], 10, DEFAULT_FRAME_TIMEOUT).is_err());
        assert_eq!(
            read_line(&mut &b"abc\nrest"[..], 10, DEFAULT_FRAME_TIMEOUT).unwrap(),
            b"abc"
        );
    }

    #[test]
    fn a_header_is_validated() {
        let h = |s: &str| {
            let s = s.replacen('{', r#"{"database":{"dev":1,"ino":2,"path":"db"},"#, 1);
            serde_json::from_str::<Header>(&s)
        };
        assert!(h(r#"{"files":[],"tier":"default","bogus":1}"#).is_err());
        assert!(serde_json::from_str::<Header>(r#"{"files":[],"tier":"default"}"#).is_err());
        let bad = h(r#"{"files":[{"label":"x","format":"csv"}],"tier":"default"}"#).unwrap();
        assert!(
            bad.files[0]
                .spec()
                .unwrap_err()
                .to_string()
                .contains("unknown format")
        );
        let bad = h(r#"{"files":[{"label":"x","format":"facts"}],"tier":"default"}"#).unwrap();
        assert!(bad.files[0].spec().is_err());
        let bad =
            h(r#"{"files":[{"label":"x","format":"facts","relation":"a b"}],"tier":"default"}"#)
                .unwrap();
        assert!(bad.files[0].spec().is_err());
    }

    #[test]
    fn a_batch_goes_through_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let store = hardening::open(dir.path());
        let listener = IngestListener::bind(store.clone()).unwrap();
        assert!(server_listens(dir.path()));
        let spec = DumpSpec {
            label: "x.edges.tsv".into(),
            format: Format::Edges,
            relation: None,
            unit: None,
            checkout: None,
        };
        let files = tempfile::tempdir().unwrap();
        let good = files.path().join("x.edges.tsv");
        std::fs::write(&good, "a\tIMPORTS\tb\nb\tIMPORTS\tc\n").unwrap();
        let s = send_batch(
            dir.path(),
            &BatchOptions::default(),
            &[(good, spec.clone())],
        )
        .unwrap();
        assert_eq!((s.facts_read, s.new), (2, 2));
        assert_eq!(store.snapshot().unwrap().seq(), s.seq);
        // A malformed line: FILE:LINE, and nothing stored.
        let bad = files.path().join("bad.edges.tsv");
        std::fs::write(&bad, "a\tIMPORTS\tz\nonly-one-field\n").unwrap();
        let e =
            send_batch(dir.path(), &BatchOptions::default(), &[(bad, spec.clone())]).unwrap_err();
        assert!(e.to_string().starts_with("x.edges.tsv:2: "), "{e}");
        assert_eq!(store.snapshot().unwrap().seq(), s.seq);
        // A missing local file fails here, and the daemon stays usable.
        let e = send_batch(
            dir.path(),
            &BatchOptions::default(),
            &[(files.path().join("none.edges.tsv"), spec)],
        )
        .unwrap_err();
        assert!(matches!(e, SendError::Local(_)), "{e}");
        // Garbage is refused without harm.
        let mut c = UnixStream::connect(socket_path(dir.path())).unwrap();
        c.write_all(b"{nope\n").unwrap();
        let mut answer = String::new();
        BufReader::new(c).read_line(&mut answer).unwrap();
        assert!(answer.contains("\"error\""), "{answer}");
        drop(listener);
        assert!(!socket_path(dir.path()).exists());
    }

    #[test]
    fn a_retraction_goes_through_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let store = hardening::open(dir.path());
        let mut batch = store.batch(BatchOptions::default()).unwrap();
        let spec = DumpSpec {
            label: "x.edges.tsv".into(),
            format: Format::Edges,
            relation: None,
            unit: Some("u".into()),
            checkout: None,
        };
        batch
            .read_dump(&b"a\tIMPORTS\tb\nb\tIMPORTS\tc\n"[..], &spec)
            .unwrap();
        batch.commit().unwrap();
        let _listener = IngestListener::bind(store.clone()).unwrap();
        let options = BatchOptions {
            batch_id: Some("r".into()),
            labels: [("k".to_owned(), "v".to_owned())].into(),
            ..BatchOptions::default()
        };
        let units = ["u".to_owned(), "none".to_owned()];
        let s = send_retract(dir.path(), &units, &options).unwrap();
        assert_eq!((s.seq, s.removed), (2, 2));
        assert_eq!(s.unknown_units, ["none"]);
        let snap = store.snapshot().unwrap();
        assert_eq!(snap.seq(), 2);
        // Its id makes a retry a no-op.
        let again = send_retract(dir.path(), &units, &options).unwrap();
        assert!(again.already_committed);
        // Nothing to retract: the store's own error, nothing committed.
        let e = send_retract(dir.path(), &units[1..], &BatchOptions::default()).unwrap_err();
        assert!(
            e.to_string().contains("no fact is stated by unit \"none\""),
            "{e}"
        );
        assert_eq!(store.snapshot().unwrap().seq(), 2);
    }
}

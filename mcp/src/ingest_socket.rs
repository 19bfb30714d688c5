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
//!    `{"files": [{"label", "format", "relation", "unit"}...], "tier", "replace", "labels",
//!    "batch_id", "buffer"}`. `label` is the name used in messages (the client's path),
//!    `format` one of `edges`, `attrs`, `nodes`, `facts`, `jsonl`; `relation` and `unit` may
//!    be null; `labels` is an object of strings; `buffer` the facts gathered in memory
//!    before they are written (capped by the daemon).
//! 2. For each file, in order, its bytes (already decompressed by the client) as frames: a
//!    `u64` little-endian length, then that many bytes; a frame of length 0 ends the file.
//!    A frame holds at most [`MAX_FRAME_BYTES`].
//! 3. The daemon reads every file into one batch (`Batch::read_dump`), commits it, and
//!    answers one JSON line: `{"ok": {summary fields}}` or `{"error": "message"}`. A
//!    malformed line gives the same `FILE:LINE: message` as a local ingest, and nothing of
//!    the batch is stored. The daemon may answer an error before it has read everything,
//!    then closes the connection.
//!
//! The socket is created owner-only (mode 0600). A socket file left by a killed daemon is
//! stale: the daemon removes it at startup (it holds the database's lock, so no other
//! daemon can be listening), and removes its own at a clean shutdown; `strata ingest`,
//! having opened the database itself, removes one that nothing listens on.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::model::error_chain;
use serde::{Deserialize, Serialize};
use strata_store::dump::{self, DumpSpec, Format};
use strata_store::{BatchOptions, BatchSummary, Store};

/// The socket's file name inside the database directory.
pub const SOCKET_FILE: &str = "strata.sock";

/// The longest header line accepted, in bytes.
pub const MAX_HEADER_BYTES: u64 = 1 << 20;

/// The largest frame accepted, in bytes.
pub const MAX_FRAME_BYTES: u64 = 16 << 20;

/// The most files one batch may name.
pub const MAX_FILES: usize = 100_000;

/// The most facts a batch sent to the daemon may gather in memory before writing.
pub const MAX_BUFFER_FACTS: usize = 4 * strata_store::BUFFER_FACTS;

/// The most connections served at once (more are answered "busy").
const MAX_CONNECTIONS: usize = 16;

/// How long the daemon waits for the next bytes of a client before giving up.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a clean shutdown waits for batches in flight.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// The size of the frames the client sends.
const CLIENT_FRAME: usize = 1 << 16;

/// The socket path of the database in `db`.
pub fn socket_path(db: &Path) -> PathBuf {
    db.join(SOCKET_FILE)
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
}

impl FileHeader {
    /// The header of a file read with `spec`.
    pub fn from_spec(spec: &DumpSpec) -> FileHeader {
        FileHeader {
            label: spec.label.clone(),
            format: format_name(spec.format).to_owned(),
            relation: spec.relation.clone(),
            unit: spec.unit.clone(),
        }
    }

    fn spec(&self) -> Result<DumpSpec, String> {
        let format = Format::parse(&self.format).ok_or_else(|| {
            format!(
                "{}: unknown format \"{}\": use edges, attrs, nodes, facts or jsonl",
                self.label, self.format
            )
        })?;
        if format == Format::Facts && self.relation.is_none() {
            return Err(format!("{}: a .facts dump needs a relation", self.label));
        }
        if let Some(r) = &self.relation
            && !dump::valid_name(r)
        {
            return Err(format!(
                "{}: \"{r}\" cannot name a relation: use letters, digits, `_` and `-`",
                self.label
            ));
        }
        Ok(DumpSpec {
            label: self.label.clone(),
            format,
            relation: self.relation.clone(),
            unit: self.unit.clone(),
        })
    }
}

/// The header line of a batch.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
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
}

fn default_buffer() -> usize {
    strata_store::BUFFER_FACTS
}

impl Header {
    /// The header for a batch with `options` reading files with `specs`.
    pub fn new(options: &BatchOptions, specs: &[DumpSpec]) -> Header {
        Header {
            files: specs.iter().map(FileHeader::from_spec).collect(),
            tier: options.tier.clone(),
            replace: options.replace,
            labels: options.labels.clone(),
            batch_id: options.batch_id.clone(),
            buffer: options.buffer_facts,
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
    elapsed: f64,
    read_time: f64,
    write_time: f64,
    sync_time: f64,
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
    Ok(WireSummary),
    Error(String),
}

/// The name [`Format::parse`] reads back.
fn format_name(f: Format) -> &'static str {
    f.name()
}

// ---- the daemon's side ----------------------------------------------------------------------

/// The daemon's listener. Dropping it stops accepting, waits (a while) for batches in
/// flight, and removes the socket file.
pub struct IngestListener {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    active: Arc<(Mutex<usize>, Condvar)>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for IngestListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IngestListener")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl IngestListener {
    /// Listens on `DB/strata.sock` for batches to commit into `store`, which this process
    /// holds. A socket file already there is stale (this process holds the database's
    /// lock) and is removed first; anything else by that name is left alone and refused.
    pub fn bind(store: Store) -> std::io::Result<IngestListener> {
        let path = socket_path(store.dir());
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_socket() => std::fs::remove_file(&path)?,
            Ok(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a socket", path.display()),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        let stop = Arc::new(AtomicBool::new(false));
        let active = Arc::new((Mutex::new(0usize), Condvar::new()));
        let accept = {
            let stop = Arc::clone(&stop);
            let active = Arc::clone(&active);
            std::thread::Builder::new()
                .name("strata-ingest-socket".to_owned())
                .spawn(move || accept_loop(&listener, &store, &stop, &active))?
        };
        Ok(IngestListener {
            path,
            stop,
            active,
            accept: Some(accept),
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for IngestListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = UnixStream::connect(&self.path);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&self.path);
        let (count, cv) = &*self.active;
        let mut n = count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let deadline = std::time::Instant::now() + DRAIN_TIMEOUT;
        while *n > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            n = match cv.wait_timeout(n, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}

/// Counts a connection as active while alive.
struct Active(Arc<(Mutex<usize>, Condvar)>);

impl Drop for Active {
    fn drop(&mut self) {
        let (count, cv) = &*self.0;
        let mut n = count
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *n = n.saturating_sub(1);
        cv.notify_all();
    }
}

fn accept_loop(
    listener: &UnixListener,
    store: &Store,
    stop: &AtomicBool,
    active: &Arc<(Mutex<usize>, Condvar)>,
) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut conn) = conn else { continue };
        let guard = {
            let (count, _) = &**active;
            let mut n = count
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if *n >= MAX_CONNECTIONS {
                drop(n);
                let _ = write_reply(
                    &mut conn,
                    &Reply::Error("the server is busy with other batches; try again".to_owned()),
                );
                continue;
            }
            *n += 1;
            Active(Arc::clone(active))
        };
        let store = store.clone();
        let spawned = std::thread::Builder::new()
            .name("strata-ingest".to_owned())
            .spawn(move || {
                let _guard = guard;
                serve_connection(conn, &store);
            });
        if let Err(e) = spawned {
            eprintln!("strata: cannot serve an ingest connection: {e}");
        }
    }
}

fn serve_connection(conn: UnixStream, store: &Store) {
    let _ = conn.set_read_timeout(Some(READ_TIMEOUT));
    let _ = conn.set_write_timeout(Some(READ_TIMEOUT));
    let Ok(mut writer) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::with_capacity(1 << 16, conn);
    let reply = match run_batch(&mut reader, store) {
        Ok(summary) => {
            eprintln!(
                "strata: batch {} committed from `strata ingest`: {} facts read, {} new",
                summary.seq, summary.facts_read, summary.new
            );
            Reply::Ok(WireSummary::from(&summary))
        }
        Err(message) => Reply::Error(message),
    };
    let _ = write_reply(&mut writer, &reply);
}

fn write_reply(w: &mut impl Write, reply: &Reply) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(reply).map_err(std::io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line)?;
    w.flush()
}

/// Reads one `\n`-ended line of at most `max` bytes.
fn read_line(r: &mut impl BufRead, max: u64) -> Result<Vec<u8>, String> {
    let mut line = Vec::new();
    r.take(max + 1)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("reading the request: {e}"))?;
    if line.last() != Some(&b'\n') {
        return Err(if line.len() as u64 > max {
            format!("the request's header line is longer than {max} bytes")
        } else {
            "the request ended before its header line did".to_owned()
        });
    }
    line.pop();
    Ok(line)
}

fn run_batch(reader: &mut impl BufRead, store: &Store) -> Result<BatchSummary, String> {
    let line = read_line(reader, MAX_HEADER_BYTES)?;
    let header: Header = serde_json::from_slice(&line)
        .map_err(|e| format!("the request's header is not valid: {e}"))?;
    if header.files.len() > MAX_FILES {
        return Err(format!(
            "a batch may name at most {MAX_FILES} files, not {}",
            header.files.len()
        ));
    }
    let specs = header
        .files
        .iter()
        .map(FileHeader::spec)
        .collect::<Result<Vec<_>, _>>()?;
    let options = BatchOptions {
        tier: header.tier,
        replace: header.replace,
        labels: header.labels,
        batch_id: header.batch_id,
        buffer_facts: header.buffer.clamp(1, MAX_BUFFER_FACTS),
    };
    let mut batch = store.batch(options).map_err(|e| error_chain(&e))?;
    for spec in &specs {
        let mut frames = Frames {
            inner: &mut *reader,
            left: 0,
            done: false,
        };
        batch
            .read_dump(&mut frames, spec)
            .map_err(|e| error_chain(&e))?;
        // A reader that stopped before the end (it should not): skip the rest.
        std::io::copy(&mut frames, &mut std::io::sink())
            .map_err(|e| format!("{}: reading the request: {e}", spec.label))?;
    }
    batch.commit().map_err(|e| error_chain(&e))
}

/// One file's bytes: frames of `u64` LE length and bytes, ended by a frame of length 0.
struct Frames<'a, R> {
    inner: &'a mut R,
    left: u64,
    done: bool,
}

impl<R: BufRead> Read for Frames<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Frames<'_, R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        while !self.done && self.left == 0 {
            let mut len = [0u8; 8];
            self.inner.read_exact(&mut len)?;
            let len = u64::from_le_bytes(len);
            if len > MAX_FRAME_BYTES {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("a frame of {len} bytes is larger than the {MAX_FRAME_BYTES} allowed"),
                ));
            }
            if len == 0 {
                self.done = true;
            }
            self.left = len;
        }
        if self.done {
            return Ok(&[]);
        }
        let left = usize::try_from(self.left).unwrap_or(usize::MAX);
        let buf = self.inner.fill_buf()?;
        if buf.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the request ended inside a frame",
            ));
        }
        let n = buf.len().min(left);
        Ok(&buf[..n])
    }

    fn consume(&mut self, amt: usize) {
        let amt = amt.min(usize::try_from(self.left).unwrap_or(usize::MAX));
        self.inner.consume(amt);
        self.left -= amt as u64;
    }
}

// ---- the client's side ----------------------------------------------------------------------

/// Why handing a batch to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// No daemon listens on the database's socket (none there, or a stale one).
    #[error("no server listens on {0}")]
    NoServer(PathBuf),
    /// Reading a local dump failed; nothing was committed.
    #[error("{0}")]
    Local(String),
    /// Talking to the daemon failed.
    #[error("{0}")]
    Io(String),
    /// The daemon refused or failed the batch; the message is its own (`FILE:LINE: ...`
    /// for a malformed dump).
    #[error("{0}")]
    Refused(String),
}

/// Whether a daemon listens on the socket of the database in `db`.
pub fn server_listens(db: &Path) -> bool {
    UnixStream::connect(socket_path(db)).is_ok()
}

/// Removes `DB/strata.sock` when it is a socket nothing listens on (left by a killed
/// daemon). Call it only while holding the database, so no daemon can be starting.
/// Answers whether a stale socket was removed.
pub fn remove_stale_socket(db: &Path) -> bool {
    let path = socket_path(db);
    let is_socket = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_socket());
    if !is_socket {
        return false;
    }
    match UnixStream::connect(&path) {
        Ok(_) => false,
        Err(_) => std::fs::remove_file(&path).is_ok(),
    }
}

/// Hands a batch to the daemon holding the database in `db`: each file is read here (`-`
/// for standard input, gzip decompressed as the store does) and streamed to the daemon with
/// its spec. Answers the daemon's summary of the committed batch.
pub fn send_batch(
    db: &Path,
    options: &BatchOptions,
    files: &[(PathBuf, DumpSpec)],
) -> Result<BatchSummary, SendError> {
    let path = socket_path(db);
    let conn = UnixStream::connect(&path).map_err(|_| SendError::NoServer(path.clone()))?;
    let mut reader = BufReader::new(
        conn.try_clone()
            .map_err(|e| SendError::Io(format!("{}: {e}", path.display())))?,
    );
    let specs: Vec<DumpSpec> = files.iter().map(|(_, s)| s.clone()).collect();
    let header = Header::new(options, &specs);
    let mut writer = std::io::BufWriter::with_capacity(CLIENT_FRAME + 8, &conn);
    let sent = send_body(&mut writer, &header, files);
    drop(writer);
    if let Err(SendError::Local(e)) = sent {
        // Nothing will follow: the daemon drops the batch when the connection ends.
        let _ = conn.shutdown(std::net::Shutdown::Both);
        return Err(SendError::Local(e));
    }
    // A write that failed means the daemon answered early (an error) and closed: read it.
    let mut line = Vec::new();
    let answered = reader.read_until(b'\n', &mut line);
    let reply: Option<Reply> = match answered {
        Ok(_) if line.ends_with(b"\n") => serde_json::from_slice(&line).ok(),
        _ => None,
    };
    match (reply, sent) {
        (Some(Reply::Ok(s)), Ok(())) => Ok(s.into()),
        (Some(Reply::Error(m)), _) => Err(SendError::Refused(m)),
        (_, Err(e)) => Err(e),
        (None, Ok(())) => Err(SendError::Io(format!(
            "{}: the server closed the connection without answering; the batch may not \
             have been committed (retry with the same --batch-id to be sure)",
            path.display()
        ))),
    }
}

fn send_body(
    w: &mut impl Write,
    header: &Header,
    files: &[(PathBuf, DumpSpec)],
) -> Result<(), SendError> {
    let sock = |e: std::io::Error| SendError::Io(format!("sending to the server: {e}"));
    let mut line = serde_json::to_vec(header).map_err(|e| SendError::Io(e.to_string()))?;
    line.push(b'\n');
    w.write_all(&line).map_err(sock)?;
    let mut buf = vec![0u8; CLIENT_FRAME];
    for (path, spec) in files {
        let mut input = dump::open(path).map_err(|e| SendError::Local(error_chain(&e)))?;
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(SendError::Local(format!("{}: {e}", spec.label))),
            };
            w.write_all(&(n as u64).to_le_bytes()).map_err(sock)?;
            w.write_all(&buf[..n]).map_err(sock)?;
        }
        w.write_all(&0u64.to_le_bytes()).map_err(sock)?;
    }
    w.flush().map_err(sock)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn frames(parts: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in parts {
            out.extend_from_slice(&(p.len() as u64).to_le_bytes());
            out.extend_from_slice(p);
        }
        out.extend_from_slice(&0u64.to_le_bytes());
        out
    }

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
        assert!(read_line(&mut &long[..], 10).is_err());
        assert!(read_line(&mut &b"abc"[..], 10).is_err());
        assert_eq!(read_line(&mut &b"abc\nrest"[..], 10).unwrap(), b"abc");
    }

    #[test]
    fn a_header_is_validated() {
        let h = |s: &str| serde_json::from_str::<Header>(s);
        assert!(h(r#"{"files":[],"tier":"default","bogus":1}"#).is_err());
        let bad = h(r#"{"files":[{"label":"x","format":"csv"}],"tier":"default"}"#).unwrap();
        assert!(bad.files[0].spec().unwrap_err().contains("unknown format"));
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
        let store = Store::open(
            dir.path(),
            strata_store::OpenOptions {
                create: true,
                ..Default::default()
            },
        )
        .unwrap();
        let listener = IngestListener::bind(store.clone()).unwrap();
        assert!(server_listens(dir.path()));
        let spec = DumpSpec {
            label: "x.edges.tsv".into(),
            format: Format::Edges,
            relation: None,
            unit: None,
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
}

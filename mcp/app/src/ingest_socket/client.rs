//! The client's side: what `strata ingest` does when a server holds the database.

use super::*;

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
    /// The connection ended before the daemon began committing: nothing of the batch was
    /// stored.
    #[error(
        "{socket}: {reason}; nothing of the batch was stored (the server had not begun \
             committing it): send it again"
    )]
    NotStored {
        /// The socket.
        socket: PathBuf,
        /// What happened to the connection.
        reason: String,
    },
    /// The connection ended after the daemon began committing: the batch may have landed.
    #[error("{socket}: {reason} after the server began committing the batch: it may have \
             landed; {}", match .batch_id {
                Some(id) => format!("check with batch id \"{id}\": send it again with \
                    --batch-id {id} (a no-op if it landed)"),
                None => "check with `strata stats` once the server is back (give --batch-id \
                    next time to make a retry safe)".to_owned(),
             })]
    MayHaveLanded {
        /// The socket.
        socket: PathBuf,
        /// What happened to the connection.
        reason: String,
        /// The batch's id, when it had one.
        batch_id: Option<String>,
    },
    /// The daemon refused or failed the batch; the message is its own (`FILE:LINE: ...`
    /// for a malformed dump).
    #[error("{0}")]
    Refused(String),
}

/// Whether a daemon listens on the socket of the database in `db`.
pub fn server_listens(db: &Path) -> bool {
    address::connect(db).is_ok()
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
    match address::connect(db) {
        Ok(_) => false,
        Err(_) => std::fs::remove_file(&path).is_ok(),
    }
}

/// Hands a batch to the daemon holding the database in `db`: each file is read here (`-`
/// for standard input, gzip decompressed as the store does) and streamed to the daemon with
/// its spec and the database's identity (a daemon of another database refuses it). Answers
/// the daemon's summary of the committed batch; prints the daemon's "waiting for another
/// ingest" notices to standard error.
pub fn send_batch(
    db: &Path,
    options: &BatchOptions,
    files: &[(PathBuf, DumpSpec)],
) -> Result<BatchSummary, SendError> {
    let path = socket_path(db);
    let conn = address::connect(db).map_err(|_| SendError::NoServer(path.clone()))?;
    let database =
        DatabaseId::of(db).map_err(|e| SendError::Local(format!("{}: {e}", db.display())))?;
    let mut reader = BufReader::new(
        conn.try_clone()
            .map_err(|e| SendError::Io(format!("{}: {e}", path.display())))?,
    );
    let specs: Vec<DumpSpec> = files.iter().map(|(_, s)| s.clone()).collect();
    let header = Header::new(database, options, &specs);
    let mut writer = std::io::BufWriter::with_capacity(CLIENT_FRAME + 8, &conn);
    let sent = send_body(&mut writer, &header, files);
    drop(writer);
    if let Err(SendError::Local(e)) = sent {
        // Nothing will follow: the daemon drops the batch when the connection ends.
        let _ = conn.shutdown(std::net::Shutdown::Both);
        return Err(SendError::Local(e));
    }
    await_summary(&mut reader, sent, path, options.batch_id.clone())
}

/// Reads the daemon's answer to a batch sent (`sent`: whether sending it went well) on
/// the connection `reader` reads: its summary, or why there is none, saying whether the
/// batch may have landed; its "waiting for another ingest" notices go to standard error.
pub(super) fn await_summary(
    reader: &mut impl BufRead,
    sent: Result<(), SendError>,
    path: PathBuf,
    batch_id: Option<String>,
) -> Result<BatchSummary, SendError> {
    // A write that failed means the daemon answered early (an error) and closed: read it.
    let mut committing = false;
    let reason = loop {
        let mut line = Vec::new();
        match reader.read_until(b'\n', &mut line) {
            Ok(_) if line.ends_with(b"\n") => {}
            Ok(_) => break "the server closed the connection without answering".to_owned(),
            Err(e) => break format!("the connection failed ({e})"),
        }
        match serde_json::from_slice::<Reply>(&line) {
            Ok(Reply::Ok(s)) if sent.is_ok() => return Ok(s.into()),
            Ok(Reply::Ok(_)) => break "the server answered a batch it was not sent".to_owned(),
            Ok(Reply::Error(m)) => return Err(SendError::Refused(m)),
            Ok(Reply::Waiting(m)) => eprintln!("strata: {m}"),
            Ok(Reply::Committing) => committing = true,
            Err(e) => break format!("the server answered something unreadable ({e})"),
        }
    };
    let reason = match sent {
        Err(SendError::Io(e)) => format!("{e}; {reason}"),
        _ => reason,
    };
    Err(if committing {
        SendError::MayHaveLanded {
            socket: path,
            reason,
            batch_id,
        }
    } else {
        SendError::NotStored {
            socket: path,
            reason,
        }
    })
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
        let mut input =
            dump::open(path).map_err(|e| SendError::Local(crate::read::error_text(&e)))?;
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

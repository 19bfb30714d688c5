//! Reads over the socket: while a server holds the database, `strata query`, `stats`,
//! `find`, `ask` and the other readers send their [`Read`] here and the server answers it over
//! its application ([`Read::answer_served`]).
//!
//! One read per connection, client first: one JSON line `{"database": DatabaseId,
//! "read": Read}` (at most [`MAX_HEADER_BYTES`]); then the server answers one JSON line,
//! `{"read": Reading}` or `{"read_error": ServedError}` (or `{"error": "message"}` for a
//! request it refuses: another database's, or a server that answers no reads). The
//! client sends nothing more and keeps the connection open while it waits: a connection
//! that ends (the command interrupted) cancels the evaluation.

use std::io::Read as _;

use strata_eval::Cancel;

use super::*;
use crate::read::{Read, ReadError, Reading, ServedError};

/// How often a server looks whether the client of a read in progress went away.
const HANGUP_POLL: Duration = Duration::from_millis(100);

/// A read request's line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadHeader {
    /// The database the read is meant for.
    pub(crate) database: DatabaseId,
    /// The read.
    pub(crate) read: Read,
}

/// A server's answer to a read.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum ReadReply {
    /// The answer.
    Read(Reading),
    /// The read failed, as a direct read would have.
    ReadError(ServedError),
    /// The server refused the request.
    Error(String),
}

/// Why a read could not be handed to the server.
#[derive(Debug, thiserror::Error)]
pub enum ReadSendError {
    /// No server listens on the database's socket.
    #[error("no server listens on {0}")]
    NoServer(PathBuf),
    /// The connection failed or ended before the answer.
    #[error(
        "{socket}: {reason} (the server holding the database went away before answering); \
         run the command again"
    )]
    Lost {
        /// The socket.
        socket: PathBuf,
        /// What happened.
        reason: String,
    },
    /// The read carries a model's key and the socket is not this user's own.
    #[error(
        "{socket}: the socket belongs to another user, so `strata ask` does not send it \
         the model's key; ask the server's owner, or run the command as that user"
    )]
    NotOwned {
        /// The socket.
        socket: PathBuf,
    },
    /// The server refused the request.
    #[error("{socket}: the server refused the read: {message}")]
    Refused {
        /// The socket.
        socket: PathBuf,
        /// Its message.
        message: String,
    },
}

/// Sends `read` to the server holding the database in `db` and waits for its answer:
/// the reading, or the error a direct read would have given.
pub fn send_read(db: &Path, read: &Read) -> Result<Result<Reading, ServedError>, ReadSendError> {
    let socket = socket_path(db);
    let conn = address::connect(db).map_err(|_| ReadSendError::NoServer(socket.clone()))?;
    if read.carries_key() && !address::owned_by_me(&socket) {
        return Err(ReadSendError::NotOwned { socket });
    }
    let lost = |reason: String| ReadSendError::Lost {
        socket: socket.clone(),
        reason,
    };
    let database = DatabaseId::of(db).map_err(|e| lost(format!("{}: {e}", db.display())))?;
    let header = ReadHeader {
        database,
        read: read.clone(),
    };
    let mut line = serde_json::to_vec(&header).map_err(|e| lost(e.to_string()))?;
    line.push(b'\n');
    (&conn)
        .write_all(&line)
        .map_err(|e| lost(format!("sending the read: {e}")))?;
    let mut answer = Vec::new();
    BufReader::new(&conn)
        .read_until(b'\n', &mut answer)
        .map_err(|e| lost(format!("reading the answer: {e}")))?;
    if !answer.ends_with(b"\n") {
        return Err(lost(
            "the server closed the connection without answering".to_owned(),
        ));
    }
    match serde_json::from_slice::<ReadReply>(&answer) {
        Ok(ReadReply::Read(r)) => Ok(Ok(r)),
        Ok(ReadReply::ReadError(e)) => Ok(Err(e)),
        Ok(ReadReply::Error(message)) => Err(ReadSendError::Refused { socket, message }),
        Err(e) => Err(lost(format!(
            "the server answered something unreadable ({e})"
        ))),
    }
}

/// Serves `request` (a connection's first line, parsed and meant for this database) on
/// `conn`.
pub(super) fn serve_read(request: ReadHeader, conn: &UnixStream, shared: &Shared) {
    let reply = match &shared.app {
        Some(app) => match answer(request, conn, app, shared.options.after_cancel) {
            Ok(r) => ReadReply::Read(r),
            Err(e) => ReadReply::ReadError(ServedError::of(&e)),
        },
        None => ReadReply::Error("this server answers no reads from the command line".to_owned()),
    };
    let Ok(mut line) = serde_json::to_vec(&reply) else {
        return;
    };
    line.push(b'\n');
    let mut w = conn;
    let _ = w.write_all(&line).and_then(|()| w.flush());
}

/// The answer to `request` over `app`, the evaluation cancelled when the client goes away
/// (and then `after_cancel` called, the evaluation's memory dropped by then).
fn answer(
    request: ReadHeader,
    conn: &UnixStream,
    app: &crate::App,
    after_cancel: Option<fn()>,
) -> Result<Reading, ReadError> {
    let cancel = Cancel::new();
    let done = AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        s.spawn(|| watch_hangup(conn, &done, &cancel));
        let r = request.read.answer_served(app, &cancel);
        done.store(true, Ordering::SeqCst);
        r
    });
    if cancel.is_cancelled()
        && let Some(f) = after_cancel
    {
        f();
    }
    r
}

/// Cancels `cancel` when the client's side of `conn` closes, until `done`.
fn watch_hangup(conn: &UnixStream, done: &AtomicBool, cancel: &Cancel) {
    if conn.set_read_timeout(Some(HANGUP_POLL)).is_err() {
        return;
    }
    let mut buf = [0u8; 256];
    let mut r = conn;
    while !done.load(Ordering::SeqCst) {
        match r.read(&mut buf) {
            Ok(0) => {
                cancel.cancel();
                return;
            }
            // The client sends nothing after its request; whatever comes is ignored.
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => {
                cancel.cancel();
                return;
            }
        }
    }
}

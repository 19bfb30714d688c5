//! Retractions over the socket: while a server holds the database, `strata retract DB
//! --unit U` sends the units here and the server removes their facts as one batch, as a
//! retraction in its own process would.
//!
//! One retraction per connection, client first: one JSON line `{"database": DatabaseId,
//! "retract": [units], "labels": {...}, "batch_id": ...}` (at most [`MAX_HEADER_BYTES`]).
//! The server answers as it answers a batch: status lines (`{"waiting": "..."}` while
//! another batch commits, `"committing"` just before the retraction starts), then `{"ok":
//! {summary fields}}` or `{"error": "message"}`, the message the command line prints for
//! a direct retraction. A client gone before `"committing"` is told nothing and nothing is
//! removed (the status line cannot be written to it).

use super::*;

/// A retraction's line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetractHeader {
    /// The database the retraction is meant for.
    pub(crate) database: DatabaseId,
    /// The units whose facts to remove.
    pub(crate) retract: Vec<String>,
    /// Labels recorded with the batch.
    #[serde(default)]
    labels: BTreeMap<String, String>,
    /// An id that makes a retry a no-op.
    #[serde(default)]
    batch_id: Option<String>,
}

/// Hands the retraction of `units` (one batch with `options`' labels and id) to the
/// server holding the database in `db` and answers its summary, as
/// [`Store::retract`](strata_store::Store::retract) would; prints the server's "waiting
/// for another ingest" notices to standard error.
pub fn send_retract(
    db: &Path,
    units: &[String],
    options: &BatchOptions,
) -> Result<BatchSummary, SendError> {
    let path = socket_path(db);
    let conn = address::connect(db).map_err(|_| SendError::NoServer(path.clone()))?;
    let database =
        DatabaseId::of(db).map_err(|e| SendError::Local(format!("{}: {e}", db.display())))?;
    let header = RetractHeader {
        database,
        retract: units.to_vec(),
        labels: options.labels.clone(),
        batch_id: options.batch_id.clone(),
    };
    let mut line = serde_json::to_vec(&header).map_err(|e| SendError::Io(e.to_string()))?;
    line.push(b'\n');
    let sent = (&conn)
        .write_all(&line)
        .map_err(|e| SendError::Io(format!("sending to the server: {e}")));
    let mut reader = BufReader::new(&conn);
    super::client::await_summary(&mut reader, sent, path, options.batch_id.clone())
}

/// Serves the retraction `header` (a request's first line, parsed and meant for this
/// database), answering on `writer`.
pub(super) fn serve_retract(header: RetractHeader, writer: &mut dyn Write, shared: &Shared) {
    let reply = match retract(header, writer, shared) {
        Ok(summary) => {
            eprintln!(
                "strata: batch {} committed from `strata retract`: {} facts removed",
                summary.seq, summary.removed
            );
            Reply::Ok(WireSummary::from(&summary))
        }
        Err(e) => Reply::Error(e.to_string()),
    };
    let _ = super::daemon::write_reply(writer, &reply);
}

/// Removes the facts of the units `header` names, as one batch.
fn retract(
    header: RetractHeader,
    writer: &mut dyn Write,
    shared: &Shared,
) -> Result<BatchSummary, RequestError> {
    let options = BatchOptions {
        labels: header.labels,
        batch_id: header.batch_id,
        ..BatchOptions::default()
    };
    let mut status = |r: Reply| super::daemon::write_reply(writer, &r).map_err(RequestError::Read);
    let _writer = shared.take_writer(&mut status)?;
    // From here a lost connection means the batch may have landed: say so first.
    status(Reply::Committing)?;
    shared
        .store()
        .retract(&header.retract, options)
        .map_err(RequestError::store)
}

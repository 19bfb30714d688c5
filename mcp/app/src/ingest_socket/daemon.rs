//! The daemon's side: the listener `strata serve` runs, one thread per connection, each
//! batch read from its frames into the store and committed.

use super::*;

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
        Err(e) => Reply::Error(e.to_string()),
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
pub(super) fn read_line(r: &mut impl BufRead, max: u64) -> Result<Vec<u8>, RequestError> {
    let mut line = Vec::new();
    r.take(max + 1)
        .read_until(b'\n', &mut line)
        .map_err(RequestError::Read)?;
    if line.last() != Some(&b'\n') {
        return Err(if line.len() as u64 > max {
            RequestError::HeaderTooLong(max)
        } else {
            RequestError::HeaderUnended
        });
    }
    line.pop();
    Ok(line)
}

fn run_batch(reader: &mut impl BufRead, store: &Store) -> Result<BatchSummary, RequestError> {
    let line = read_line(reader, MAX_HEADER_BYTES)?;
    let header: Header = serde_json::from_slice(&line).map_err(RequestError::Header)?;
    if header.files.len() > MAX_FILES {
        return Err(RequestError::TooManyFiles(header.files.len()));
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
    let mut batch = store.batch(options).map_err(RequestError::store)?;
    for spec in &specs {
        let mut frames = Frames {
            inner: &mut *reader,
            left: 0,
            done: false,
        };
        batch
            .read_dump(&mut frames, spec)
            .map_err(RequestError::store)?;
        // A reader that stopped before the end (it should not): skip the rest.
        std::io::copy(&mut frames, &mut std::io::sink()).map_err(|source| {
            RequestError::Frames {
                label: spec.label.clone(),
                source,
            }
        })?;
    }
    batch.commit().map_err(RequestError::store)
}

/// One file's bytes: frames of `u64` LE length and bytes, ended by a frame of length 0.
pub(super) struct Frames<'a, R> {
    pub(super) inner: &'a mut R,
    pub(super) left: u64,
    pub(super) done: bool,
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

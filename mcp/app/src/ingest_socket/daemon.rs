//! The daemon's side: the listener `strata serve` runs, one thread per connection, each
//! batch read from its frames into the store and committed.

use super::*;

/// How the daemon treats its clients.
#[derive(Clone, Copy, Debug)]
pub struct ListenerOptions {
    /// How long a client may send nothing while its batch is received before the batch
    /// is dropped with an error ([`DEFAULT_IDLE_TIMEOUT`] by default).
    pub idle_timeout: Duration,
    /// How long a client has for its header and for each [`MAX_FRAME_BYTES`] of its batch
    /// before it loses its slot ([`DEFAULT_FRAME_TIMEOUT`] by default); each further
    /// [`MAX_FRAME_BYTES`] received earns it again.
    pub frame_timeout: Duration,
    /// Called on the read's thread after a command-line read was cancelled (its client
    /// went away) and its evaluation dropped what it held: a server that gives freed
    /// memory back to the system passes its function here, so a cancelled read's memory
    /// goes back at once rather than at the next periodic trim. `None` by default.
    pub after_cancel: Option<fn()>,
}

impl Default for ListenerOptions {
    fn default() -> Self {
        ListenerOptions {
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            frame_timeout: DEFAULT_FRAME_TIMEOUT,
            after_cancel: None,
        }
    }
}

/// The daemon's listener. Dropping it stops accepting (within a tenth of a second, even
/// when the socket file was removed), waits (a while) for commits in flight, and removes
/// the socket file.
pub struct IngestListener {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    commits: Arc<Counter>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for IngestListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IngestListener")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// What every connection of one listener shares.
pub(super) struct Shared {
    store: Store,
    /// The application reads are answered over ([`super::reads`]); none: reads are refused.
    pub(super) app: Option<crate::App>,
    pub(super) id: DatabaseId,
    pub(super) options: ListenerOptions,
    /// Connections being served (capped at [`MAX_CONNECTIONS`]).
    connections: Arc<Counter>,
    /// Batches between taking the writer and answering (a clean shutdown waits for them).
    commits: Arc<Counter>,
    /// Held while a batch is read from its spool and committed; `since` says from when.
    writer: Mutex<()>,
    since: Mutex<Option<std::time::Instant>>,
}

/// How often the accept loop looks at its stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

impl IngestListener {
    /// Listens on `DB/strata.sock` for batches to commit into `store`, which this process
    /// holds, with the default options.
    pub fn bind(store: Store) -> std::io::Result<IngestListener> {
        IngestListener::bind_with(store, ListenerOptions::default())
    }

    /// Listens on `DB/strata.sock` for batches to commit into `store`, which this process
    /// holds. A socket file already there is stale (this process holds the database's
    /// lock) and is removed first; anything else by that name is left alone and refused.
    pub fn bind_with(store: Store, options: ListenerOptions) -> std::io::Result<IngestListener> {
        IngestListener::listen(store, None, options)
    }

    /// Listens on `DB/strata.sock` of `app`'s database, which this process holds, for
    /// batches to commit and for the command line's reads to answer over `app` (see
    /// [`crate::read`]).
    pub fn bind_serving(
        app: crate::App,
        options: ListenerOptions,
    ) -> std::io::Result<IngestListener> {
        IngestListener::listen(app.store().clone(), Some(app), options)
    }

    fn listen(
        store: Store,
        app: Option<crate::App>,
        options: ListenerOptions,
    ) -> std::io::Result<IngestListener> {
        let path = socket_path(store.dir());
        clear_stale_socket(&path)?;
        let id = DatabaseId::of(store.dir())?;
        let listener = address::bind(store.dir())?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        // Polled, so a stop is seen even when nothing can connect to wake the loop (the
        // socket file removed, or too long a path).
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let commits = Arc::new(Counter::default());
        let shared = Arc::new(Shared {
            store,
            app,
            id,
            options,
            connections: Arc::new(Counter::default()),
            commits: Arc::clone(&commits),
            writer: Mutex::new(()),
            since: Mutex::new(None),
        });
        let accept = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("strata-ingest-socket".to_owned())
                .spawn(move || accept_loop(&listener, &shared, &stop))?
        };
        Ok(IngestListener {
            path,
            stop,
            commits,
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
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&self.path);
        self.commits.wait_idle(DRAIN_TIMEOUT);
    }
}

/// A count of things in progress, and a way to wait for none.
#[derive(Default)]
struct Counter {
    n: Mutex<usize>,
    idle: Condvar,
}

impl Counter {
    fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        self.n
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one more unless `max` are in progress; the guard counts it down.
    fn enter(self: &Arc<Self>, max: usize) -> Option<Entered> {
        let mut n = self.lock();
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Entered(Arc::clone(self)))
    }

    fn wait_idle(&self, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        let mut n = self.lock();
        while *n > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            n = match self.idle.wait_timeout(n, left) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}

/// One thing counted in progress while alive.
struct Entered(Arc<Counter>);

impl Drop for Entered {
    fn drop(&mut self) {
        let mut n = self.0.lock();
        *n = n.saturating_sub(1);
        self.0.idle.notify_all();
    }
}

fn accept_loop(listener: &UnixListener, shared: &Arc<Shared>, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        let mut conn = match listener.accept() {
            Ok((conn, _)) => conn,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
            Err(_) => {
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
        };
        if conn.set_nonblocking(false).is_err() {
            continue;
        }
        let Some(guard) = shared.connections.enter(MAX_CONNECTIONS) else {
            let _ = write_reply(
                &mut conn,
                &Reply::Error(format!(
                    "the server is busy with {MAX_CONNECTIONS} other batches (its limit); \
                     nothing was stored: try again"
                )),
            );
            continue;
        };
        let shared = Arc::clone(shared);
        let spawned = std::thread::Builder::new()
            .name("strata-ingest".to_owned())
            .spawn(move || {
                let _guard = guard;
                serve_connection(conn, &shared);
            });
        if let Err(e) = spawned {
            eprintln!("strata: cannot serve an ingest connection: {e}");
        }
    }
}

fn serve_connection(conn: UnixStream, shared: &Shared) {
    let _ = conn.set_write_timeout(Some(shared.options.idle_timeout));
    let Ok(mut writer) = conn.try_clone() else {
        return;
    };
    let o = shared.options;
    let conn =
        crate::deadline::Deadlined::new(conn, o.idle_timeout, o.frame_timeout, MAX_FRAME_BYTES);
    let mut reader = BufReader::with_capacity(1 << 16, conn);
    let request = read_line(&mut reader, MAX_HEADER_BYTES, o.frame_timeout)
        .and_then(|line| parse_request(&line, &shared.id));
    let batch = match request {
        Ok(Request::Batch(batch)) => batch,
        // A read's client sends nothing after its line.
        Ok(Request::Read(read)) => return super::reads::serve_read(*read, &writer, shared),
        Ok(Request::Retract(r)) => return super::retract::serve_retract(*r, &mut writer, shared),
        Err(e) => {
            let _ = write_reply(&mut writer, &Reply::Error(e.to_string()));
            return;
        }
    };
    let reply = match run_batch(&batch, &mut reader, &mut writer, shared) {
        Ok(summary) => {
            eprintln!(
                "strata: batch {} committed from `strata ingest`: {} facts read, {} new",
                summary.seq, summary.facts_read, summary.new
            );
            Reply::Ok(WireSummary::from(&summary))
        }
        Err(e) => {
            if matches!(e, RequestError::TooSlow { .. }) {
                eprintln!("strata: an ingest connection lost its slot: {e}");
            }
            Reply::Error(e.to_string())
        }
    };
    let _ = write_reply(&mut writer, &reply);
}

pub(super) fn write_reply(w: &mut dyn Write, reply: &Reply) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(reply).map_err(std::io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line)?;
    w.flush()
}

/// Reads one `\n`-ended line of at most `max` bytes.
/// Past the frame deadline `deadline`, [`RequestError::TooSlow`].
pub(crate) fn read_line(
    r: &mut impl BufRead,
    max: u64,
    deadline: Duration,
) -> Result<Vec<u8>, RequestError> {
    let mut line = Vec::new();
    r.take(max + 1).read_until(b'\n', &mut line).map_err(|e| {
        if crate::deadline::past_deadline(&e) {
            RequestError::TooSlow {
                label: "the request's header".to_owned(),
                deadline,
            }
        } else {
            RequestError::Read(e)
        }
    })?;
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

/// What a connection asks for, its header line read and checked.
#[derive(Debug)]
pub(crate) enum Request {
    /// A read of the command line's, answered over the application.
    Read(Box<super::reads::ReadHeader>),
    /// A retraction of units, answered as a batch is.
    Retract(Box<super::retract::RetractHeader>),
    /// A batch: its files' frames follow the header.
    Batch(BatchRequest),
}

/// A batch's header, checked: how to read each file, and the batch's options.
#[derive(Debug)]
pub(crate) struct BatchRequest {
    /// The files, in the order their frames follow.
    pub(crate) specs: Vec<DumpSpec>,
    /// The batch's options (its buffer capped at [`MAX_BUFFER_FACTS`]).
    pub(crate) options: BatchOptions,
}

/// The request of a connection's header line `line` to the daemon of the database `id`:
/// a read (a line holding `"read"`), a retraction (one holding `"retract"`) or a batch, refused when it is not the JSON of either,
/// meant for another database, or names too many files or a file it cannot read.
pub(crate) fn parse_request(line: &[u8], id: &DatabaseId) -> Result<Request, RequestError> {
    let probe = probe(line);
    if probe.read.0 {
        let read: super::reads::ReadHeader =
            serde_json::from_slice(line).map_err(RequestError::Header)?;
        check_database(&read.database, id)?;
        return Ok(Request::Read(Box::new(read)));
    }
    if probe.retract.0 {
        let retract: super::retract::RetractHeader =
            serde_json::from_slice(line).map_err(RequestError::Header)?;
        check_database(&retract.database, id)?;
        return Ok(Request::Retract(Box::new(retract)));
    }
    let header: Header = serde_json::from_slice(line).map_err(RequestError::Header)?;
    check_database(&header.database, id)?;
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
        allow_empty: header.allow_empty,
        indexes: header.indexes,
        ..BatchOptions::default()
    };
    Ok(Request::Batch(BatchRequest { specs, options }))
}

/// Refuses a request meant for a database other than `served`.
fn check_database(asked: &DatabaseId, served: &DatabaseId) -> Result<(), RequestError> {
    if asked.same_as(served) {
        return Ok(());
    }
    Err(RequestError::WrongDatabase {
        asked: asked.clone(),
        served: served.path.clone(),
    })
}

/// Which of a read's and a retraction's members a request's first line holds, found
/// without building the line's values (a header line is read whole, ignoring the rest).
fn probe(line: &[u8]) -> Probe {
    serde_json::from_slice::<Probe>(line).unwrap_or_default()
}

/// A member that is present, whatever it holds.
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Present, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

/// The members that tell a read (`read`) and a retraction (`retract`) from a batch.
#[derive(Default, Deserialize)]
struct Probe {
    #[serde(default)]
    read: Present,
    #[serde(default)]
    retract: Present,
}

fn run_batch(
    batch: &BatchRequest,
    reader: &mut impl BufRead,
    writer: &mut dyn Write,
    shared: &Shared,
) -> Result<BatchSummary, RequestError> {
    let o = shared.options;
    let specs = &batch.specs;
    // Receive everything before taking the writer.
    let mut spool = spool::Spool::create(shared.store.dir())?;
    for spec in specs {
        spool.receive(reader, &spec.label, o.idle_timeout, o.frame_timeout)?;
    }
    let mut status = |r: Reply| write_reply(writer, &r).map_err(RequestError::Read);
    let _writer = shared.take_writer(&mut status)?;
    let mut batch = shared
        .store
        .batch(batch.options.clone())
        .map_err(RequestError::store)?;
    for (spec, mut file) in specs.iter().zip(spool.files()?) {
        batch
            .read_dump(&mut file, spec)
            .map_err(RequestError::store)?;
        // A reader that stopped before the end (it should not): skip the rest.
        std::io::copy(&mut file, &mut std::io::sink()).map_err(RequestError::Spool)?;
    }
    // From here a lost connection means the batch may have landed: say so first.
    status(Reply::Committing)?;
    let summary = batch.commit().map_err(RequestError::store)?;
    if let crate::code_pack::CodePack::Failed(e) =
        crate::ingest::write_code_pack(&shared.store, specs.iter().map(|s| s.format))
    {
        eprintln!("strata serve: {e}");
    }
    Ok(summary)
}

impl Shared {
    /// Takes the database's writer for one batch, telling the client through `status`
    /// when it waits for another batch first; the batch counts as in flight (a clean
    /// shutdown waits for it) until the guard is dropped.
    pub(super) fn take_writer(
        &self,
        status: &mut dyn FnMut(Reply) -> Result<(), RequestError>,
    ) -> Result<Writing<'_>, RequestError> {
        let guard = match self.writer.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                let since = *self
                    .since
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let ago = since.map_or(0, |t| t.elapsed().as_secs());
                status(Reply::Waiting(format!(
                    "waiting for another ingest (started {ago} s ago)"
                )))?;
                self.writer
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
            }
        };
        let since = Since::start(&self.since);
        Ok(Writing {
            _counted: self.commits.enter(usize::MAX),
            _since: since,
            _guard: guard,
        })
    }

    /// The store batches are committed into.
    pub(super) fn store(&self) -> &Store {
        &self.store
    }
}

/// The writer held by one batch, given back when dropped.
pub(super) struct Writing<'a> {
    // Dropped in this order: counted out, the start cleared, then the writer freed.
    _counted: Option<Entered>,
    _since: Since<'a>,
    _guard: std::sync::MutexGuard<'a, ()>,
}

/// Records when the batch holding the writer started, and clears it when dropped.
struct Since<'a>(&'a Mutex<Option<std::time::Instant>>);

impl<'a> Since<'a> {
    fn start(since: &'a Mutex<Option<std::time::Instant>>) -> Since<'a> {
        *since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(std::time::Instant::now());
        Since(since)
    }
}

impl Drop for Since<'_> {
    fn drop(&mut self) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

/// One file's bytes: frames of `u64` LE length and bytes, ended by a frame of length 0.
pub(super) struct Frames<'a, R> {
    pub(super) inner: &'a mut R,
    pub(super) left: u64,
    pub(super) done: bool,
}

impl<R: BufRead> Frames<'_, R> {
    /// The next frame's 8 length bytes; a request that ends before them or inside them is
    /// an error saying so.
    fn frame_length(&mut self) -> std::io::Result<[u8; 8]> {
        let mut len = [0u8; 8];
        let mut got = 0;
        while got < len.len() {
            match self.inner.read(&mut len[got..]) {
                Ok(0) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        if got == 0 {
                            "the request ended before the file did (its last frame, of \
                             length 0, never came)"
                        } else {
                            "the request ended inside a frame's length"
                        },
                    ));
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(len)
    }
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
            let len = u64::from_le_bytes(self.frame_length()?);
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

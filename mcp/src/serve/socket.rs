//! The MCP socket: every process serving a database (`strata serve DB --http`, `--stdio
//! --in-process`, `--daemon`) also listens on the Unix socket `DB/strata-mcp.sock`, and
//! each connection to it is an MCP session of its own, one JSON-RPC message a line, served
//! as stdio is. `strata serve DB --stdio` relays its standard streams to that socket
//! ([`super::relay`]), so any number of clients share the one process redb lets hold the
//! database.
//!
//! The socket follows the ingest socket's rules: owner-only (mode 0600); a socket file
//! found at startup is stale (this process holds the database's lock, so nothing else can
//! listen) and is removed; a clean stop removes the socket file when it is still ours.
//! On accepting a connection the server first writes one notification line,
//! [`GREETING_METHOD`] with its process id, so a client knows it was accepted (and not
//! left in the backlog of a server that is exiting). A listener whose socket file is
//! removed or replaced stops listening (a database directory deleted under a daemon ends
//! the daemon).

use std::fs::File;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use super::{MAX_STDIO_MESSAGE_BYTES, ServeError, serve_lines};
use crate::server::Server;

/// The MCP socket's file name inside the database directory.
pub const MCP_SOCKET_FILE: &str = "strata-mcp.sock";

/// The lock file a process holds while it starts a daemon, or while a daemon exits.
pub const MCP_LOCK_FILE: &str = "strata-mcp.lock";

/// The daemon's log (its standard error), rewritten at each start.
pub const MCP_LOG_FILE: &str = "strata-mcp.log";

/// How long a daemon waits after its last client left before it exits, by default.
pub const DEFAULT_IDLE_EXIT: Duration = Duration::from_secs(60);

/// The method of the line a server writes first on each accepted connection.
pub const GREETING_METHOD: &str = "notifications/strata/accepted";

/// The longest socket path bound or connected to (`sun_path` holds 108 bytes on Linux,
/// 104 on the BSDs).
pub(super) const MAX_SOCKET_PATH: usize = 100;

/// How often the accept loop looks at its clients, its socket file and its stop flag.
const TICK: Duration = Duration::from_millis(100);

/// The MCP socket path of the database in `db`.
pub fn mcp_socket_path(db: &Path) -> PathBuf {
    db.join(MCP_SOCKET_FILE)
}

/// Binds `DB/strata-mcp.sock` (removing a stale socket file first), owner-only.
fn bind(db: &Path) -> std::io::Result<(std::os::unix::net::UnixListener, PathBuf, u64)> {
    let path = mcp_socket_path(db);
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{}: the path is longer than a socket address holds ({MAX_SOCKET_PATH} bytes)",
                path.display()
            ),
        ));
    }
    strata_app::ingest_socket::clear_stale_socket(&path)?;
    let listener = std::os::unix::net::UnixListener::bind(&path)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    listener.set_nonblocking(true)?;
    let ino = std::fs::symlink_metadata(&path)?.ino();
    Ok((listener, path, ino))
}

/// Whether `path` is still the socket file bound with inode `ino`.
fn still_ours(path: &Path, ino: u64) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.ino() == ino)
}

/// Removes the socket file when it is still the one bound.
fn remove_if_ours(path: &Path, ino: u64) {
    if still_ours(path, ino) {
        let _ = std::fs::remove_file(path);
    }
}

/// Why the accept loop ended.
enum Ended {
    /// Stopped from outside (a signal, the listener dropped).
    Stopped,
    /// The socket file was removed or replaced.
    SocketGone,
    /// No client for the idle time; the lock file is held (until the process exits).
    Idle(File),
}

/// Accepts connections, each an MCP session over `server`, until stopped, the socket file
/// goes, or (with `idle`) no client was connected for `idle` and the lock at `lock` could
/// be taken.
async fn accept_loop(
    server: Server,
    listener: tokio::net::UnixListener,
    (path, ino): (PathBuf, u64),
    idle: Option<(Duration, PathBuf)>,
    mut stop: watch::Receiver<bool>,
) -> Ended {
    let live = Arc::new(AtomicUsize::new(0));
    let (end_sessions, sessions_end) = watch::channel(false);
    let mut idle_since = Instant::now();
    let mut tick = tokio::time::interval(TICK);
    let ended = loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, _)) => {
                    live.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(session(
                        server.clone(),
                        stream,
                        Arc::clone(&live),
                        sessions_end.clone(),
                    ));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            r = stop.wait_for(|s| *s) => {
                let _ = r;
                break Ended::Stopped;
            }
            _ = tick.tick() => {
                if !still_ours(&path, ino) {
                    break Ended::SocketGone;
                }
                if live.load(Ordering::SeqCst) > 0 {
                    idle_since = Instant::now();
                    continue;
                }
                if let Some((after, lock)) = &idle
                    && idle_since.elapsed() >= *after
                    && let Some(held) = try_lock(lock)
                {
                    break Ended::Idle(held);
                }
            }
        }
    };
    drop(listener);
    remove_if_ours(&path, ino);
    let _ = end_sessions.send(true);
    // Let the sessions still open see the end (a second at most).
    let deadline = Instant::now() + Duration::from_secs(1);
    while live.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ended
}

/// Takes the lock file at `path` without waiting.
fn try_lock(path: &Path) -> Option<File> {
    let f = open_lock(path).ok()?;
    f.try_lock().ok()?;
    Some(f)
}

/// Opens (creating, owner-only) the lock file at `path`.
pub(super) fn open_lock(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
}

/// One connection: the greeting line, then an MCP session until the client closes.
async fn session(
    server: Server,
    stream: tokio::net::UnixStream,
    live: Arc<AtomicUsize>,
    mut end: watch::Receiver<bool>,
) {
    let (read, mut write) = stream.into_split();
    let mut greeting = json!({
        "jsonrpc": "2.0",
        "method": GREETING_METHOD,
        "params": {"pid": std::process::id()},
    })
    .to_string()
    .into_bytes();
    greeting.push(b'\n');
    if write.write_all(&greeting).await.is_ok() {
        let shutdown = async move {
            let _ = end.wait_for(|e| *e).await;
        };
        if let Err(e) = serve_lines(
            server,
            tokio::io::BufReader::new(read),
            write,
            MAX_STDIO_MESSAGE_BYTES,
            shutdown,
        )
        .await
        {
            eprintln!("strata: a session on the MCP socket failed: {e}");
        }
    }
    live.fetch_sub(1, Ordering::SeqCst);
}

/// The MCP socket of a process that serves otherwise too (HTTP, or its own stdio): a thread
/// with a runtime of its own accepts the sessions. Dropping it stops accepting, ends the
/// sessions and removes the socket file.
pub struct McpListener {
    path: PathBuf,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for McpListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpListener")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl McpListener {
    /// Listens on `DB/strata-mcp.sock` for sessions over `server`, whose database this
    /// process holds.
    pub fn bind(server: Server, db: &Path) -> std::io::Result<McpListener> {
        let (listener, path, ino) = bind(db)?;
        let (stop, stopped) = watch::channel(false);
        let at = (path.clone(), ino);
        let thread = std::thread::Builder::new()
            .name("strata-mcp-socket".to_owned())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("strata-mcp-socket")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        eprintln!("strata: warning: the MCP socket cannot run: {e}");
                        remove_if_ours(&at.0, at.1);
                        return;
                    }
                };
                rt.block_on(async move {
                    match tokio::net::UnixListener::from_std(listener) {
                        Ok(l) => {
                            accept_loop(server, l, at, None, stopped).await;
                        }
                        Err(e) => {
                            eprintln!("strata: warning: the MCP socket cannot run: {e}");
                            remove_if_ours(&at.0, at.1);
                        }
                    }
                });
                rt.shutdown_timeout(Duration::from_millis(500));
            })?;
        Ok(McpListener {
            path,
            stop,
            thread: Some(thread),
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for McpListener {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs a daemon: serves MCP sessions on `DB/strata-mcp.sock` until a signal comes, the
/// socket file goes, or no client was connected for `idle_exit` (never with `None`).
/// `ready` runs once signals are handled, before the socket is bound (the CLI binds the
/// ingest socket there); what it returns is kept until the daemon stops. An idle daemon
/// takes the starters' lock file before it stops listening and holds it until the process
/// exits, so a client starting a new daemon waits until this one let go of the database.
pub fn run_daemon<G>(
    server: Server,
    db: &Path,
    idle_exit: Option<Duration>,
    ready: impl FnOnce() -> G,
) -> Result<(), ServeError> {
    // Freed memory goes back to the system, as in the other servers (see `memory`).
    let _trimmer = super::memory::Trimmer::start();
    let rt = super::runtime()?;
    let (stop, stopped) = watch::channel(false);
    {
        let _in = rt.enter();
        let shutdown = super::registered_shutdown();
        rt.spawn(async move {
            shutdown.await;
            let _ = stop.send(true);
        });
    }
    // Dropped last: after the store is closed.
    let mut _held: Option<File> = None;
    let _kept = ready();
    let (listener, path, ino) = bind(db)?;
    eprintln!(
        "strata: serving {} on {} (pid {})",
        db.display(),
        path.display(),
        std::process::id()
    );
    let idle = idle_exit.map(|d| (d, db.join(MCP_LOCK_FILE)));
    let ended = rt.block_on(async move {
        let l = tokio::net::UnixListener::from_std(listener)?;
        Ok::<_, std::io::Error>(accept_loop(server, l, (path, ino), idle, stopped).await)
    })?;
    match ended {
        Ended::Idle(lock) => {
            eprintln!("strata: no client for a while: exiting");
            _held = Some(lock);
        }
        Ended::SocketGone => eprintln!("strata: the socket file went away: exiting"),
        Ended::Stopped => {}
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    drop(_kept);
    Ok(())
}

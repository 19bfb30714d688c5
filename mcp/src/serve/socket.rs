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
//!
//! Each message on a connection has the frame deadline of [`strata_app::deadline`]
//! ([`DEFAULT_FRAME_TIMEOUT`], 120 s for each 16 MiB, counted from its first byte): a
//! client that trickles a message (a byte a second) is answered a JSON-RPC error and loses
//! its connection, so it cannot hold a session, and with it the daemon and the database,
//! for ever. Between messages a client may wait as long as it likes (an MCP client sits
//! idle between calls); the relay writes each message whole.

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

pub use strata_app::deadline::DEFAULT_FRAME_TIMEOUT;

use super::{MAX_STDIO_MESSAGE_BYTES, ServeError, serve_framed};
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

/// How the MCP socket treats its clients.
#[derive(Clone, Copy, Debug)]
pub struct SocketOptions {
    /// How long a message may take to arrive whole, from its first byte, for each 16 MiB
    /// of it ([`DEFAULT_FRAME_TIMEOUT`] by default).
    pub frame_timeout: Duration,
}

impl Default for SocketOptions {
    fn default() -> Self {
        SocketOptions {
            frame_timeout: DEFAULT_FRAME_TIMEOUT,
        }
    }
}

/// What the accept loop shares with its sessions: the count of those open (none open lets
/// an idle daemon exit), and the options.
#[derive(Clone)]
struct Sessions {
    live: Arc<AtomicUsize>,
    options: SocketOptions,
}

/// Accepts connections, each an MCP session over `server`, until stopped, the socket file
/// goes, or (with `idle`) no client was connected for `idle` and the lock at `lock` could
/// be taken.
async fn accept_loop(
    server: Server,
    listener: tokio::net::UnixListener,
    (path, ino): (PathBuf, u64),
    (idle, sessions): (Option<(Duration, PathBuf)>, Sessions),
    mut stop: watch::Receiver<bool>,
) -> Ended {
    let live = Arc::clone(&sessions.live);
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
                        sessions.clone(),
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

/// One connection: the greeting line, then an MCP session until the client closes (or
/// is too slow sending a message).
async fn session(
    server: Server,
    stream: tokio::net::UnixStream,
    sessions: Sessions,
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
        let framing = (
            MAX_STDIO_MESSAGE_BYTES,
            Some(sessions.options.frame_timeout),
        );
        if let Err(e) = serve_framed(
            server,
            tokio::io::BufReader::new(read),
            write,
            framing,
            shutdown,
        )
        .await
        {
            eprintln!("strata: a session on the MCP socket failed: {e}");
        }
    }
    sessions.live.fetch_sub(1, Ordering::SeqCst);
}

/// The MCP socket of a process that serves otherwise too (HTTP, or its own stdio): a thread
/// with a runtime of its own accepts the sessions. Dropping it stops accepting, ends the
/// sessions and removes the socket file.
pub struct McpListener {
    path: PathBuf,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    live: Arc<AtomicUsize>,
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
    /// process holds, with the default options.
    pub fn bind(server: Server, db: &Path) -> std::io::Result<McpListener> {
        McpListener::bind_with(server, db, SocketOptions::default())
    }

    /// Listens on `DB/strata-mcp.sock` for sessions over `server`, whose database this
    /// process holds, treating clients by `options`.
    pub fn bind_with(
        server: Server,
        db: &Path,
        options: SocketOptions,
    ) -> std::io::Result<McpListener> {
        let (listener, path, ino) = bind(db)?;
        let sessions = Sessions {
            live: Arc::new(AtomicUsize::new(0)),
            options,
        };
        let live = Arc::clone(&sessions.live);
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
                            accept_loop(server, l, at, (None, sessions), stopped).await;
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
            live,
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many sessions are open on it now.
    pub fn sessions(&self) -> usize {
        self.live.load(Ordering::SeqCst)
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
        let sessions = Sessions {
            live: Arc::new(AtomicUsize::new(0)),
            options: SocketOptions::default(),
        };
        Ok::<_, std::io::Error>(
            accept_loop(server, l, (path, ino), (idle, sessions), stopped).await,
        )
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;

    use super::*;

    /// Connects to the MCP socket of `db` and reads its greeting.
    fn connect(db: &Path) -> (UnixStream, BufReader<UnixStream>) {
        let conn = UnixStream::connect(mcp_socket_path(db)).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut reader = BufReader::new(conn.try_clone().unwrap());
        let greeting = line(&mut reader);
        assert!(greeting.contains(GREETING_METHOD), "{greeting}");
        (conn, reader)
    }

    fn line(r: &mut BufReader<UnixStream>) -> String {
        let mut s = String::new();
        r.read_line(&mut s).unwrap();
        s
    }

    /// Whether the server closed the connection: the end of input, or a reset (what a
    /// Unix socket closed with bytes of the client's still unread gives the client).
    fn closed(r: &mut BufReader<UnixStream>) -> bool {
        let mut s = String::new();
        match r.read_line(&mut s) {
            Ok(0) => true,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            Ok(_) => false,
        }
    }

    /// Waits (a few seconds at most) until `listener` has `n` sessions open.
    fn sessions_become(listener: &McpListener, n: usize) -> usize {
        let until = Instant::now() + Duration::from_secs(5);
        while listener.sessions() != n && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        listener.sessions()
    }

    #[test]
    fn issue_30_relay_slow_loris() {
        let dir = tempfile::tempdir().unwrap();
        let files = strata_fixtures::example::write_example(dir.path()).unwrap();
        let server = crate::fuzz::server(dir.path(), &files).unwrap();
        let options = SocketOptions {
            frame_timeout: Duration::from_millis(300),
        };
        let listener = McpListener::bind_with(server, dir.path(), options).unwrap();
        // Clients trickling a message a byte every 20 ms (40 bytes: 800 ms, past the 300 ms
        // deadline), never ending it.
        let message = br#"{"id":7,"jsonrpc":"2.0","method":"ping"}"#;
        let started = Instant::now();
        let slow: Vec<_> = (0..4)
            .map(|_| {
                let (conn, reader) = connect(dir.path());
                let mut w = conn.try_clone().unwrap();
                let trickle = std::thread::spawn(move || {
                    for b in message {
                        if w.write_all(&[*b]).is_err() {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                });
                (conn, reader, trickle)
            })
            .collect();
        assert_eq!(listener.sessions(), 4);
        for (_conn, mut reader, trickle) in slow {
            // Answered with the message's id and why, then the connection is closed.
            let answer: serde_json::Value = serde_json::from_str(&line(&mut reader)).unwrap();
            assert_eq!(answer["id"], 7, "{answer}");
            assert_eq!(answer["error"]["code"], -32600, "{answer}");
            let m = answer["error"]["message"].as_str().unwrap();
            assert!(
                m.contains("did not arrive whole within 0.3 s (the server's frame deadline")
                    && m.contains("the connection is closed"),
                "{m}"
            );
            assert!(closed(&mut reader), "the connection still open");
            trickle.join().unwrap();
        }
        assert!(started.elapsed() < Duration::from_secs(10));
        // Their sessions are gone: none holds the daemon.
        assert_eq!(sessions_become(&listener, 0), 0);
        // A client waiting longer than the deadline between messages keeps its session, and
        // a message sent whole is answered.
        let (mut conn, mut reader) = connect(dir.path());
        std::thread::sleep(Duration::from_millis(600));
        let init = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        });
        writeln!(conn, "{init}").unwrap();
        let answer: serde_json::Value = serde_json::from_str(&line(&mut reader)).unwrap();
        assert_eq!(answer["id"], 1, "{answer}");
        assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
        std::thread::sleep(Duration::from_millis(600));
        writeln!(
            conn,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        writeln!(conn, r#"{{"jsonrpc":"2.0","id":2,"method":"ping"}}"#).unwrap();
        let answer: serde_json::Value = serde_json::from_str(&line(&mut reader)).unwrap();
        assert_eq!(answer["id"], 2, "{answer}");
        assert_eq!(listener.sessions(), 1);
        drop((conn, reader));
        assert_eq!(sessions_become(&listener, 0), 0);
    }
}

//! `strata serve DB --stdio` as a relay (gopls' `-remote=auto`): when a process already
//! serves the database on `DB/strata-mcp.sock` ([`super::socket`]), the relay copies
//! JSON-RPC lines between its standard streams and that socket; when none does, it starts
//! a daemon (`strata serve DB --daemon`, detached, its standard error in
//! `DB/strata-mcp.log`) under the lock file `DB/strata-mcp.lock`, so two starters do not
//! race, and relays to it.
//!
//! The relay reads each line's id and method: when the server goes away (its process
//! killed or crashed), every request still waiting is answered here, a `tools/call` with a
//! tool error and anything else with a JSON-RPC error, both saying the server went away;
//! every later request gets the same answer, until the client closes standard input. The
//! next `strata serve DB --stdio` starts a new daemon. `notifications/cancelled` passes
//! through unchanged (and the cancelled request is no longer waited for).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::ServeError;
use super::socket::{
    GREETING_METHOD, MAX_SOCKET_PATH, MCP_LOCK_FILE, MCP_LOG_FILE, mcp_socket_path, open_lock,
};

/// How long a starter waits for the daemon it started to listen.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a connection may take to send its greeting line.
const GREETING_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the relay waits for the server's last answers once the client closed its input.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// What `relay_stdio` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Relayed {
    /// It relayed a session until the client closed standard input.
    Done,
    /// No socket can serve this database (no database there yet, or too long a socket
    /// path): serve it in this process.
    InProcess,
}

/// Relays this process's standard input and output to the server of the database in `db`,
/// starting one with `daemon` (the command of `strata serve DB --daemon`) when none
/// listens.
pub fn relay_stdio(db: &Path, daemon: impl Fn() -> Command) -> Result<Relayed, ServeError> {
    if mcp_socket_path(db).as_os_str().len() > MAX_SOCKET_PATH || !db.join("strata.redb").is_file()
    {
        return Ok(Relayed::InProcess);
    }
    let (conn, reader, pid) = connect_or_start(db, &daemon)?;
    eprintln!(
        "strata: relaying to the server of {} (pid {pid})",
        db.display()
    );
    relay(db, conn, reader);
    Ok(Relayed::Done)
}

/// The process id of the server listening on the MCP socket of `db`, if one does.
pub fn serving_pid(db: &Path) -> Option<u64> {
    connect(db).map(|(_, _, pid)| pid)
}

/// A connection to the server, its reader, and the server's process id.
type Connection = (UnixStream, BufReader<UnixStream>, u64);

/// Connects to the socket and reads the greeting: none when nothing listens or the
/// connection ends before the greeting (a server exiting).
fn connect(db: &Path) -> Option<Connection> {
    let conn = UnixStream::connect(mcp_socket_path(db)).ok()?;
    conn.set_read_timeout(Some(GREETING_TIMEOUT)).ok()?;
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut line = Vec::new();
    (&mut reader)
        .take(64 << 10)
        .read_until(b'\n', &mut line)
        .ok()?;
    let greeting: Value = serde_json::from_slice(&line).ok()?;
    if greeting["method"] != GREETING_METHOD {
        return None;
    }
    conn.set_read_timeout(None).ok()?;
    let pid = greeting["params"]["pid"].as_u64().unwrap_or(0);
    Some((conn, reader, pid))
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> ServeError {
    ServeError::Config(format!("{what} {}: {e}", path.display()))
}

/// Connects to the server of `db`, starting one under the lock file when none listens.
fn connect_or_start(db: &Path, daemon: &impl Fn() -> Command) -> Result<Connection, ServeError> {
    if let Some(c) = connect(db) {
        return Ok(c);
    }
    let lock_path = db.join(MCP_LOCK_FILE);
    let lock = open_lock(&lock_path).map_err(|e| io_error("opening", &lock_path, e))?;
    // Another starter, or a daemon exiting, holds it for a moment.
    lock.lock()
        .map_err(|e| io_error("locking", &lock_path, e))?;
    if let Some(c) = connect(db) {
        return Ok(c);
    }
    let log_path = db.join(MCP_LOG_FILE);
    let log = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(&log_path)
            .map_err(|e| io_error("opening", &log_path, e))?
    };
    let mut command = daemon();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        // Out of the client's process group: a Ctrl-C meant for the client leaves it be.
        .process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| ServeError::Config(format!("starting the server: {e}")))?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(c) = connect(db) {
            // The daemon runs on by itself; the lock goes with this scope.
            return Ok(c);
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            return Err(ServeError::Config(format!(
                "the server of {} did not start ({status}): {}",
                db.display(),
                log.trim()
            )));
        }
        if Instant::now() > deadline {
            return Err(ServeError::Config(format!(
                "the server of {} did not listen on {} within {} s; see {}",
                db.display(),
                mcp_socket_path(db).display(),
                START_TIMEOUT.as_secs(),
                log_path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What both directions share: the client's output, the requests waiting for an answer
/// (by id, with their method), and whether the server went away.
struct Shared {
    out: std::io::Stdout,
    pending: HashMap<String, (Value, String)>,
    lost: Option<String>,
    closing: bool,
}

fn lock(s: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn write(&mut self, line: &[u8]) -> bool {
        self.out.write_all(line).is_ok() && self.out.flush().is_ok()
    }

    /// The server went away: answers every waiting request with `message`.
    fn lose(&mut self, message: String) {
        if self.lost.is_some() {
            return;
        }
        eprintln!("strata: {message}");
        let pending: Vec<(Value, String)> = self.pending.drain().map(|(_, v)| v).collect();
        for (id, method) in pending {
            let line = answer_lost(&id, &method, &message);
            self.write(&line);
        }
        self.lost = Some(message);
    }
}

/// The answer to a request the lost server will not give: a tool error for `tools/call`,
/// a JSON-RPC error otherwise.
fn answer_lost(id: &Value, method: &str, message: &str) -> Vec<u8> {
    let v = if method == "tools/call" {
        json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": message}],
            "isError": true,
        }})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": message}})
    };
    let mut line = v.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// Copies lines both ways until the client closes standard input.
fn relay(db: &Path, conn: UnixStream, mut reader: BufReader<UnixStream>) {
    let message = format!(
        "the Strata server of {} went away (its process ended) before answering; restart \
         this MCP server (the next start starts the database's server again)",
        db.display()
    );
    let shared = Arc::new(Mutex::new(Shared {
        out: std::io::stdout(),
        pending: HashMap::new(),
        lost: None,
        closing: false,
    }));
    let (done, finished) = std::sync::mpsc::channel::<()>();
    {
        let shared = Arc::clone(&shared);
        let message = message.clone();
        std::thread::spawn(move || {
            let mut line = Vec::new();
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                let mut s = lock(&shared);
                if let Ok(v) = serde_json::from_slice::<Value>(&line)
                    && v.get("method").is_none()
                    && let Some(id) = v.get("id")
                {
                    s.pending.remove(&id.to_string());
                }
                if !s.write(&line) {
                    break;
                }
            }
            let mut s = lock(&shared);
            if !s.closing {
                s.lose(message);
            }
            let _ = done.send(());
        });
    }
    let mut writer = &conn;
    let mut input = std::io::stdin().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        let v = serde_json::from_slice::<Value>(&line).ok();
        let method = v
            .as_ref()
            .and_then(|v| v.get("method"))
            .and_then(Value::as_str);
        let id = v.as_ref().and_then(|v| v.get("id"));
        {
            let mut s = lock(&shared);
            if s.lost.is_some() {
                if let (Some(m), Some(id)) = (method, id) {
                    let answer = answer_lost(id, m, &message);
                    if !s.write(&answer) {
                        break;
                    }
                }
                continue;
            }
            match (method, id) {
                (Some(m), Some(id)) => {
                    s.pending.insert(id.to_string(), (id.clone(), m.to_owned()));
                }
                (Some("notifications/cancelled"), None) => {
                    if let Some(r) = v.as_ref().and_then(|v| v["params"].get("requestId")) {
                        s.pending.remove(&r.to_string());
                    }
                }
                _ => {}
            }
        }
        if writer.write_all(&line).is_err() {
            lock(&shared).lose(message.clone());
        }
    }
    lock(&shared).closing = true;
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let _ = finished.recv_timeout(DRAIN_TIMEOUT);
}

//! Talking to `strata serve` as an MCP client: the bundled example database, the server as
//! a child process, a stdio session of JSON-RPC lines and a streamable HTTP session. Used
//! by the `mcp-bench` and `relay-bench` binaries and the `mcp` criterion bench.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_store::BatchOptions;
use strata_store::dump::{DumpSpec, Format, facts_relation};

use crate::{BenchResult, open_store};

/// The `strata` binary: `explicit` if given, else `strata` next to this executable or in
/// its parent directory (criterion's benches run from `target/release/deps`).
pub fn strata_binary(explicit: Option<&Path>) -> BenchResult<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_owned());
    }
    let exe = std::env::current_exe()?;
    let name = format!("strata{}", std::env::consts::EXE_SUFFIX);
    let dirs = exe.ancestors().skip(1).take(2);
    for dir in dirs {
        let p = dir.join(&name);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(format!(
        "no strata binary next to {}: build it with `cargo build --release -p strata-cli`, \
         or pass its path",
        exe.display()
    )
    .into())
}

/// The query every call runs: answered from the `imports` index (first column bound).
pub const PROGRAM: &str = r#"imports("api", ?d) => ?d"#;

/// How long one call may take before it is an error.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The MCP protocol version the client announces.
pub const PROTOCOL: &str = "2025-06-18";

/// Writes the bundled example into `dir` and ingests its dumps in one batch.
pub fn build_example(dir: &Path) -> BenchResult<()> {
    let dumps = strata_fixtures::example::write_example(dir)?;
    let store = open_store(dir)?;
    let mut batch = store.batch(BatchOptions::default())?;
    for path in &dumps {
        let format = Format::from_path(path)
            .ok_or_else(|| format!("{}: unknown dump format", path.display()))?;
        let spec = DumpSpec {
            label: path.display().to_string(),
            format,
            relation: facts_relation(path),
            unit: None,
            checkout: None,
        };
        batch.read_file(path, &spec)?;
    }
    batch.commit()?;
    Ok(())
}

/// The `tools/call` request of the benchmark's query, with JSON-RPC id `id`.
pub fn query_request(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "query", "arguments": {"program": PROGRAM}},
    })
}

/// The `initialize` request (JSON-RPC id 0).
pub fn initialize_request() -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "mcp-bench", "version": "0"},
        },
    })
}

/// Checks one `query` answer: a result, not a tool error, with both of `api`'s imports.
pub fn check_answer(v: &Value) -> BenchResult<()> {
    let result = v
        .get("result")
        .ok_or_else(|| format!("not a result: {v}"))?;
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Err(format!("tool error: {result}").into());
    }
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    if !(text.contains("log") && text.contains("util")) {
        return Err(format!("unexpected answer: {text:?}").into());
    }
    Ok(())
}

/// A free TCP port of localhost (bound, read, released) for a server to listen on.
pub fn free_port() -> BenchResult<u16> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(l.local_addr()?.port())
}

/// A server child process, stopped with SIGTERM (then killed) when done or dropped.
pub struct Server {
    /// The server process.
    pub child: Child,
    log: PathBuf,
}

impl Server {
    /// Starts `cmd` with its stderr in `log`; its stdin and stdout piped when `piped`, else
    /// null.
    pub fn start(cmd: &mut Command, log: &Path, piped: bool) -> BenchResult<Server> {
        let io = || if piped { Stdio::piped() } else { Stdio::null() };
        let child = cmd
            .stdin(io())
            .stdout(io())
            .stderr(std::fs::File::create(log)?)
            .spawn()?;
        Ok(Server {
            child,
            log: log.to_owned(),
        })
    }

    /// What the server wrote to its stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (up to 20 s) until the server accepts connections on `port` of localhost; an
    /// error with its log if it exits first.
    pub fn wait_listening(&mut self, port: u16) -> BenchResult<()> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Err(format!("strata serve exited with {status}: {}", self.log()).into());
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err("strata serve did not start listening within 20 s".into())
    }

    /// SIGTERM (through `kill`, this child's pid only), then up to 10 s for it to exit.
    pub fn stop(&mut self) -> BenchResult<()> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait()? {
                if !status.success() {
                    return Err(format!("strata serve exited with {status}: {}", self.log()).into());
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("strata serve did not stop within 10 s of SIGTERM".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// stdio.

/// `strata serve DB --stdio`, spoken to with JSON-RPC lines.
pub struct StdioSession {
    server: Server,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl StdioSession {
    /// Starts `strata serve DB --stdio` (stderr in `log`) and initializes the session.
    pub fn start(strata: &Path, db: &Path, log: &Path) -> BenchResult<StdioSession> {
        StdioSession::start_with(strata, db, &[], log)
    }

    /// Starts `strata serve DB --stdio ARGS` (stderr in `log`) and initializes the session.
    pub fn start_with(
        strata: &Path,
        db: &Path,
        args: &[&str],
        log: &Path,
    ) -> BenchResult<StdioSession> {
        let mut server = Server::start(
            Command::new(strata)
                .arg("serve")
                .arg(db)
                .arg("--stdio")
                .args(args),
            log,
            true,
        )?;
        let stdin = server.child.stdin.take();
        let stdout = server.child.stdout.take().ok_or("no stdout")?;
        let lines = read_lines(stdout);
        let mut s = StdioSession {
            server,
            stdin,
            lines,
            next_id: 0,
        };
        s.send(&initialize_request())?;
        s.receive(0)?;
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(s)
    }

    /// Writes one JSON-RPC message as a line.
    pub fn send(&mut self, message: &Value) -> BenchResult<()> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        writeln!(stdin, "{message}")?;
        stdin.flush()?;
        Ok(())
    }

    /// The next line answering `id` (other messages are skipped), within [`CALL_TIMEOUT`].
    pub fn receive(&mut self, id: u64) -> BenchResult<Value> {
        receive(&self.lines, id, || self.server.log())
    }

    /// The next message the server wrote, whatever it answers, or `None` when none came
    /// within `timeout`.
    pub fn next_message(&mut self, timeout: Duration) -> BenchResult<Option<Value>> {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => Ok(Some(serde_json::from_str(&line)?)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(e) => Err(format!("{e}: {}", self.server.log()).into()),
        }
    }

    /// A fresh JSON-RPC id for a request the caller writes itself.
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The pid of the `strata serve --stdio` process (a relay, or the server itself with
    /// `--in-process`).
    pub fn pid(&self) -> u32 {
        self.server.child.id()
    }

    /// What the process wrote to its stderr so far.
    pub fn log(&self) -> String {
        self.server.log()
    }

    /// One `query` call of [`PROGRAM`], answered.
    pub fn query(&mut self) -> BenchResult<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&query_request(id))?;
        self.receive(id)
    }

    /// Closes stdin (a clean shutdown) and waits up to 10 s for the exit.
    pub fn stop(mut self) -> BenchResult<()> {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.server.child.try_wait()? {
                if !status.success() {
                    return Err(format!("strata serve --stdio exited with {status}").into());
                }
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("strata serve --stdio did not exit within 10 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The next of `lines` answering `id` (other messages are skipped), within
/// [`CALL_TIMEOUT`]; `log` says what the server wrote, for the error.
fn receive(lines: &Receiver<String>, id: u64, log: impl Fn() -> String) -> BenchResult<Value> {
    let deadline = Instant::now() + CALL_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines.recv_timeout(left).map_err(|_| {
            format!(
                "no answer to request {id} within {CALL_TIMEOUT:?}: {}",
                log()
            )
        })?;
        let v: Value = serde_json::from_str(&line)?;
        if v.get("id") == Some(&json!(id)) {
            return Ok(v);
        }
    }
}

/// The lines `reader` gives, each sent on the returned channel by a thread of its own
/// until the reader ends.
fn read_lines(reader: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

// ---------------------------------------------------------------------------------------------
// Straight on the server's MCP socket.

/// One MCP session on a running server's socket (`DB/strata-mcp.sock`): the JSON-RPC lines a
/// relay (`strata serve DB --stdio`) copies there, without the relay process between, so
/// it is the direct figure a relay's cost is measured against at any number of clients.
pub struct SocketSession {
    stream: std::os::unix::net::UnixStream,
    lines: Receiver<String>,
    next_id: u64,
}

impl SocketSession {
    /// Connects to `socket` and initializes the session (the server's greeting line is
    /// skipped as a message answering no request).
    pub fn connect(socket: &Path) -> BenchResult<SocketSession> {
        let stream = std::os::unix::net::UnixStream::connect(socket)
            .map_err(|e| format!("connecting to {}: {e}", socket.display()))?;
        let lines = read_lines(stream.try_clone()?);
        let mut s = SocketSession {
            stream,
            lines,
            next_id: 0,
        };
        s.send(&initialize_request())?;
        s.receive(0)?;
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(s)
    }

    fn send(&mut self, message: &Value) -> BenchResult<()> {
        writeln!(self.stream, "{message}")?;
        Ok(())
    }

    fn receive(&mut self, id: u64) -> BenchResult<Value> {
        receive(&self.lines, id, String::new)
    }

    /// One `query` call of [`PROGRAM`], answered.
    pub fn query(&mut self) -> BenchResult<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&query_request(id))?;
        self.receive(id)
    }

    /// Ends the session (the server sees the connection close).
    pub fn close(self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP.

/// One MCP session over one keep-alive connection.
pub struct HttpSession {
    agent: ureq::Agent,
    url: String,
    session: String,
    next_id: u64,
}

impl HttpSession {
    /// `initialize`, then `notifications/initialized`, with the session id the server gave.
    pub fn open(url: &str) -> BenchResult<HttpSession> {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(CALL_TIMEOUT))
            .max_idle_connections_per_host(1)
            .build();
        let agent = ureq::Agent::new_with_config(config);
        let mut s = HttpSession {
            agent,
            url: url.to_owned(),
            session: String::new(),
            next_id: 0,
        };
        let (status, session, body) = s.post(&initialize_request())?;
        if status != 200 {
            return Err(format!("initialize: HTTP {status}: {body}").into());
        }
        s.session = session.ok_or("initialize: no Mcp-Session-Id header")?;
        answer_of(&body, 0)?;
        let (status, _, body) =
            s.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        if !(200..300).contains(&status) {
            return Err(format!("notifications/initialized: HTTP {status}: {body}").into());
        }
        Ok(s)
    }

    /// POSTs one message; returns the status, the session id header and the whole body.
    pub fn post(&self, message: &Value) -> BenchResult<(u16, Option<String>, String)> {
        let mut req = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if !self.session.is_empty() {
            req = req
                .header("Mcp-Session-Id", &self.session)
                .header("MCP-Protocol-Version", PROTOCOL);
        }
        let mut resp = req.send(message.to_string())?;
        let status = resp.status().as_u16();
        let session = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = resp.body_mut().read_to_string()?;
        Ok((status, session, body))
    }

    /// One `query` call; its JSON-RPC answer.
    pub fn query(&mut self) -> BenchResult<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let (status, _, body) = self.post(&query_request(id))?;
        if status != 200 {
            return Err(format!("query: HTTP {status}: {body}").into());
        }
        answer_of(&body, id)
    }

    /// Ends the session (DELETE); errors are ignored.
    pub fn close(self) {
        let _ = self
            .agent
            .delete(&self.url)
            .header("Mcp-Session-Id", &self.session)
            .header("MCP-Protocol-Version", PROTOCOL)
            .call();
    }
}

/// The JSON-RPC answer with id `id` in a response body: plain JSON, or an SSE stream whose
/// events' `data:` lines carry JSON-RPC messages.
pub fn answer_of(body: &str, id: u64) -> BenchResult<Value> {
    let is_answer = |v: &Value| v.get("id") == Some(&json!(id));
    if let Ok(v) = serde_json::from_str::<Value>(body)
        && is_answer(&v)
    {
        return Ok(v);
    }
    let mut data = String::new();
    for line in body.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                if let Ok(v) = serde_json::from_str::<Value>(&data)
                    && is_answer(&v)
                {
                    return Ok(v);
                }
                data.clear();
            }
        } else if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    Err(format!("no answer with id {id} in {body:?}").into())
}

//! Issue 28 over streamable HTTP, spoken to with raw HTTP/1.1: a call with a progress token
//! hears `notifications/progress` on its stream; `notifications/cancelled` (sent on another
//! request) and a closed stream each stop the evaluation and give back the heavy slot, so
//! the next heavy call is admitted at once; the cancelled call is not answered. And issue
//! 30's finding 11 over HTTP: errors to requests with an id carry it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::{CLOSURE, CROSS, FUNCTIONS, calls_store, one_slot_server, running};
use serde_json::{Value, json};
use strata_mcp::{HttpOptions, Options, Pack, Server};

/// A server on a runtime of its own; dropping it shuts it down.
struct Running {
    addr: SocketAddr,
    server: Server,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start() -> Running {
    start_with(one_slot_server)
}

fn start_with(make: fn(&std::path::Path) -> Server) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let server = make(dir.path());
    let served = server.clone();
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = std_listener.local_addr().unwrap();
    let options = HttpOptions::new(addr);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            std_listener.set_nonblocking(true).unwrap();
            let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
            strata_mcp::serve::serve_listener(served, &options, listener, async {
                let _ = rx.await;
            })
            .await;
        });
        rt.shutdown_timeout(Duration::from_secs(1));
    });
    Running {
        addr,
        server,
        stop: Some(tx),
        thread: Some(thread),
        _dir: dir,
    }
}

/// One POST's answer, read as it comes: the status, the session id if any, then its
/// messages one at a time (an SSE stream, chunked, or one JSON body).
struct Answer {
    status: u16,
    session: Option<String>,
    reader: BufReader<TcpStream>,
    chunked: bool,
    sse: bool,
    /// Bytes of the current chunk not yet read.
    left: usize,
    /// Text read but not yet split into events.
    text: String,
}

fn post(addr: SocketAddr, session: Option<&str>, body: &Value) -> Answer {
    let body = body.to_string();
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(s) = session {
        req.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    c.write_all(req.as_bytes()).unwrap();
    let mut reader = BufReader::new(c);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    let (mut session, mut chunked, mut sse) = (None, false, false);
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        let (k, v) = (k.to_ascii_lowercase(), v.trim());
        match k.as_str() {
            "mcp-session-id" => session = Some(v.to_owned()),
            "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
            "content-type" => sse = v.starts_with("text/event-stream"),
            _ => {}
        }
    }
    Answer {
        status,
        session,
        reader,
        chunked,
        sse,
        left: 0,
        text: String::new(),
    }
}

impl Answer {
    /// More of the body; `false` at its end.
    fn more(&mut self) -> bool {
        if !self.chunked {
            let mut buf = [0u8; 4096];
            return match self.reader.read(&mut buf) {
                Ok(0) | Err(_) => false,
                Ok(n) => {
                    self.text.push_str(&String::from_utf8_lossy(&buf[..n]));
                    true
                }
            };
        }
        if self.left == 0 {
            let mut size = String::new();
            if self.reader.read_line(&mut size).unwrap_or(0) == 0 {
                return false;
            }
            let size = size.trim();
            if size.is_empty() {
                return self.more();
            }
            self.left = usize::from_str_radix(size, 16).unwrap();
            if self.left == 0 {
                return false;
            }
        }
        let mut buf = vec![0u8; self.left.min(4096)];
        match self.reader.read(&mut buf) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.left -= n;
                self.text.push_str(&String::from_utf8_lossy(&buf[..n]));
                true
            }
        }
    }

    /// The next JSON-RPC message, `None` at the end of the answer.
    fn next(&mut self) -> Option<Value> {
        loop {
            if self.sse {
                while let Some(end) = self.text.find("\n\n") {
                    let event: String = self.text.drain(..end + 2).collect();
                    let data: String = event
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(str::trim)
                        .collect();
                    if !data.is_empty() {
                        return Some(serde_json::from_str(&data).unwrap());
                    }
                }
            }
            if !self.more() {
                if !self.sse && !self.text.trim().is_empty() {
                    let text = std::mem::take(&mut self.text);
                    return Some(serde_json::from_str(&text).unwrap());
                }
                return None;
            }
        }
    }

    /// The answer to request `id`, and the notifications before it.
    fn answer(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut notes = Vec::new();
        while let Some(m) = self.next() {
            if m.get("id").is_some() {
                assert_eq!(m["id"], json!(id), "{m}");
                return (m, notes);
            }
            notes.push(m);
        }
        panic!("no answer to {id}; notifications: {notes:?}");
    }
}

/// `initialize` and `notifications/initialized`: the session id.
fn initialize(addr: SocketAddr) -> String {
    let mut a = post(
        addr,
        None,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}),
    );
    assert_eq!(a.status, 200);
    let session = a.session.clone().expect("a session id");
    let (init, _) = a.answer(0);
    assert!(init.get("result").is_some(), "{init}");
    let n = post(
        addr,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(n.status, 202);
    session
}

fn call(id: u64, program: &str, token: Option<&str>) -> Value {
    let mut params = json!({"name": "query", "arguments": {"program": program}});
    if let Some(t) = token {
        params["_meta"] = json!({"progressToken": t});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// Waits until `f` holds, at most 60 s; how long it took.
fn until(what: &str, f: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(60), "never: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
    start.elapsed()
}

/// The next heavy call is admitted and answered.
fn admitted(r: &Running, session: &str, id: u64) {
    let mut a = post(r.addr, Some(session), &call(id, CROSS, None));
    let (answer, _) = a.answer(id);
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
}

#[test]
fn issue28_over_http_progress_then_cancelled_frees_the_slot() {
    let r = start();
    let session = initialize(r.addr);
    let mut stream = post(r.addr, Some(&session), &call(1, CLOSURE, Some("tok-h")));
    assert_eq!(stream.status, 200);
    // Progress on the call's own stream, naming its token.
    let p = stream.next().expect("a progress notification");
    assert_eq!(p["method"], json!("notifications/progress"), "{p}");
    assert_eq!(p["params"]["progressToken"], json!("tok-h"), "{p}");
    assert!(p["params"]["progress"].as_f64().is_some(), "{p}");
    assert_eq!(running(&r.server), 1);
    let cancelled = post(
        r.addr,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 1, "reason": "the user pressed escape"}}),
    );
    assert_eq!(cancelled.status, 202);
    let freed = until("the slot is given back", || running(&r.server) == 0);
    eprintln!("HTTP notifications/cancelled to slot free: {freed:?}");
    admitted(&r, &session, 2);
    // The cancelled call's stream holds no answer to it (progress at most).
    while let Some(m) = stream.next() {
        assert!(
            m.get("id").is_none(),
            "the cancelled call was answered: {m}"
        );
    }
}

#[test]
fn issue28_over_http_a_closed_stream_frees_the_slot() {
    let r = start();
    let session = initialize(r.addr);
    let stream = post(r.addr, Some(&session), &call(1, CLOSURE, None));
    assert_eq!(stream.status, 200);
    until("the closure holds the slot", || running(&r.server) == 1);
    drop(stream);
    let freed = until("the slot is given back", || running(&r.server) == 0);
    eprintln!("HTTP stream closed to slot free: {freed:?}");
    admitted(&r, &session, 2);
}

/// One heavy slot and a wait for it longer than any test: a call waiting for the slot
/// leaves the queue only when cancelled.
fn patient_server(dir: &std::path::Path) -> Server {
    Server::builder(calls_store(dir, FUNCTIONS), Pack::default())
        .options(Options {
            timeout: Duration::from_secs(3_600),
            admission_wait: Duration::from_secs(3_600),
            max_memory: Some(4 << 30),
            ..Options::default()
        })
        .heavy_calls(1)
        .build()
        .unwrap()
}

/// Without a race: the test holds the only slot, a call waits for it over HTTP, and
/// closing that call's stream is the only thing that can take it out of the queue; once
/// the slot is given back nothing takes it (the closed call is not run).
#[test]
fn issue28_over_http_a_closed_stream_cancels_a_waiting_call() {
    let r = start_with(patient_server);
    let session = initialize(r.addr);
    let gate = r.server.app().admission().expect("a gate");
    let held = gate
        .admit(None, &strata_eval::Cancel::new())
        .expect("the slot");
    let stream = post(r.addr, Some(&session), &call(1, CLOSURE, None));
    assert_eq!(stream.status, 200);
    until("the call waits for the slot", || gate.waiting() == 1);
    drop(stream);
    let left = until("the closed call leaves the queue", || gate.waiting() == 0);
    eprintln!("HTTP stream closed to the waiting call gone: {left:?}");
    drop(held);
    assert_eq!(gate.running(), 0);
    admitted(&r, &session, 2);
}

#[test]
fn issue30_over_http_errors_carry_their_id_and_say_which() {
    let r = start();
    let session = initialize(r.addr);
    let cases = [
        (
            json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": [1]}),
            -32602,
            "the params must be an object",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": 5}}),
            -32602,
            "\"name\" must be a string, not the number 5",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 8, "method": "no/such", "params": {}}),
            -32601,
            "Method not found",
        ),
    ];
    for (request, code, says) in cases {
        let mut a = post(r.addr, Some(&session), &request);
        let id = request["id"].as_u64().unwrap();
        let (m, _) = a.answer(id);
        assert_eq!(m["error"]["code"], json!(code), "{request} -> {m}");
        let message = m["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{request} -> {m}");
        if code == -32601 {
            assert_eq!(m["error"]["data"]["method"], request["method"], "{m}");
        }
    }
}

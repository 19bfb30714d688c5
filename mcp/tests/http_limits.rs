//! Issue 20's HTTP scenarios against a served database, spoken to with raw HTTP/1.1: a half
//! header times out, a flood of half-open connections meets the cap and does not starve a
//! legitimate `initialize`, sessions are capped and expire, the `bearer` scheme in any
//! case, malformed JSON answered -32700, DELETE answered 200, short tokens refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use strata_mcp::HttpOptions;

const TOKEN: &str = "issue20-http-limits-token";

/// A server on a runtime of its own; dropping it shuts it down.
struct Running {
    addr: SocketAddr,
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

fn start(configure: impl FnOnce(&mut HttpOptions)) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let server = common::empty_server(dir.path());
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = std_listener.local_addr().unwrap();
    let mut options = HttpOptions::new(addr);
    options.token = Some(TOKEN.to_owned());
    configure(&mut options);
    options.validate().unwrap();
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
            strata_mcp::serve::serve_listener(server, &options, listener, async {
                let _ = rx.await;
            })
            .await;
        });
        rt.shutdown_timeout(Duration::from_secs(1));
    });
    Running {
        addr,
        stop: Some(tx),
        thread: Some(thread),
        _dir: dir,
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

/// Sends one request (`Connection: close`) and answers the status and the whole answer.
fn http(addr: SocketAddr, method: &str, extra: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    let has_auth = extra
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
    if !has_auth {
        req.push_str(&format!("Authorization: Bearer {TOKEN}\r\n"));
    }
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    c.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out).into_owned();
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, out)
}

fn session_id(answer: &str) -> String {
    answer
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_owned())
        })
        .expect("a session id")
}

/// Whether the server closes `c` within `within`.
fn closed_within(c: &mut TcpStream, within: Duration) -> bool {
    c.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn issue20_http_half_header() {
    let s = start(|o| o.header_timeout = Duration::from_secs(1));
    let mut half = TcpStream::connect(s.addr).unwrap();
    half.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n")
        .unwrap();
    let mut silent = TcpStream::connect(s.addr).unwrap();
    let started = Instant::now();
    assert!(closed_within(&mut half, Duration::from_secs(5)));
    assert!(closed_within(&mut silent, Duration::from_secs(5)));
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[test]
fn issue20_http_connection_flood_does_not_starve_initialize() {
    let s = start(|o| {
        o.header_timeout = Duration::from_secs(2);
        o.max_connections = 16;
    });
    // Many half-open connections, far past the cap.
    let mut flood = Vec::new();
    for _ in 0..200 {
        let mut c = TcpStream::connect(s.addr).unwrap();
        let _ = c.write_all(b"POST /mcp HTTP/1.1\r\nHost: local");
        flood.push(c);
    }
    // Past the cap: a quick 503, not a hang.
    let started = Instant::now();
    let (status, answer) = http(s.addr, "POST", &[], INITIALIZE);
    assert!(started.elapsed() < Duration::from_secs(3));
    if status != 200 {
        assert_eq!(status, 503, "{answer}");
        assert!(answer.contains("--max-connections"), "{answer}");
    }
    // Once the half-open ones time out, a legitimate client gets through.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, answer) = http(s.addr, "POST", &[], INITIALIZE);
        if status == 200 {
            assert!(answer.contains("\"result\""), "{answer}");
            break;
        }
        assert!(Instant::now() < deadline, "{status} {answer}");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(flood);
}

#[test]
fn issue20_http_session_cap_and_expiry() {
    let s = start(|o| {
        o.max_sessions = 2;
        o.session_idle = Duration::from_secs(1);
    });
    for _ in 0..2 {
        let (status, answer) = http(s.addr, "POST", &[], INITIALIZE);
        assert_eq!(status, 200, "{answer}");
    }
    let (status, answer) = http(s.addr, "POST", &[], INITIALIZE);
    assert_eq!(status, 503, "{answer}");
    assert!(
        answer.contains("-32000") && answer.contains("--max-sessions"),
        "{answer}"
    );
    // Idle sessions expire and their room is given back.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let (status, answer) = http(s.addr, "POST", &[], INITIALIZE);
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "{status} {answer}");
    }
}

#[test]
fn issue20_http_bearer_scheme_any_case() {
    let s = start(|_| {});
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let auth = format!("{scheme} {TOKEN}");
        let (status, answer) = http(s.addr, "POST", &[("Authorization", &auth)], INITIALIZE);
        assert_eq!(status, 200, "{scheme}: {answer}");
    }
    let (status, _) = http(
        s.addr,
        "POST",
        &[("Authorization", "bearer wrong-token-of-some-length")],
        INITIALIZE,
    );
    assert_eq!(status, 401);
}

#[test]
fn issue20_http_malformed_json_is_a_parse_error() {
    let s = start(|_| {});
    let (status, answer) = http(s.addr, "POST", &[], "{\"jsonrpc\": \"2.0\", nope");
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("-32700"), "{answer}");
    let (status, answer) = http(s.addr, "POST", &[], r#"{"id": 7, "hello": 1}"#);
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.contains("-32600") && answer.contains("\"id\":7"),
        "{answer}"
    );
}

#[test]
fn issue20_http_delete_session_answers_200() {
    let s = start(|_| {});
    let (status, answer) = http(s.addr, "POST", &[], INITIALIZE);
    assert_eq!(status, 200, "{answer}");
    let id = session_id(&answer);
    let (status, answer) = http(s.addr, "DELETE", &[("Mcp-Session-Id", &id)], "");
    assert!(status == 200 || status == 204, "{answer}");
}

#[test]
fn issue20_http_short_token_refused() {
    let mut o = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    o.token = Some("s3cret".to_owned());
    let e = o.validate().unwrap_err().to_string();
    assert!(e.contains("at least 16"), "{e}");
}

/// Issue 28: a `tools/call` whose params rmcp cannot read is -32602 with its id.
#[test]
fn issue28_http_bad_tools_call_params_are_invalid_params_with_the_id() {
    let s = start(|_| {});
    for body in [
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[1,2]}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":5}}"#,
    ] {
        let (status, answer) = http(s.addr, "POST", &[], body);
        assert_eq!(status, 200, "{answer}");
        assert!(
            answer.contains("-32602") && answer.contains("\"id\":9"),
            "{answer}"
        );
    }
}

/// The JSON-RPC message of an answer: its body, or the `data:` line of its event stream.
fn message(answer: &str) -> serde_json::Value {
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("");
    let json = body
        .lines()
        .map(|l| l.strip_prefix("data:").map_or(l, str::trim))
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no message in {answer}"));
    serde_json::from_str(json).unwrap()
}

/// Issue 28: within a session, the methods of the tasks and skills extensions (which the
/// server does not declare) are -32601 with the method in `data`, as a method rmcp does
/// not know is.
#[test]
fn issue_28_http_tasks_methods_are_not_found_with_the_method_in_data() {
    let s = start(|_| {});
    let (status, answer) = http(s.addr, "POST", &[], INITIALIZE);
    assert_eq!(status, 200, "{answer}");
    let session = session_id(&answer);
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let (status, answer) = http(
        s.addr,
        "POST",
        &headers,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert!(status == 200 || status == 202, "{answer}");
    for (id, method, params) in [
        (5, "tasks/get", r#"{"taskId":"t-1"}"#),
        (6, "tasks/cancel", r#"{"taskId":"t-1"}"#),
        (7, "tasks/list", "{}"),
        (8, "skills/list", "{}"),
        (9, "no/such", "{}"),
    ] {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        let (status, answer) = http(s.addr, "POST", &headers, &body);
        assert_eq!(status, 200, "{answer}");
        let m = message(&answer);
        assert_eq!(m["id"], id, "{answer}");
        assert_eq!(
            m["error"],
            serde_json::json!({"code": -32601, "message": "Method not found",
                               "data": {"method": method}}),
            "{method}: {answer}"
        );
    }
}

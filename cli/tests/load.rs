//! The load test of issue 20: MCP clients querying over HTTP while ingests land through the
//! daemon and one client sends runaway queries. Every answer reflects whole batches (the
//! count of the batch-tagged relation is a multiple of the batch size), counts and
//! snapshots never go backwards, every runaway call ends with an error naming a limit, and
//! every ingest commits.
//!
//! Always on: 2 clients, 5 ingests, assertions on answers only. With `STRATA_SOAK=1`: 8
//! clients and 100 ingests, and it prints (and checks) lookup p50/p99 and the server's
//! resident memory before, at its peak and after; run it on a release build:
//! `STRATA_SOAK=1 cargo test --release -p strata-cli --test load -- --nocapture`.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::BIN;

/// Facts each ingested batch adds to `tagged`.
const BATCH: u64 = 50;

/// Nodes of the base `imports` graph (a ring, with a few extra edges).
const NODES: u64 = 2_000;

struct Scale {
    clients: usize,
    ingests: u64,
    soak: bool,
}

fn scale() -> Scale {
    if std::env::var_os("STRATA_SOAK").is_some_and(|v| v == "1") {
        Scale {
            clients: 8,
            ingests: 100,
            soak: true,
        }
    } else {
        Scale {
            clients: 2,
            ingests: 5,
            soak: false,
        }
    }
}

/// One HTTP request (`Connection: close`): the status, the headers, and the JSON-RPC
/// messages of the answer (a JSON body or server-sent events).
fn post(addr: SocketAddr, session: Option<&str>, body: &Value) -> (u16, String, Vec<Value>) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let body = body.to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if let Some(s) = session {
        req.push_str(&format!(
            "Mcp-Session-Id: {s}\r\nMcp-Protocol-Version: 2025-06-18\r\n"
        ));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    c.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    c.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut payload = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        payload = dechunk(&payload);
    }
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let text = String::from_utf8_lossy(&payload);
    let mut messages = Vec::new();
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        messages.push(v);
    } else {
        for line in text.lines() {
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str::<Value>(data.trim())
            {
                messages.push(v);
            }
        }
    }
    (status, head, messages)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&b[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        let end = (start + size).min(b.len());
        out.extend_from_slice(&b[start..end]);
        b = &b[(end + 2).min(b.len())..];
    }
}

/// An MCP session over HTTP.
struct Client {
    addr: SocketAddr,
    session: String,
    next_id: u64,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "load", "version": "0"}}});
        let (status, head, messages) = post(addr, None, &init);
        assert_eq!(status, 200, "{head}");
        assert!(messages.iter().any(|m| m.get("result").is_some()));
        let session = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| v.trim().to_owned())
            })
            .expect("a session id");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, _) = post(addr, Some(&session), &note);
        assert!(status == 200 || status == 202, "{status}");
        Client {
            addr,
            session,
            next_id: 1,
        }
    }

    /// Calls `query` with `program` (and `extra` arguments): its result.
    fn query(&mut self, program: &str, extra: Value) -> Value {
        self.next_id += 1;
        let mut args = json!({"program": program});
        if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
            a.extend(e.clone());
        }
        let call = json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
            "params": {"name": "query", "arguments": args}});
        let (status, head, messages) = post(self.addr, Some(&self.session), &call);
        assert_eq!(status, 200, "{head}");
        messages
            .into_iter()
            .find(|m| m["id"] == json!(self.next_id))
            .and_then(|m| m.get("result").cloned())
            .unwrap_or_else(|| panic!("no result for {program}"))
    }
}

/// The server's resident memory in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn make_db(dir: &Path) -> std::path::PathBuf {
    let mut base = String::new();
    for i in 0..NODES {
        base.push_str(&format!("m{i}\tIMPORTS\tm{}\n", (i + 1) % NODES));
        base.push_str(&format!("m{i}\tIMPORTS\tm{}\n", (i * 7 + 3) % NODES));
    }
    // A first whole batch of `tagged`, so the relation exists before any client asks.
    for j in 0..BATCH {
        base.push_str(&format!("t_base_{j}\tTAGGED\tbase\n"));
    }
    common::db_with(dir, &base)
}

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(db: &Path) -> Server {
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg(db)
        .args(["--http", "127.0.0.1:0", "--timeout", "2s"])
        .args(["--max-work", "20000000", "--session-idle", "3s"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "no address");
        if let Some(rest) = line.split("http://").nth(1) {
            break rest.split('/').next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || for _ in stderr.lines() {});
    let sock = db.join("strata.sock");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "no ingest socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server { child, addr }
}

fn count_of(result: &Value) -> (u64, u64) {
    assert_eq!(result["isError"], json!(false), "{result}");
    let s = &result["structuredContent"];
    let count = s["rows"][0][0].as_u64().unwrap_or(0);
    let seq = s["snapshot"]["seq"].as_u64().unwrap();
    (count, seq)
}

#[test]
fn issue20_load_whole_batches_while_ingesting() {
    let scale = scale();
    let tmp = tempfile::tempdir().unwrap();
    let db = make_db(tmp.path());
    let server = serve(&db);
    let pid = server.child.id();
    let addr = server.addr;

    // Warm up, then take the baseline.
    {
        let mut c = Client::connect(addr);
        for _ in 0..20 {
            c.query("imports(\"m1\", ?d) => ?d", json!({}));
        }
    }
    let baseline = rss_kib(pid);
    let peak = Arc::new(Mutex::new(baseline));
    let done = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(Mutex::new(Vec::<Duration>::new()));

    let mut workers = Vec::new();
    for k in 0..scale.clients {
        let done = Arc::clone(&done);
        let lookups = Arc::clone(&lookups);
        workers.push(std::thread::spawn(move || {
            let mut c = Client::connect(addr);
            let (mut last_count, mut last_seq) = (0u64, 0u64);
            let mut rounds = 0u64;
            loop {
                let finished = done.load(Ordering::SeqCst);
                let node = (k as u64 * 131 + rounds * 17) % NODES;
                let t = Instant::now();
                let r = c.query(&format!("imports(\"m{node}\", ?d) => ?d"), json!({}));
                lookups.lock().unwrap().push(t.elapsed());
                assert_eq!(r["isError"], json!(false), "{r}");
                let (count, seq) = count_of(&c.query("tagged(?t, ?b) => count(?t)", json!({})));
                assert_eq!(
                    count % BATCH,
                    0,
                    "a partial batch: {count} facts at seq {seq}"
                );
                assert!(
                    count >= last_count,
                    "count went back: {last_count} -> {count}"
                );
                assert!(seq >= last_seq, "snapshot went back: {last_seq} -> {seq}");
                (last_count, last_seq) = (count, seq);
                rounds += 1;
                if finished {
                    return (rounds, last_count);
                }
            }
        }));
    }
    // The runaway client: cross products that hit the work budget or the deadline.
    let runaway = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let mut c = Client::connect(addr);
            let mut stopped = 0u64;
            while !done.load(Ordering::SeqCst) {
                let r = c.query(
                    "imports(?a, ?b), imports(?c, ?d), imports(?e, ?f) => ?a, ?c, ?e",
                    json!({}),
                );
                assert_eq!(r["isError"], json!(true), "{r}");
                let text = r.to_string();
                assert!(
                    text.contains("work") || text.contains("time"),
                    "a runaway query stopped for another reason: {text}"
                );
                stopped += 1;
            }
            stopped
        })
    };
    // Memory watcher.
    let watcher = {
        let done = Arc::clone(&done);
        let peak = Arc::clone(&peak);
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let now = rss_kib(pid);
                let mut p = peak.lock().unwrap();
                *p = (*p).max(now);
                drop(p);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    // The ingests, one after another through the daemon.
    let started = Instant::now();
    for i in 0..scale.ingests {
        let mut text = String::new();
        for j in 0..BATCH {
            text.push_str(&format!("t{i}_{j}\tTAGGED\tb{i}\n"));
        }
        let file = tmp.path().join(format!("tag{i}.edges.tsv"));
        std::fs::write(&file, text).unwrap();
        let out = Command::new(BIN)
            .args(["ingest", db.to_str().unwrap(), file.to_str().unwrap()])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("(via the running server)"), "{stdout}");
    }
    let ingest_time = started.elapsed();
    done.store(true, Ordering::SeqCst);
    let mut rounds = 0;
    for w in workers {
        let (r, last) = w.join().unwrap();
        rounds += r;
        assert_eq!(
            last,
            BATCH * (scale.ingests + 1),
            "the last answer misses batches"
        );
    }
    let stopped = runaway.join().unwrap();
    watcher.join().unwrap();

    // Memory after the load, once things settle.
    std::thread::sleep(Duration::from_secs(if scale.soak { 5 } else { 1 }));
    let after = rss_kib(pid);
    let peak = *peak.lock().unwrap();
    let mut l = lookups.lock().unwrap().clone();
    l.sort();
    let pct = |p: f64| l[((l.len() as f64 - 1.0) * p).round() as usize];
    let (p50, p99) = (pct(0.50), pct(0.99));
    eprintln!(
        "load: {} clients, {} ingests of {BATCH} facts in {:.1} s; {rounds} rounds, \
         {} lookups: p50 {:.2} ms, p99 {:.2} ms; {stopped} runaway calls stopped; RSS \
         baseline {} MiB, peak {} MiB, after {} MiB",
        scale.clients,
        scale.ingests,
        ingest_time.as_secs_f64(),
        l.len(),
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        baseline / 1024,
        peak / 1024,
        after / 1024,
    );
    assert!(stopped > 0, "the runaway client never finished a call");
    if scale.soak {
        // A flood of sessions: the cap holds, and expired ones give their memory back.
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "flood", "version": "0"}}});
        let (mut opened, mut refused) = (0, 0);
        for _ in 0..3_000 {
            match post(addr, None, &init).0 {
                200 => opened += 1,
                503 => refused += 1,
                s => panic!("initialize answered {s}"),
            }
        }
        let flooded = rss_kib(pid);
        std::thread::sleep(Duration::from_secs(8));
        let expired = rss_kib(pid);
        eprintln!(
            "sessions: 3000 initialize calls, {opened} opened, {refused} refused (503); RSS \
             {} MiB after, {} MiB once they expired",
            flooded / 1024,
            expired / 1024
        );
        assert!(refused > 0, "the session cap never held");
        assert!(
            expired <= baseline + baseline / 2 + 32 * 1024,
            "RSS {expired} KiB once the sessions expired, baseline {baseline} KiB"
        );
        assert!(p99 < Duration::from_millis(50), "lookup p99 {p99:?}");
        assert!(
            after <= baseline + baseline / 2 + 32 * 1024,
            "RSS {after} KiB after the load, baseline {baseline} KiB"
        );
    }
}

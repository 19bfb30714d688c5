//! The client configurations of `docs/clients.md`, run as written: every fenced block whose
//! info string is `json mcp-config FILE` is parsed and checked against the shape FILE's
//! client reads (`.vscode/mcp.json`: `servers`, each with a `type`; `.mcp.json` and
//! `.cursor/mcp.json`: `mcpServers`). A stdio entry is started with its own command and
//! arguments (the `strata` binary swapped for this build's, the database placeholder for a
//! demo database) and must answer `initialize` with the pack's name and list the `query`
//! tool; an HTTP entry gets `initialize` POSTed to its URL, with its headers, on a daemon
//! started with a token. The `sh mcp-command` block (`claude mcp add ... -- COMMAND`) is run
//! the same way as a stdio entry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_strata");

/// The database path every snippet names.
const DB_PLACEHOLDER: &str = "/path/to/db";

/// The port the HTTP snippets name, replaced by the daemon's.
const PORT_PLACEHOLDER: &str = ":7411/";

/// The token the test's daemon requires.
const TOKEN: &str = "client-config-test-token";

/// The pack name of the bundled example: the server's name in `initialize`.
const SERVER_NAME: &str = "deps";

/// One fenced block of the page: its info string and its text.
struct Block {
    info: String,
    text: String,
}

fn page() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/clients.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced blocks of a Markdown text, in order.
fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for line in markdown.lines() {
        match (open.take(), line.trim_start().strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_owned(),
                    text: String::new(),
                });
            }
            (Some(b), Some(rest)) if rest.trim().is_empty() => out.push(b),
            (Some(mut b), _) => {
                b.text.push_str(line);
                b.text.push('\n');
                open = Some(b);
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    out
}

/// The bundled example ingested into `dir/db`, as the other tests build it.
fn demo_db(dir: &Path) -> PathBuf {
    let db = dir.join("db");
    let files = strata_fixtures::example::write_example(&db).unwrap();
    let out = Command::new(BIN)
        .arg("ingest")
        .arg(&db)
        .args(&files)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    db
}

/// The `strata` entry of a configuration, after checking the file's shape: the key its
/// client reads, and each entry's `type` where the client needs or allows one.
fn strata_entry(file: &str, config: &Value) -> Value {
    let (key, other, type_required) = match file {
        ".vscode/mcp.json" => ("servers", "mcpServers", true),
        ".mcp.json" | ".cursor/mcp.json" => ("mcpServers", "servers", false),
        _ => {
            panic!("no client reads {file:?}: name .mcp.json, .cursor/mcp.json or .vscode/mcp.json")
        }
    };
    assert!(
        config.get(other).is_none(),
        "{file} is read under \"{key}\", not \"{other}\": {config}"
    );
    let servers = config
        .get(key)
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("{file}: no \"{key}\" object: {config}"));
    let entry = servers
        .get("strata")
        .unwrap_or_else(|| panic!("{file}: no \"strata\" server: {config}"))
        .clone();
    let kind = entry.get("type").and_then(Value::as_str);
    assert!(
        !type_required || kind.is_some(),
        "{file}: every server needs a \"type\": {entry}"
    );
    match (kind, entry.get("command"), entry.get("url")) {
        (None | Some("stdio"), Some(_), None) | (None | Some("http"), None, Some(_)) => {}
        _ => panic!(
            "{file}: an entry is a \"command\" (type stdio) or a \"url\" (type http): {entry}"
        ),
    }
    entry
}

/// A stdio server started from a snippet's command line, spoken to in JSON-RPC lines.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl StdioServer {
    fn start(command: &str, args: &[String], db: &Path) -> StdioServer {
        assert_eq!(command, "strata", "the command runs the strata binary");
        assert!(
            args.iter().any(|a| a == DB_PLACEHOLDER),
            "the arguments name the database as {DB_PLACEHOLDER}: {args:?}"
        );
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                if a == DB_PLACEHOLDER {
                    db.to_str().unwrap().to_owned()
                } else {
                    a.clone()
                }
            })
            .collect();
        let mut child = Command::new(BIN)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start strata {args:?}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdioServer {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: &Value) {
        let sent = writeln!(self.stdin, "{message}").and_then(|()| self.stdin.flush());
        if let Err(e) = sent {
            let status = self.child.wait().map(|s| s.to_string()).unwrap_or_default();
            panic!("the server is gone ({e}; it exited with {status}): does its command line run?");
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let v: Value = serde_json::from_str(&line).expect("stdout is JSON-RPC");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize_params() -> Value {
    json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "client-config-test", "version": "0"}
    })
}

/// Starts a stdio snippet and checks `initialize` and `tools/list`.
fn check_stdio(what: &str, command: &str, args: &[String], db: &Path) {
    let mut server = StdioServer::start(command, args, db);
    let init = server.request(1, "initialize", initialize_params());
    assert_eq!(
        init["result"]["serverInfo"]["name"],
        json!(SERVER_NAME),
        "{what}: initialize: {init}"
    );
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = server.request(2, "tools/list", json!({}));
    let tools: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{what}: tools/list: {listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"query"), "{what}: tools/list: {tools:?}");
}

/// `strata serve DB --http 127.0.0.1:0 --token-file ...`, and the address it bound.
struct Daemon {
    child: Child,
    addr: String,
}

impl Daemon {
    fn start(db: &Path, token_file: &Path) -> Daemon {
        let mut child = Command::new(BIN)
            .arg("serve")
            .arg(db)
            .args(["--http", "127.0.0.1:0", "--token-file"])
            .arg(token_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.split("serving MCP at http://").nth(1) {
                    let addr = rest.split('/').next().unwrap_or("").to_owned();
                    let _ = tx.send(addr);
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the daemon says where it serves");
        Daemon { child, addr }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs `body` to `url` with `headers` (and the headers the streamable HTTP transport
/// asks of every client): the status and the JSON-RPC message of the answer, if any.
fn post(url: &str, headers: &[(String, String)], body: &Value) -> (u16, Option<Value>) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = body.to_string();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream.write_all(request.as_bytes()).unwrap();

    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) => panic!("reading the answer: {e}"),
        }
        if let Some(answer) = parse_answer(&raw) {
            return answer;
        }
    }
    parse_answer(&raw)
        .unwrap_or_else(|| panic!("no HTTP answer: {}", String::from_utf8_lossy(&raw)))
}

/// The status and the first JSON-RPC message of a complete enough HTTP answer (a JSON body
/// or an event stream of `data:` lines, chunked or not); `None` while more must be read.
fn parse_answer(raw: &[u8]) -> Option<(u16, Option<Value>)> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status: u16 = head.split_whitespace().nth(1)?.parse().ok()?;
    if status != 200 {
        return Some((status, None));
    }
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    if let Ok(v) = serde_json::from_str::<Value>(body.trim()) {
        return Some((status, Some(v)));
    }
    for line in body.lines() {
        if let Some(data) = line.strip_prefix("data:")
            && let Ok(v) = serde_json::from_str::<Value>(data.trim())
            && v.get("id").is_some()
        {
            return Some((status, Some(v)));
        }
    }
    None
}

/// The payload of a chunked body, as far as it has come.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            out.push_str(&rest[..rest.len().min(n)]);
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// Replaces the token placeholders a snippet may use (an environment variable for Claude
/// Code and Cursor, an input VS Code asks for) by the daemon's token.
fn with_token(file: &str, config: &Value, value: &str) -> String {
    let mut v = value
        .replace("${STRATA_TOKEN}", TOKEN)
        .replace("${env:STRATA_TOKEN}", TOKEN);
    while let Some(start) = v.find("${input:") {
        let end = start + v[start..].find('}').expect("a closed ${input:...}");
        let id = &v[start + "${input:".len()..end];
        let declared = config["inputs"]
            .as_array()
            .is_some_and(|inputs| inputs.iter().any(|i| i["id"] == json!(id)));
        assert!(declared, "{file}: ${{input:{id}}} names no declared input");
        v.replace_range(start..=end, TOKEN);
    }
    assert!(!v.contains("${"), "{file}: a placeholder left in {value:?}");
    v
}

/// POSTs `initialize` to an HTTP snippet's URL with its headers, and checks the answer;
/// without the headers the daemon must refuse it.
fn check_http(file: &str, config: &Value, entry: &Value, daemon: &Daemon) {
    let url = entry["url"].as_str().expect("a url");
    assert!(
        url.starts_with("http://127.0.0.1:")
            && url.ends_with("/mcp")
            && url.contains(PORT_PLACEHOLDER),
        "{file}: the daemon's URL is http://127.0.0.1{PORT_PLACEHOLDER}mcp: {url}"
    );
    let url = url.replace(PORT_PLACEHOLDER, &format!(":{}/", port_of(&daemon.addr)));
    let headers: Vec<(String, String)> = entry["headers"]
        .as_object()
        .unwrap_or_else(|| panic!("{file}: the daemon needs a headers object: {entry}"))
        .iter()
        .map(|(k, v)| {
            let v = v.as_str().expect("a header is a string");
            (k.clone(), with_token(file, config, v))
        })
        .collect();
    let request =
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()});
    let (status, answer) = post(&url, &headers, &request);
    assert_eq!(status, 200, "{file}: initialize over HTTP");
    let answer = answer.unwrap_or_else(|| panic!("{file}: no JSON-RPC answer"));
    assert_eq!(
        answer["result"]["serverInfo"]["name"],
        json!(SERVER_NAME),
        "{file}: initialize over HTTP: {answer}"
    );
    let (status, _) = post(&url, &[], &request);
    assert_eq!(
        status, 401,
        "{file}: without its headers the daemon refuses the call"
    );
}

fn port_of(addr: &str) -> &str {
    addr.rsplit(':').next().unwrap_or(addr)
}

#[test]
fn every_client_configuration_in_the_docs_starts_and_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let db = demo_db(tmp.path());
    let token_file = tmp.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();

    let blocks = blocks(&page());
    let (mut stdio, mut http, mut commands) = (0, 0, 0);
    // Started first: a `--stdio` entry then relays to it over DB/strata-mcp.sock (had a
    // `--stdio` entry started a daemon of its own first, that would hold the database).
    let mut daemon: Option<Daemon> = Some(Daemon::start(&db, &token_file));
    for block in &blocks {
        let mut info = block.info.split_whitespace();
        match (info.next(), info.next(), info.next()) {
            (Some("json"), Some("mcp-config"), Some(file)) => {
                let config: Value = serde_json::from_str(&block.text)
                    .unwrap_or_else(|e| panic!("{file}: not JSON ({e}):\n{}", block.text));
                let entry = strata_entry(file, &config);
                if let Some(command) = entry.get("command") {
                    let args: Vec<String> = entry["args"]
                        .as_array()
                        .unwrap_or_else(|| panic!("{file}: \"args\" is an array: {entry}"))
                        .iter()
                        .map(|a| a.as_str().expect("an argument is a string").to_owned())
                        .collect();
                    check_stdio(file, command.as_str().expect("a string"), &args, &db);
                    stdio += 1;
                } else {
                    let d = daemon.get_or_insert_with(|| Daemon::start(&db, &token_file));
                    check_http(file, &config, &entry, d);
                    http += 1;
                }
            }
            (Some("sh"), Some("mcp-command"), _) => {
                for line in block.text.lines().filter(|l| !l.trim().is_empty()) {
                    let (_, command) = line
                        .split_once(" -- ")
                        .unwrap_or_else(|| panic!("no `--` before the server's command: {line}"));
                    let words: Vec<String> =
                        command.split_whitespace().map(str::to_owned).collect();
                    check_stdio(line, &words[0], &words[1..], &db);
                    commands += 1;
                }
            }
            _ => {}
        }
    }
    // The page holds the configurations it promises: Claude Code's and Codex's commands,
    // Claude Code's .mcp.json, Cursor's and VS Code's, and the daemon's for each client.
    assert_eq!(
        (commands, stdio, http),
        (2, 3, 3),
        "the `sh mcp-command` lines, stdio and HTTP `json mcp-config` blocks found"
    );
}

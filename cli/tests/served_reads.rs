//! Every reader of the command line while a server holds the database (issue 28): `strata
//! query`, `explain`, `cypher`, `schema`, `stats`, `find`, `look`, `values` and `ask` are
//! sent to the server over `DB/strata.sock` and print what they print directly, errors and
//! exit status included, and `strata retract` hands its batch to the server; `strata
//! check` says it needs the database alone. `find`, `look` and `values` answer what the
//! MCP tools answer. The byte budget applies to the command line only with `--max-bytes`,
//! and a cut is then said on standard error too.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;

use common::BIN;

/// What one run of `strata` printed and how it exited.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    stdout: String,
    stderr: String,
    code: Option<i32>,
}

fn strata(args: &[&str]) -> Run {
    let out = Command::new(BIN)
        .args(args)
        .env("STRATA_TEST_MODEL_KEY", "key-1")
        .stdin(Stdio::null())
        .output()
        .expect("run strata");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code(),
    }
}

/// `strata serve DB --daemon` holding the database until dropped.
struct Served {
    child: Child,
    db: PathBuf,
}

impl Served {
    fn start(db: &Path, args: &[&str]) -> Served {
        let child = Command::new(BIN)
            .arg("serve")
            .arg(db)
            .args(["--daemon", "--idle-exit", "never"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start strata serve");
        // The ingest socket is bound before the MCP socket.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !db.join("strata-mcp.sock").exists() {
            assert!(Instant::now() < deadline, "no socket in {}", db.display());
            std::thread::sleep(Duration::from_millis(20));
        }
        Served {
            child,
            db: db.to_owned(),
        }
    }

    /// The text of MCP tool `name` called with `arguments`, over `DB/strata-mcp.sock`.
    fn tool(&self, name: &str, arguments: Value) -> String {
        let conn = UnixStream::connect(self.db.join("strata-mcp.sock")).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut lines = BufReader::new(conn.try_clone().unwrap());
        let mut w = &conn;
        let mut send = |v: Value| writeln!(w, "{v}").unwrap();
        send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "served-reads-test", "version": "0"}}}),
        );
        send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}));
        loop {
            let mut line = String::new();
            assert!(
                lines.read_line(&mut line).unwrap() > 0,
                "no answer to {name}"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(2) {
                assert_eq!(v["result"]["isError"], json!(false), "{v}");
                return v["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned();
            }
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bundled example database (the `deps` module, the pack, a Cypher graph) in `dir`.
fn example(dir: &Path) -> PathBuf {
    let db = dir.join("ex");
    let r = strata(&["demo", db.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{r:?}");
    db
}

/// `r` with the time of explain's `answer:` line left out (it is measured).
fn untimed(mut r: Run) -> Run {
    r.stdout = r
        .stdout
        .lines()
        .map(|l| match l.strip_prefix("answer: ") {
            Some(rest) => format!("answer: {}", rest.rsplit_once(", ").map_or(rest, |p| p.0)),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    r
}

#[test]
fn issue_28_every_reader_answers_through_a_running_server_as_it_does_directly() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let d = db.to_str().unwrap();
    let reads: Vec<Vec<&str>> = vec![
        vec!["query", d, r#"deps.depends_on("app", ?d) => ?d"#],
        vec!["query", d, r#"deps.depends_on("app", ?d) => ?d"#, "--json"],
        vec!["query", d, "imports(?a, ?b) => ?a, ?b", "--limit", "2"],
        vec!["query", d, "imports(?a, ?b) => ?a, ?b", "--page-token", "2"],
        vec![
            "query",
            d,
            "pkg(?p, ?l), imports(?p, ?to) => ?p, ?l",
            "--bind",
            "to=log",
        ],
        vec![
            "query",
            d,
            "imports(?a, ?b) => ?a",
            "--no-witnesses",
            "--sample",
            "1",
        ],
        vec!["query", d, "nosuch(?a) => ?a"],
        vec!["query", d, "imports(?a, ?b => ?a"],
        vec!["query", d, "imports(?a, ?b) => ?a", "--limit", "0"],
        vec!["query", d, "imports(?a, ?b) => ?a", "--bind", "novar"],
        vec!["explain", d, r#"deps.depends_on("app", ?d) => ?d"#],
        vec!["cypher", d, "MATCH (p:Package) RETURN p.name"],
        vec!["cypher", d, "MATCH (p:Package RETURN p.name"],
        vec!["schema", d],
        vec!["schema", d, "deps"],
        vec!["schema", d, "nosuch"],
        vec!["stats", d],
        vec!["find", d, "util"],
        vec!["find", d, "lgo", "--json"],
        vec!["look", d, "imports"],
        vec!["look", d, "deps"],
        vec!["look", d, "imprts"],
        vec!["values", d, "pkg.license"],
        vec!["values", d, "imports.2", "--limit", "2"],
        vec!["values", d, "imports"],
    ];
    let direct: Vec<Run> = reads.iter().map(|a| untimed(strata(a))).collect();
    // Errors among them, so that the comparison covers exit status and standard error.
    assert!(direct.iter().any(|r| r.code == Some(1)));
    assert!(direct[7].stderr.contains('^'), "{:?}", direct[7]);
    let served = Served::start(&db, &[]);
    for (args, direct) in reads.iter().zip(&direct) {
        let via = untimed(strata(args));
        assert_eq!(&via, direct, "strata {}", args[..1].join(" "));
        assert!(
            !via.stderr.contains("in use by another process"),
            "{args:?}: {via:?}"
        );
    }
    drop(served);
}

#[test]
fn issue_28_find_look_and_values_answer_what_the_mcp_tools_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let d = db.to_str().unwrap();
    let direct = [
        strata(&["find", d, "util"]),
        strata(&["find", d, "app", "--limit", "1"]),
        strata(&["look", d, "pkg"]),
        strata(&["values", d, "pkg.license", "--limit", "3"]),
    ];
    let served = Served::start(&db, &[]);
    let tools = [
        served.tool("find", json!({"name": "util"})),
        served.tool("find", json!({"name": "app", "limit": 1})),
        served.tool("look", json!({"target": "pkg"})),
        served.tool("values", json!({"target": "pkg.license", "limit": 3})),
    ];
    for (cli, tool) in direct.iter().zip(&tools) {
        assert_eq!(cli.code, Some(0), "{cli:?}");
        assert_eq!(cli.stdout, format!("{tool}\n"));
    }
    assert!(tools[0].contains("\"util\""), "{}", tools[0]);
    assert!(
        tools[3].starts_with("ran: pkg(_, ?license) => ?license"),
        "{}",
        tools[3]
    );
}

#[test]
fn issue_28_check_and_compact_say_they_need_the_database_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let d = db.to_str().unwrap();
    assert_eq!(strata(&["check", d]).code, Some(0));
    let served = Served::start(&db, &[]);
    let r = strata(&["check", d]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("is in use by another process"), "{r:?}");
    assert!(r.stderr.contains("needs the database to itself"), "{r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
    let r = strata(&["compact", d]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stderr.contains("`strata compact` rewrites every file"),
        "{r:?}"
    );
    drop(served);
    // Stopped, the server lets the check run again.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = strata(&["check", d]);
        if r.code == Some(0) {
            break;
        }
        assert!(Instant::now() < deadline, "{r:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A database of `n` edges `pkgI IMPORTS depI`.
fn wide(dir: &Path, n: usize) -> PathBuf {
    let edges: String = (0..n)
        .map(|i| format!("pkg{i:05}\tIMPORTS\tdep{i:05}\n"))
        .collect();
    common::db_with(dir, &edges)
}

#[test]
fn issue_28_the_byte_budget_applies_to_the_cli_only_with_max_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = wide(tmp.path(), 1_929);
    let d = db.to_str().unwrap();
    let all = [
        "query",
        d,
        "imports(?a, ?b) => ?a, ?b",
        "--limit",
        "1000000",
    ];
    let check = |served: bool| {
        // Without --max-bytes: every row up to --limit, no cut, nothing on stderr.
        let r = strata(&[&all[..], &["--json"]].concat());
        assert_eq!(r.code, Some(0), "{r:?}");
        assert!(r.stderr.is_empty(), "{r:?}");
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(
            v["rows"].as_array().unwrap().len(),
            1_929,
            "served: {served}"
        );
        assert_eq!(v["total"], 1_929);
        assert!(v.get("cut").is_none(), "{}", v["cut"]);
        assert!(v["next"].is_null());
        assert!(r.stdout.len() > 80_000, "{}", r.stdout.len());
        let r = strata(&all);
        assert!(
            r.stdout.ends_with("1929 rows\n"),
            "{}",
            &r.stdout[r.stdout.len() - 200..]
        );
        // With it: the answer is fitted, and the cut said on stderr too.
        let r = strata(&[&all[..], &["--json", "--max-bytes", "80000"]].concat());
        assert_eq!(r.code, Some(0), "{r:?}");
        assert!(r.stdout.len() <= 80_000, "{}", r.stdout.len());
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        let kept = v["rows"].as_array().unwrap().len() as u64;
        assert!(kept < 1_929);
        assert_eq!(v["cut"]["rows_left_out"], 1_929 - kept);
        assert_eq!(
            r.stderr,
            format!(
                "strata: the answer was cut to fit --max-bytes 80000: rows 1 to {kept} of 1929 \
                 shown, {} more of this page left out; continue with --page-token {kept}\n",
                1_929 - kept
            )
        );
        let r = strata(&[&all[..], &["--max-bytes", "5000"]].concat());
        assert!(r.stdout.len() <= 5_000, "{}", r.stdout.len());
        assert!(
            r.stdout
                .contains("left out to keep the answer under 5000 bytes")
        );
        assert!(
            r.stderr
                .starts_with("strata: the answer was cut to fit --max-bytes 5000: ")
        );
        // A budget under the least is refused, as before.
        let r = strata(&[&all[..], &["--max-bytes", "10"]].concat());
        assert_eq!(r.code, Some(1), "{r:?}");
        (
            strata(&[&all[..], &["--max-bytes", "5000"]].concat()),
            strata(&["values", d, "imports.1", "--limit", "1000000"]),
            strata(&[
                "values",
                d,
                "imports.1",
                "--limit",
                "1000000",
                "--max-bytes",
                "2000",
            ]),
        )
    };
    let direct = check(false);
    assert!(direct.1.stdout.ends_with("1929 rows\n"), "{:?}", direct.1);
    assert!(direct.2.stdout.len() <= 2_000, "{:?}", direct.2);
    assert!(
        direct.2.stderr.contains("--max-bytes 2000"),
        "{:?}",
        direct.2
    );
    let _served = Served::start(&db, &[]);
    assert_eq!(check(true), direct);
}

/// The CPU time (user and system, in clock ticks) process `pid` has spent.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    // Fields 14 and 15 of stat(5), counted after the command's closing parenthesis.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn issue_28_an_interrupted_read_gives_back_its_heavy_slot() {
    let tmp = tempfile::tempdir().unwrap();
    let db = wide(tmp.path(), 2_000);
    let d = db.to_str().unwrap();
    // One heavy slot, and a long wait for it: a slot the interrupted read kept would make
    // the next heavy call wait to its own time limit (30 s), then be refused as busy.
    let served = Served::start(&db, &["--heavy-calls", "1", "--admission-wait", "60s"]);
    let before = cpu_ticks(served.child.id());
    // 8 billion combinations to count: minutes of work.
    let mut long = Command::new(BIN)
        .args([
            "query",
            d,
            "imports(?a, _), imports(?b, _), imports(?c, _) => count(?a)",
            "--timeout",
            "10m",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A second of the server's CPU on it: far past the light lane, so it holds the slot.
    let deadline = Instant::now() + Duration::from_secs(120);
    while cpu_ticks(served.child.id()) < before + 100 {
        assert!(Instant::now() < deadline, "the long read did not start");
        assert!(long.try_wait().unwrap().is_none(), "the long read ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    long.kill().unwrap();
    long.wait().unwrap();
    // `explain` always takes a slot.
    let r = strata(&["explain", d, "imports(?a, ?b) => ?a"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("answer: 2000 rows"), "{r:?}");
}

/// `r` with the times of a batch's summary line left out (they are measured).
fn batch_untimed(mut r: Run) -> Run {
    r.stdout = r
        .stdout
        .lines()
        .map(|l| match (l.contains(" (read "), l.rfind("; ")) {
            (true, Some(i)) => format!("{}; TIMES", &l[..i]),
            _ => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    r
}

/// A database in `dir/NAME` whose facts are owned by units `a.go`, `b.go` and `c.go`.
fn with_units(dir: &Path, name: &str) -> PathBuf {
    let db = dir.join(name);
    for (unit, edges) in [
        ("a.go", "a\tIMPORTS\tb\na\tIMPORTS\tc\n"),
        ("b.go", "b\tIMPORTS\tc\n"),
        ("c.go", "c\tIMPORTS\td\n"),
    ] {
        let dump = dir.join(format!("{name}-{unit}.edges.tsv"));
        std::fs::write(&dump, edges).unwrap();
        let r = strata(&[
            "ingest",
            db.to_str().unwrap(),
            dump.to_str().unwrap(),
            "--unit",
            unit,
        ]);
        assert_eq!(r.code, Some(0), "{r:?}");
    }
    db
}

#[test]
fn issue_28_retract_hands_its_batch_to_a_running_server_and_prints_what_it_prints_directly() {
    let tmp = tempfile::tempdir().unwrap();
    let direct_db = with_units(tmp.path(), "direct");
    let served_db = with_units(tmp.path(), "served");
    // The same retractions, in order, on each copy: a unit that owns nothing beside one
    // that does, one labelled and with an id, the id again (a no-op), only units that own
    // nothing (an error, nothing committed), and a malformed label.
    let retractions: Vec<Vec<&str>> = vec![
        vec!["--unit", "b.go", "--unit", "nosuch.go"],
        vec![
            "--unit",
            "a.go",
            "--label",
            "commit=abc",
            "--batch-id",
            "r1",
        ],
        vec!["--unit", "a.go", "--batch-id", "r1"],
        vec!["--unit", "nosuch.go"],
        vec!["--unit", "c.go", "--label", "novalue"],
    ];
    let run = |db: &Path| -> Vec<Run> {
        retractions
            .iter()
            .map(|args| {
                let d = db.to_str().unwrap();
                batch_untimed(strata(&[&["retract", d][..], args].concat()))
            })
            .collect()
    };
    let direct = run(&direct_db);
    assert_eq!(
        direct[0].stdout,
        "batch 4: 0 facts read from 0 files, 0 new, 0 duplicates, 1 removed; relations: \
         none; TIMES"
    );
    assert_eq!(
        direct[0].stderr,
        "warning: unit \"nosuch.go\" owns no facts in this database\n"
    );
    assert!(
        direct[1]
            .stdout
            .starts_with("batch 5: 0 facts read from 0 files, 0 new, 0 duplicates, 2 removed"),
        "{:?}",
        direct[1]
    );
    assert_eq!(
        direct[2].stdout,
        "batch already committed as batch 5: nothing written (0 facts read)"
    );
    assert_eq!(direct[3].code, Some(1), "{:?}", direct[3]);
    assert_eq!(direct[4].code, Some(1), "{:?}", direct[4]);
    let facts = |db: &Path| strata(&["query", db.to_str().unwrap(), "imports(?a, ?b) => ?a, ?b"]);
    let after_direct = facts(&direct_db);
    // `stats` but for the bytes on disk (a held file is not yet shrunk as a closed one is).
    let stats = |db: &Path| {
        let mut r = strata(&["stats", db.to_str().unwrap()]);
        r.stdout = r
            .stdout
            .lines()
            .filter(|l| !l.ends_with(" bytes"))
            .collect();
        r
    };
    let stats_direct = stats(&direct_db);

    let served = Served::start(&served_db, &[]);
    let before = facts(&served_db);
    assert!(
        before.stdout.contains("imports(\"a\", \"b\")"),
        "{before:?}"
    );
    let via = run(&served_db);
    for ((args, direct), via) in retractions.iter().zip(&direct).zip(&via) {
        assert_eq!(via, direct, "strata retract {args:?}");
        assert!(!via.stderr.contains("in use"), "{via:?}");
    }
    // The server committed them: its next read sees the facts gone, and the batches with
    // their labels, as the direct copy does.
    let after = facts(&served_db);
    assert_eq!(after, after_direct);
    assert_eq!(
        after.stdout,
        "columns: a, b\n1. c, d\n   imports(\"c\", \"d\")\n1 row\n"
    );
    assert_eq!(stats(&served_db), stats_direct);
    assert!(
        stats_direct.stdout.starts_with("batch 5 commit=abc"),
        "{stats_direct:?}"
    );
    drop(served);
}

const WRONG: &str = r#"depends_on("app", ?d) => ?d"#;
const RIGHT: &str = r#"deps.depends_on("app", ?d) => ?d"#;

#[test]
fn issue_28_ask_through_a_running_server_answers_what_it_answers_directly() {
    use strata_fixtures::fake_model::{FakeModel, Reply};
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let d = db.to_str().unwrap();
    let wrong_cypher = r#"MATCH (:Pkg {name: "api"})-[:IMPORTS]->(d:Package) RETURN d.name"#;
    let right_cypher = r#"MATCH (:Package {name: "api"})-[:IMPORTS]->(d:Package) RETURN d.name"#;
    // Each question with its flags and the replies its model gives, in order.
    let asks: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec![
                "what does app depend on?",
                "--model-key-env",
                "STRATA_TEST_MODEL_KEY",
            ],
            vec![WRONG, RIGHT],
        ),
        (vec!["q", "--json", "--mode", "local"], vec![RIGHT]),
        (vec!["q", "--limit", "1"], vec![RIGHT]),
        (
            vec!["what does api import?", "--language", "cypher"],
            vec![wrong_cypher, right_cypher],
        ),
        (
            vec!["what does api import?", "--language", "cypher", "--json"],
            vec![right_cypher],
        ),
        (vec!["q", "--tries", "2"], vec!["x", "y("]),
        (vec!["q", "--tries", "2", "--json"], vec!["x", "y("]),
        (vec!["q", "--mode", "frontier"], vec![]),
        (vec!["   "], vec![]),
    ];
    let script: Vec<Reply> = asks
        .iter()
        .flat_map(|(_, replies)| replies.iter().map(|r| Reply::text(*r)))
        .collect();
    // One model for both passes, so that its URL (which answers name) is the same.
    let fake = FakeModel::start([script.clone(), script].concat()).unwrap();
    let url = fake.url();
    let run = || -> Vec<Run> {
        asks.iter()
            .map(|(args, _)| {
                let model = ["--model-url", &url, "--model-name", "m"];
                strata(&[&["ask", d][..], args, &model].concat())
            })
            .collect()
    };
    // Without a model: the same error either way.
    let unconfigured = strata(&["ask", d, "q"]);
    let direct = run();
    assert!(
        direct[0]
            .stdout
            .starts_with(&format!("ran: {RIGHT}\ncolumns: d\n1. api\n")),
        "{:?}",
        direct[0]
    );
    assert!(
        direct[0]
            .stdout
            .ends_with(&format!("2. local m (openai at {url}): {RIGHT}\n   ok\n")),
        "{:?}",
        direct[0]
    );
    assert!(
        direct[2].stdout.contains("rows 1 to 1 of 3"),
        "{:?}",
        direct[2]
    );
    assert!(direct[3].stdout.contains("cypher: unknown label :Pkg"));
    assert_eq!(direct[5].code, Some(1), "{:?}", direct[5]);
    assert!(
        direct[5]
            .stderr
            .starts_with("ask: no program that checks and runs after 2 tries")
    );
    let failed: Value = serde_json::from_str(&direct[6].stderr).unwrap();
    assert_eq!(failed["tries"].as_array().unwrap().len(), 2, "{failed}");
    assert!(direct[7].stderr.contains("fallback"), "{:?}", direct[7]);
    assert_eq!(direct[8].code, Some(1), "{:?}", direct[8]);
    assert!(
        unconfigured
            .stderr
            .starts_with("ask: no model is configured")
    );
    // Every reply was asked for: a model of each try that the script holds.
    let asked = fake.requests().len();
    assert_eq!(asked, asks.iter().map(|(_, r)| r.len()).sum::<usize>());

    let served = Served::start(&db, &[]);
    let via = run();
    for ((args, _), (direct, via)) in asks.iter().zip(direct.iter().zip(&via)) {
        assert_eq!(via, direct, "strata ask {args:?}");
    }
    assert_eq!(strata(&["ask", d, "q"]), unconfigured);
    // The server asked the model exactly what the command asked it, with the key the
    // command read from its environment.
    let requests = fake.requests();
    assert_eq!(requests.len(), 2 * asked);
    for (a, b) in requests[..asked].iter().zip(&requests[asked..]) {
        assert_eq!(a.body, b.body);
        assert_eq!(a.header("authorization"), b.header("authorization"));
    }
    assert_eq!(
        requests[asked].header("authorization"),
        Some("Bearer key-1")
    );
    assert_eq!(requests[asked + 2].header("authorization"), None);
    drop(served);
}

#[test]
fn issue_28_an_interrupted_ask_cancels_its_model_request_and_gives_back_its_slot() {
    use std::io::Read;
    use std::net::TcpListener;
    use std::sync::mpsc;
    let tmp = tempfile::tempdir().unwrap();
    let db = example(tmp.path());
    let d = db.to_str().unwrap();
    // A model that reads the request and never answers: it says when the request came
    // and when the connection closed.
    let model = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", model.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut conn, _) = model.accept().unwrap();
        let mut buf = [0u8; 4096];
        let mut sent = false;
        loop {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) if !sent => {
                    sent = true;
                    tx.send("request").unwrap();
                }
                Ok(_) => {}
            }
        }
        let _ = tx.send("closed");
    });
    let served = Served::start(&db, &["--heavy-calls", "1", "--admission-wait", "60s"]);
    let mut ask = Command::new(BIN)
        .args(["ask", d, "what does app depend on?", "--model-url", &url])
        .args(["--model-name", "m", "--model-timeout", "10m"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok("request"));
    ask.kill().unwrap();
    ask.wait().unwrap();
    let killed = Instant::now();
    // The server's ask stops: its model request is dropped...
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok("closed"));
    let closed = killed.elapsed();
    // ...and its heavy slot given back: `explain` (always heavy) is admitted at once
    // rather than after the 60 s admission wait.
    let r = strata(&["explain", d, "imports(?a, ?b) => ?a"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stdout.contains("answer: 2 rows"), "{r:?}");
    assert!(
        killed.elapsed() < Duration::from_secs(10),
        "{:?}",
        killed.elapsed()
    );
    assert!(closed < Duration::from_secs(2), "{closed:?}");
    drop(served);
}

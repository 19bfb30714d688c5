//! `mcp-bench`: round trip of a small `query` call to `strata serve`, over streamable HTTP on
//! loopback and over stdio, and throughput of concurrent HTTP clients.
//!
//! ```text
//! cargo build --release -p strata-cli
//! cargo run --release -p strata-benches --bin mcp-bench -- [--db DIR] [--strata PATH]
//!     [--calls N] [--clients C] [--seconds S]
//! ```
//!
//! Builds the bundled example database (`strata_fixtures::example::write_example`, ingested
//! in one batch through `strata_store`) in a temporary directory, or takes `--db DIR`. Finds
//! the `strata` binary next to this one (`target/release/strata`), or takes `--strata PATH`.
//! Then, one server at a time:
//!
//! 1. `strata serve DB --http 127.0.0.1:PORT`: one session on one keep-alive connection
//!    (`ureq`), [`WARMUP`] untimed calls, then N (default 1000) sequential `query` calls of
//!    `imports("api", ?d) => ?d`, each timed from the request to the last byte of its answer
//!    (an SSE stream, whose `data:` lines are parsed); then C (default 16) threads, each its
//!    own connection and session, calling the same query in a loop for S seconds (default 30).
//!    Every answer is checked (HTTP 200, a JSON-RPC result, not `isError`, both rows present);
//!    anything else counts as an error. The server is stopped with SIGTERM.
//! 2. `strata serve DB --stdio`: the same warm-up and N sequential calls, written as JSON-RPC
//!    lines to its stdin and read from its stdout (by a reader thread, as a client would).
//!
//! Every loop is bounded in count and in time, and every request goes to 127.0.0.1. Prints a
//! Markdown table; exits 1 when any call failed.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use strata_benches::mcp::{
    HttpSession, PROGRAM, Server, StdioSession, build_example, check_answer, strata_binary,
};
use strata_benches::{BenchResult, median, percentile};

const USAGE: &str = "\
usage: mcp-bench [--db DIR] [--strata PATH] [--calls N] [--clients C] [--seconds S]

  --db DIR       serve this database (default: the bundled example, built in a temp dir)
  --strata PATH  the strata binary (default: `strata` next to this binary; build it with
                 `cargo build --release -p strata-cli`)
  --calls N      sequential calls timed on each transport (default 1000)
  --clients C    concurrent HTTP clients (default 16)
  --seconds S    how long the concurrent clients run (default 30)";

/// Untimed calls before the timed ones, on each transport.
const WARMUP: usize = 50;

/// The most calls one concurrent client makes, whatever `--seconds` says.
const MAX_CALLS_PER_CLIENT: u64 = 5_000_000;

struct Args {
    db: Option<PathBuf>,
    strata: Option<PathBuf>,
    calls: usize,
    clients: usize,
    seconds: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        db: None,
        strata: None,
        calls: 1000,
        clients: 16,
        seconds: 30,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--db" => a.db = Some(PathBuf::from(value()?)),
            "--strata" => a.strata = Some(PathBuf::from(value()?)),
            "--calls" => a.calls = num(value()?)?.max(1) as usize,
            "--clients" => a.clients = num(value()?)?.max(1) as usize,
            "--seconds" => a.seconds = num(value()?)?,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("mcp-bench: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("mcp-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(a: &Args) -> BenchResult<bool> {
    let strata = strata_binary(a.strata.as_deref())?;
    let tmp = tempfile::tempdir()?;
    let db = match &a.db {
        Some(d) => d.clone(),
        None => {
            let d = tmp.path().join("db");
            build_example(&d)?;
            d
        }
    };
    eprintln!(
        "mcp-bench: {} serving {}, load {}",
        strata.display(),
        db.display(),
        strata_benches::loadavg()
    );
    let mut loads = vec![strata_benches::loadavg()];

    // HTTP: sequential, then concurrent, on one server.
    let port = strata_benches::mcp::free_port()?;
    let mut server = Server::start(
        Command::new(&strata)
            .arg("serve")
            .arg(&db)
            .arg("--http")
            .arg(format!("127.0.0.1:{port}")),
        &tmp.path().join("http.log"),
        false,
    )?;
    server.wait_listening(port)?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut http = HttpSession::open(&url)?;
    for _ in 0..WARMUP {
        check_answer(&http.query()?)?;
    }
    let mut http_lat = Vec::with_capacity(a.calls);
    for _ in 0..a.calls {
        let t = Instant::now();
        let answer = http.query()?;
        http_lat.push(t.elapsed().as_secs_f64() * 1e6);
        check_answer(&answer)?;
    }
    http.close();
    loads.push(strata_benches::loadavg());
    eprintln!(
        "mcp-bench: HTTP sequential done; {} clients for {} s",
        a.clients, a.seconds
    );
    let mut conc = concurrent(&url, a.clients, Duration::from_secs(a.seconds));
    loads.push(strata_benches::loadavg());
    server.stop()?;

    // stdio.
    let mut stdio = StdioSession::start(&strata, &db, &tmp.path().join("stdio.log"))?;
    for _ in 0..WARMUP {
        check_answer(&stdio.query()?)?;
    }
    let mut stdio_lat = Vec::with_capacity(a.calls);
    for _ in 0..a.calls {
        let t = Instant::now();
        let answer = stdio.query()?;
        stdio_lat.push(t.elapsed().as_secs_f64() * 1e6);
        check_answer(&answer)?;
    }
    stdio.stop()?;
    loads.push(strata_benches::loadavg());

    let (hm, hp) = (median(&mut http_lat), percentile(&mut http_lat, 99.0));
    let (sm, sp) = (median(&mut stdio_lat), percentile(&mut stdio_lat, 99.0));
    let (cm, cp) = (median(&mut conc.lat), percentile(&mut conc.lat, 99.0));
    let throughput = conc.ok as f64 / conc.secs;
    println!("## MCP round trip: `query` of `{PROGRAM}`\n");
    println!("| measure | calls | median µs | p99 µs | max µs | errors |");
    println!("|---|---:|---:|---:|---:|---:|");
    println!(
        "| HTTP, one session, keep-alive, sequential | {} | {hm:.0} | {hp:.0} | {:.0} | 0 |",
        a.calls,
        max(&http_lat)
    );
    println!(
        "| stdio, sequential | {} | {sm:.0} | {sp:.0} | {:.0} | 0 |",
        a.calls,
        max(&stdio_lat)
    );
    println!(
        "| HTTP, {} concurrent clients, {:.1} s | {} | {cm:.0} | {cp:.0} | {:.0} | {} |",
        a.clients,
        conc.secs,
        conc.ok + conc.errors,
        max(&conc.lat),
        conc.errors
    );
    println!(
        "\nConcurrent throughput: {throughput:.0} calls/s ({} ok, {} errors{}). \
         {WARMUP} untimed warm-up calls before each sequential run.",
        conc.ok,
        conc.errors,
        conc.first_error
            .as_deref()
            .map(|e| format!("; first: {e}"))
            .unwrap_or_default()
    );
    println!(
        "\n| target | measured | holds |\n|---|---|---|\n\
         | HTTP median < 1 ms on loopback | {:.3} ms | {} |\n\
         | 16 concurrent clients, no errors | {} errors | {} |",
        hm / 1e3,
        if hm < 1000.0 { "yes" } else { "**NO**" },
        conc.errors,
        if conc.errors == 0 { "yes" } else { "**NO**" },
    );
    println!(
        "\nLoad average (1/5/15 min) before, after HTTP sequential, after concurrent, \
         after stdio: {}",
        loads.join(" | ")
    );
    Ok(conc.errors == 0)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}

/// What the concurrent clients did together.
struct Concurrent {
    ok: u64,
    errors: u64,
    secs: f64,
    lat: Vec<f64>,
    first_error: Option<String>,
}

/// `clients` threads, each its own session and connection, calling the query until
/// `duration` has passed (or [`MAX_CALLS_PER_CLIENT`] calls).
fn concurrent(url: &str, clients: usize, duration: Duration) -> Concurrent {
    let start = Instant::now();
    let deadline = start + duration;
    let mut handles = Vec::with_capacity(clients);
    for _ in 0..clients {
        let url = url.to_owned();
        handles.push(std::thread::spawn(move || {
            let mut ok = 0u64;
            let mut errors = 0u64;
            let mut first_error = None;
            let mut lat = Vec::new();
            let mut session = match HttpSession::open(&url) {
                Ok(s) => s,
                Err(e) => return (0, 1, vec![], Some(format!("open: {e}"))),
            };
            let mut calls = 0;
            while Instant::now() < deadline && calls < MAX_CALLS_PER_CLIENT {
                calls += 1;
                let t = Instant::now();
                let r = session.query();
                let us = t.elapsed().as_secs_f64() * 1e6;
                match r.and_then(|v| check_answer(&v)) {
                    Ok(()) => {
                        ok += 1;
                        lat.push(us);
                    }
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert_with(|| e.to_string());
                    }
                }
            }
            session.close();
            (ok, errors, lat, first_error)
        }));
    }
    let mut c = Concurrent {
        ok: 0,
        errors: 0,
        secs: 0.0,
        lat: Vec::new(),
        first_error: None,
    };
    for h in handles {
        match h.join() {
            Ok((ok, errors, lat, first)) => {
                c.ok += ok;
                c.errors += errors;
                c.lat.extend(lat);
                if c.first_error.is_none() {
                    c.first_error = first;
                }
            }
            Err(_) => {
                c.errors += 1;
                c.first_error
                    .get_or_insert_with(|| "a client panicked".to_owned());
            }
        }
    }
    c.secs = start.elapsed().as_secs_f64();
    c
}

//! An MCP `query` round trip: `strata serve DB --stdio` on the bundled example database,
//! one session, each iteration one `tools/call` of `imports("api", ?d) => ?d` written as a
//! JSON-RPC line and its answer read back (and checked).
//!
//! Needs the `strata` binary: `cargo build --release -p strata-cli` first (it is looked for
//! in `target/release/`, or at `$STRATA_BIN`); without it the bench says so and measures
//! nothing. `mcp-bench` measures the HTTP transport and concurrent clients too.

use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use strata_benches::mcp::{StdioSession, build_example, check_answer, strata_binary};

fn mcp(c: &mut Criterion) {
    let explicit = std::env::var_os("STRATA_BIN").map(PathBuf::from);
    let strata = match strata_binary(explicit.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mcp bench skipped: {e}");
            return;
        }
    };
    let tmp = tempfile::tempdir().expect("temp dir");
    let db = tmp.path().join("db");
    build_example(&db).expect("build the example database");
    let mut session =
        StdioSession::start(&strata, &db, &tmp.path().join("stdio.log")).expect("start");
    for _ in 0..50 {
        check_answer(&session.query().expect("query")).expect("answer");
    }
    let mut g = c.benchmark_group("mcp");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    g.bench_function("stdio_query_round_trip", |b| {
        b.iter(|| check_answer(&session.query().expect("query")).expect("answer"));
    });
    g.finish();
    session.stop().expect("stop the server");
}

criterion_group!(benches, mcp);
criterion_main!(benches);

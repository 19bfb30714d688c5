//! The MCP server driven by real clients: the Python `mcp` SDK (installed by the script
//! into a virtualenv under target/ the first time) runs `mcp/tests/e2e.py` against this
//! build's `strata serve`, over stdio and over streamable HTTP; and clients from npm
//! (`mcp/tests/run-clients.sh`): the conformance suite, the MCP Inspector and Claude Code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn the_python_sdk_drives_the_server_over_stdio_and_http() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("bash")
        .arg(root.join("mcp/tests/run-e2e.sh"))
        .env("STRATA_BIN", env!("CARGO_BIN_EXE_strata"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stdout.lines().last().unwrap_or("");
    eprintln!("{last}");
    assert!(
        out.status.success() && last.ends_with(" 0 failed"),
        "the MCP end-to-end test failed:\n{stdout}\n{stderr}"
    );
}

/// Real clients from npm (mcp/tests/run-clients.sh, installed under target/npm-clients the
/// first time): the latest MCP conformance suite's server scenarios over HTTP, the MCP
/// Inspector CLI calling every tool, and `claude mcp list` reporting the server connected
/// while another process holds the database. Fails when npm cannot be reached and nothing
/// is installed.
#[test]
fn issue28_real_clients_from_npm_drive_the_server() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("bash")
        .arg(root.join("mcp/tests/run-clients.sh"))
        .env("STRATA_BIN", env!("CARGO_BIN_EXE_strata"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stdout.lines().last().unwrap_or("");
    eprintln!("{stdout}");
    assert!(
        out.status.success() && last.ends_with(" 0 failed"),
        "the real clients' test failed:\n{stdout}\n{stderr}"
    );
}

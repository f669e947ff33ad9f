"""A server that speaks ONLY 2026-07-28 (`modern` in tests/peers/py_servers.py: the SDK's MCPServer
refusing the `initialize` handshake with -32022), over stdio and streamable HTTP. The client kit and
`mcp-elicit call` with the default `--protocol auto` try the 2025-11-25 handshake, are refused, and
connect again in 2026-07-28, saying why; a form question and a URL hand-off complete, and the tool
runs once (the refused handshake never reached a tool)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result

from mcp_elicit.cli import main
from mcp_elicit.client import ElicitClient
from mcp_elicit.client.connection import AUTO_MODERN_REASON
from mcp_elicit.client.opener import BROWSER_ENV
from mcp_elicit.ui.scripted import ScriptedUI
from tests.e2e.servers import serving_http
from tests.peers.py_servers import Http, OnlyModern
from tests.support import text_of

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SPEC = f"{sys.executable} tests/peers/py_servers.py modern"
FAKE_BROWSER = ROOT / "tests" / "client" / "fake_browser.py"
MODERN = "2026-07-28"
BOUND_SECONDS = 60.0
TRANSPORTS = ["stdio", "http"]


@asynccontextmanager
async def modern_server(transport: str) -> AsyncIterator[tuple[str, OnlyModern | None]]:
    """The target to give a client, and (over HTTP, where it runs in this process) its counters."""
    if transport == "stdio":
        yield SPEC, None
        return
    http = Http("modern")
    [only] = [m for m in http.server._lowlevel_server.middleware if isinstance(m, OnlyModern)]
    async with serving_http(http) as url:
        yield url, only


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_default_client_falls_back_to_2026_and_answers_the_form_once(transport: str) -> None:
    ui = ScriptedUI([{"content": {"guests": 3}}])
    with anyio.fail_after(BOUND_SECONDS):
        async with modern_server(transport) as (target, _), ElicitClient(target, ui=ui) as client:
            result = await client.call_tool("book")
            runs = json.loads(text_of(await client.call_tool("tool_runs")))
            assert (client.era_reason, client.protocol_version) == (AUTO_MODERN_REASON, MODERN)
    assert text_of(result) == "Booked for 3."
    assert [(o.action, o.delivery) for o in client.outcomes] == [("accept", "embedded")]
    # One question round, then the answer: two requests, and the tool's body ran once.
    assert runs == {"tools/call": {"book": 2, "tool_runs": 1}, "book_runs": 1}


async def call(args: list[str], env: dict[str, str | None] | None = None) -> Result:
    """`mcp-elicit call ARGS` in-process, in a worker thread (it runs its own event loop)."""
    with anyio.fail_after(BOUND_SECONDS):
        return await anyio.to_thread.run_sync(
            lambda: CliRunner().invoke(main, ["call", *args], env=env, catch_exceptions=False)
        )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_call_json_reports_the_2026_era_and_why_after_a_form(transport: str, tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([{"content": {"guests": 4}}]))
    async with modern_server(transport) as (target, only):
        done = await call(
            ["--server", target, "--tool", "book", "--answers", str(answers), "--json", "--no-audit"]
        )
    assert done.exit_code == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert (report["completed"], report["protocol"], report["era"]) == (True, MODERN, AUTO_MODERN_REASON)
    assert report["result"]["content"][0]["text"] == "Booked for 4."
    assert [(e["action"], e["delivery"]) for e in report["elicitations"]] == [("accept", "embedded")]
    if only is not None:
        assert (only.tool_calls["book"], only.book_runs) == (2, 1)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_call_completes_a_url_handoff_with_a_2026_only_server(transport: str, tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"steps": [{"url": "open", "match": {"tool": "connect_service"}}]}))
    log = tmp_path / "browser.log"
    env: dict[str, str | None] = {
        BROWSER_ENV: f"{sys.executable} {FAKE_BROWSER}",
        "FAKE_BROWSER_LOG": str(log),
    }
    args = ["--tool", "connect_service", "--answers", str(answers), "--json", "--no-audit"]
    async with modern_server(transport) as (target, only):
        done = await call(["--server", target, *args], env)
    assert done.exit_code == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert (report["completed"], report["protocol"], report["era"]) == (True, MODERN, AUTO_MODERN_REASON)
    assert report["result"]["content"][0]["text"] == "Connected to Example API."
    first, *checks = report["elicitations"]
    assert (first["mode"], first["action"], first["decided_by"]) == ("url", "accept", "script")
    assert {e["reason"] for e in checks} <= {"url_check"}  # re-asks while the page was open
    if only is not None:  # every request was a round of this one call, on the 2026-07-28 connection
        assert only.tool_calls["connect_service"] == len(report["elicitations"]) + 1
    [line] = log.read_text().splitlines()
    assert line.startswith("200 ")

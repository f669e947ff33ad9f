"""Stopping the commands that serve HTTP (`gateway --listen`, `serve-reference --transport http`,
`audit serve`) as real processes, and a Ctrl-C before any command watches for signals: the same
statuses as the stdio servers (130 after Ctrl-C, 143 after SIGTERM), one line, no traceback."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pexpect
import pytest

from mcp_elicit.config import AuditConfig, open_audit_sink
from tests.gateway.support import http_client, write_config
from tests.test_cli_stop import BOUND, ROOT, Piped, ctrl_c_stops, gone

MCP_ELICIT = [sys.executable, "-m", "mcp_elicit"]
STOPPED_WITHIN = 10.0  # seconds a stop may take with a client connected (it takes about one)


def children(pid: int) -> set[int]:
    """The child processes of `pid` (a gateway's upstreams)."""
    return {int(c) for p in Path(f"/proc/{pid}/task").glob("*/children") for c in p.read_text().split()}


@pytest.mark.anyio
async def test_sigterm_stops_the_http_gateway_with_143_once_an_open_call_ends_and_its_upstreams_are_reaped(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path / "servers.json", reference=False)  # two stdio upstreams
    gateway = Piped([*MCP_ELICIT, "gateway", "--config", str(config), "--listen", "127.0.0.1:0"])
    try:
        gateway.wait_for_stderr("mcp-elicit gateway: http://")
        [url] = [line.split()[-1] for line in gateway.stderr if "mcp-elicit gateway: http://" in line]
        asked = anyio.Event()

        async def never_answer(ctx: Any, params: Any) -> Any:
            asked.set()
            await anyio.sleep_forever()

        async def greet() -> None:
            with contextlib.suppress(Exception):  # the gateway ends the open call's stream
                await client.call_tool("greet", {})

        async with http_client(url, None, "legacy", never_answer) as client:
            await client.call_tool("process_id", {})  # the upstreams run
            upstreams = children(gateway.proc.pid)
            assert len(upstreams) == 2
            with anyio.fail_after(BOUND):  # the open call too ends
                async with anyio.create_task_group() as tg:
                    tg.start_soon(greet)
                    await asked.wait()  # the call is open, its question unanswered
                    gateway.proc.send_signal(signal.SIGTERM)
                    status = await anyio.to_thread.run_sync(gateway.exit_code)
        gateway.drain()
        assert status == 143
        assert all(gone(pid) for pid in upstreams)  # reaped by the gateway: none running, no zombie
        assert not any("Traceback" in line for line in gateway.stderr)
        assert sum("stopping on SIGTERM" in line for line in gateway.stderr) == 1
    finally:
        gateway.close()


def quiet_stdout(argv: list[str]) -> subprocess.Popen[str]:
    """`argv` with stderr piped (what the server says, its log lines) and stdout dropped."""
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)


def said_url(server: subprocess.Popen[str], name: str) -> str:
    """The URL `server` says it listens at (`mcp-elicit <name>: http://...`), "" if it ended first."""
    assert server.stderr is not None
    for line in server.stderr:  # ends when the process does: never waits past it
        if line.startswith(f"mcp-elicit {name}: http://"):
            return line.split()[-1]
    return ""


@pytest.mark.anyio
@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")
async def test_the_http_gateway_on_ipv6_loopback_says_a_url_a_client_reaches_it_at(tmp_path: Path) -> None:
    """Found by a new user: `--listen [::1]:PORT` listened there but said http://127.0.0.1:PORT/mcp."""
    config = write_config(tmp_path / "servers.json", reference=False)
    gateway = quiet_stdout([*MCP_ELICIT, "gateway", "--config", str(config), "--listen", "[::1]:0"])
    try:
        with anyio.fail_after(BOUND):
            url = await anyio.to_thread.run_sync(said_url, gateway, "gateway", abandon_on_cancel=True)
            assert url.startswith("http://[::1]:")
            async with http_client(url, None, "legacy", None) as client:
                tools = await client.list_tools()
        assert "greet" in [tool.name for tool in tools.tools]
    finally:
        gateway.kill()
        gateway.wait(timeout=BOUND)


@pytest.mark.anyio
async def test_serve_data_over_http_says_where_it_listens_and_answers_there() -> None:
    server = quiet_stdout([*MCP_ELICIT, "serve-data", "--transport", "http", "--port", "0", "--no-audit"])
    try:
        with anyio.fail_after(BOUND):
            url = await anyio.to_thread.run_sync(said_url, server, "data server", abandon_on_cancel=True)
            assert url.endswith("/mcp")
            async with http_client(url, None, "legacy", None) as client:
                tools = await client.list_tools()
        assert "query" in [tool.name for tool in tools.tools]
    finally:
        server.kill()
        server.wait(timeout=BOUND)


@pytest.mark.anyio
async def test_sigterm_stops_an_http_server_at_once_with_a_2026_client_listening() -> None:
    # A 2026-07-28 client's subscriptions/listen stream (the Inspector's mcpdo opens one) is the
    # SDK's own ASGI loop, which uvicorn's graceful shutdown waited on until the client hung up.
    server = quiet_stdout([*MCP_ELICIT, "serve-reference", "--transport", "http", "--port", "0"])
    try:
        with anyio.fail_after(BOUND):
            url = await anyio.to_thread.run_sync(said_url, server, "reference server", abandon_on_cancel=True)
            async with http_client(url, None, "2026-07-28") as client, client.listen(tools_list_changed=True):
                server.send_signal(signal.SIGTERM)
                # well within a client's patience (the stop takes about a second), not BOUND
                status = await anyio.to_thread.run_sync(partial(server.wait, timeout=STOPPED_WITHIN))
        assert status == 143
        assert server.stderr is not None
        said = server.stderr.read()
        assert "ERROR" not in said  # the ended stream is completed, not reported as a broken response
        assert "Traceback" not in said
    finally:
        server.kill()
        server.wait(timeout=BOUND)


@pytest.mark.parametrize(
    ("args", "ready"),
    [
        (["serve-reference", "--transport", "http", "--port", "0"], "Application startup complete"),
        (["audit", "serve", "--db", "{trail}"], "the audit trail is at"),
    ],
)
def test_ctrl_c_in_a_terminal_stops_an_http_server_with_130_and_one_line(
    tmp_path: Path, args: list[str], ready: str
) -> None:
    trail = tmp_path / "trail.sqlite3"
    open_audit_sink(AuditConfig(path=trail)).close()
    filled = [a.format(trail=trail) for a in args]
    term = pexpect.spawn(
        sys.executable, ["-m", "mcp_elicit", *filled], cwd=str(ROOT), timeout=BOUND, encoding="utf-8"
    )
    try:
        term.expect(ready)  # serving, its signals watched
        said = ctrl_c_stops(term)
    finally:
        term.close(force=True)
    # the stop's line as every server command writes its log records: `LEVEL logger: message`
    stop_line = r"(?:^|\^C)INFO mcp_elicit\.\w+: stopping on SIGINT \(again: at once\)\r?$"  # ^C: the echo
    assert re.search(stop_line, said, re.M)


@pytest.mark.parametrize(
    "module",
    [
        "click",  # the command line is loading (mcp_elicit.cli imports click first)
        "mcp_elicit.cli",  # loaded: the command is starting (the server's imports follow)
    ],
)
def test_ctrl_c_before_a_server_watches_for_signals_exits_130_without_a_traceback(module: str) -> None:
    # -X importtime says on stderr as each module is loaded: the Ctrl-C comes just after `module`,
    # while the command line or the command is still starting (not while Python itself does).
    # The `mcp-elicit` script, not `python -m`: under -m, CPython itself turns an exit into a
    # death by SIGINT when the KeyboardInterrupt had ended a string exec() (a dataclass being
    # made), even one caught later; a shell reports 130 for both.
    script = str(Path(sys.executable).with_name("mcp-elicit"))
    args = [sys.executable, "-X", "importtime", script, "serve-reference", "--transport", "http"]
    server = Piped([*args, "--port", "0"])
    try:
        while server.errors.get(timeout=BOUND).split("|")[-1].strip() != module:
            pass
        server.proc.send_signal(signal.SIGINT)
        status = server.exit_code()
        server.drain()
        said = [line for line in server.stderr if not line.startswith("import time:")]
        assert status == 130, said
        assert not any("reference server: http://" in line for line in said)  # before it served
        assert not any("Traceback" in line or "Aborted!" in line for line in said), said
        assert len(said) <= 1
    finally:
        server.close()

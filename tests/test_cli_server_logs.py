"""The server commands write every log record, ours, the SDK's and uvicorn's, as one plain line
`LEVEL logger: message` on stderr, however narrow the terminal (the SDK's rich handler wrapped one
record over many lines, beside uvicorn's `INFO:` lines). Real processes over real HTTP."""

from __future__ import annotations

import json
import logging
import re
import signal
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.cli.serving import PlainLines
from tests.gateway.support import PEERS, http_client
from tests.test_cli_stop import BOUND, Piped

MCP_ELICIT = [sys.executable, "-m", "mcp_elicit"]
LOG_LINE = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: \S")
SESSION_LINE = re.compile(
    r"INFO mcp\.server\.streamable_http_manager: Created new transport with session ID: [0-9a-f]{32}$"
)


def commands(tmp_path: Path) -> dict[str, list[str]]:
    servers = tmp_path / "servers.json"
    servers.write_text(
        json.dumps({"mcpServers": {"sdk": {"command": sys.executable, "args": [PEERS, "sdk"]}}})
    )
    return {
        "reference server": ["serve-reference", "--transport", "http", "--port", "0"],
        "data server": ["serve-data", "--transport", "http", "--port", "0", "--no-audit"],
        "gateway": ["gateway", "--config", str(servers), "--listen", "127.0.0.1:0"],
    }


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["reference server", "data server", "gateway"])
async def test_a_server_over_http_logs_one_plain_line_per_record_on_a_narrow_terminal(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "30")  # what a narrow terminal says; stderr is a pipe here
    server = Piped([*MCP_ELICIT, *commands(tmp_path)[name]])
    try:
        banner = f"mcp-elicit {name}: http://"
        await anyio.to_thread.run_sync(server.wait_for_stderr, banner)
        [url] = [line.split()[-1] for line in server.stderr if line.startswith(banner)]
        with anyio.fail_after(BOUND):
            async with http_client(url, None, "legacy") as client:
                assert (await client.list_tools()).tools
        server.proc.send_signal(signal.SIGTERM)
        assert await anyio.to_thread.run_sync(server.exit_code) == 143
        server.drain()
    finally:
        server.close()
    lines = [line.rstrip("\n") for line in server.stderr]
    logged = [line for line in lines if not line.startswith("mcp-elicit ")]
    assert logged
    assert [line for line in logged if not LOG_LINE.match(line)] == []
    stopping = [line for line in logged if line.endswith(": stopping on SIGTERM (again: at once)")]
    assert [line.split(":")[0] for line in stopping] in (
        ["INFO mcp_elicit.server"],
        ["INFO mcp_elicit.gateway"],
    )
    if name == "gateway":  # uvicorn from WARNING up only
        assert any(line.startswith("INFO mcp_elicit.gateway: audit trail: ") for line in logged)
    else:
        assert any(re.fullmatch(r"INFO uvicorn: Started server process \[\d+\]", line) for line in logged)
        assert any(SESSION_LINE.match(line) for line in logged)  # the whole record on its line
        assert any(line.startswith("INFO uvicorn.access: 127.0.0.1:") for line in logged)


@given(st.text())
def test_a_message_stays_on_its_line_whatever_it_holds(text: str) -> None:
    record = logging.LogRecord("mcp_elicit.gateway", logging.WARNING, __file__, 1, "said: %s", (text,), None)
    line = PlainLines().format(record)
    assert line.startswith("WARNING mcp_elicit.gateway: said: ")
    assert not any((ord(c) < 0x20 and c != "\t") or 0x7F <= ord(c) < 0xA0 for c in line)


def formatted(exc: BaseException) -> str:
    """What the server commands write for a record logged with `exc`, as the SDK's client does."""
    try:
        raise exc
    except BaseException:
        record = logging.LogRecord(
            "mcp.client.streamable_http",
            logging.ERROR,
            __file__,
            1,
            "Error in post_writer",
            None,
            sys.exc_info(),
        )
    return PlainLines().format(record)


def test_an_upstream_that_cannot_be_reached_is_one_line_not_a_traceback() -> None:
    """Found by a new user: a gateway's HTTP upstream that stopped wrote 100 lines of the SDK's
    traceback ("Error in post_writer") to the gateway's stderr."""
    lost = ExceptionGroup(
        "unhandled errors in a TaskGroup", [httpx2.ConnectError("All connection attempts failed")]
    )
    line = formatted(lost)
    assert "\n" not in line
    said = "Error in post_writer (ConnectError: All connection attempts failed)"
    assert line == f"ERROR mcp.client.streamable_http: {said}"


def test_a_record_with_any_other_error_keeps_its_traceback() -> None:
    mixed = ExceptionGroup("two", [httpx2.ConnectError("gone"), ValueError("a bug")])
    for exc in (ValueError("a bug"), mixed):
        assert "Traceback (most recent call last)" in formatted(exc)

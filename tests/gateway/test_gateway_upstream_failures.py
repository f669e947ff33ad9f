"""An upstream that cannot serve is logged in one line saying what failed and why, the same reason
reaches a call that needed it, and a bare tool name that several servers offer is answered with
their prefixed names. Real parts: stdio upstreams as subprocesses (a command that does not exist,
one that exits at once after writing to stderr, one that never answers the handshake, one that
writes an endless line, the FastMCP peer), an HTTP upstream address nothing listens on, the
gateway in-process over streamable HTTP, the SDK's `Client` downstream."""

from __future__ import annotations

import json
import logging
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mcp_elicit.client import stdio_guard
from mcp_elicit.gateway import pool as pool_module
from mcp_elicit.gateway.failures import UPSTREAM_STDERR_LINE_CHARS, UPSTREAM_STDERR_LINES
from tests.gateway.matrix import listening
from tests.gateway.support import PEERS, http_client, http_gateway

pytestmark = pytest.mark.anyio

CALL_BOUND_SECONDS = 60.0
MISSING = "no-such-mcp-server-3f9c"
FASTMCP = {"command": sys.executable, "args": [PEERS, "fastmcp"]}
# Exits at once with status 3 after five lines on stderr (more than the tail keeps).
EXITING = {
    "command": sys.executable,
    "args": ["-c", "import sys\nfor i in range(5): print(f'stderr line {i}', file=sys.stderr)\nsys.exit(3)"],
}
ENDLESS_LINE = str(Path(__file__).parents[1] / "client" / "endless_line_server.py")


def config(servers: dict[str, Any]) -> str:
    return json.dumps({"mcpServers": servers})


async def call(servers: dict[str, Any], tool: str) -> tuple[list[str], Any]:
    """The gateway's offered tool names and the result of calling `tool` through it."""
    async with http_gateway(config(servers)) as (_, url), http_client(url, None, "legacy") as client:
        with anyio.fail_after(CALL_BOUND_SECONDS):
            names = [t.name for t in (await client.list_tools()).tools]
            return names, await client.call_tool(tool, {})


def unavailable_records(caplog: pytest.LogCaptureFixture) -> dict[str, logging.LogRecord]:
    """The gateway's "upstream X is unavailable" records, by server key."""
    found = {}
    for record in caplog.records:
        if record.name == "mcp_elicit.gateway" and record.msg.startswith("upstream %s is unavailable"):
            assert isinstance(record.args, tuple)
            found[str(record.args[0])] = record
    return found


def reason_of(record: logging.LogRecord) -> str:
    assert isinstance(record.args, tuple)
    reason = str(record.args[1])
    message = record.getMessage()
    assert "\n" not in message  # one line
    assert record.exc_info is None  # no traceback
    assert record.levelno == logging.WARNING
    return reason


async def test_a_command_that_does_not_exist_is_logged_naming_the_command_and_said_in_the_result(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_elicit.gateway")
    names, result = await call({"ghost": {"command": MISSING}, "fm": FASTMCP}, "no_such_tool")
    reason = reason_of(unavailable_records(caplog)["ghost"])
    assert MISSING in reason
    assert "not found" in reason
    assert "hello" in names  # the others serve
    assert result.is_error is True
    text = result.content[0].text
    assert "'ghost'" in text
    assert reason in text  # the same short reason as the log line


async def test_a_command_that_exits_at_once_is_reported_with_its_exit_status_and_last_stderr_lines(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_elicit.gateway")
    _, result = await call({"bad": EXITING, "fm": FASTMCP}, "no_such_tool")
    reason = reason_of(unavailable_records(caplog)["bad"])
    assert "3" in reason.replace("stderr line 3", "")  # the exit status, not only the quoted line
    kept = [f"stderr line {i}" for i in range(5)][-UPSTREAM_STDERR_LINES:]
    dropped = [f"stderr line {i}" for i in range(5)][:-UPSTREAM_STDERR_LINES]
    assert all(line in reason for line in kept)
    assert not any(line in reason for line in dropped)
    assert reason in result.content[0].text
    # its whole stderr still reaches the gateway's own stderr
    err = capsys.readouterr().err
    assert all(f"stderr line {i}" in err for i in range(5))


async def test_a_quoted_stderr_line_is_cut_to_its_bound_and_kept_on_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_elicit.gateway")
    long_line = "x" * (UPSTREAM_STDERR_LINE_CHARS * 3)
    script = f"import sys; sys.stderr.write('a\\x1b[31mb\\r{long_line}'); sys.exit(1)"
    await call({"loud": {"command": sys.executable, "args": ["-c", script]}}, "no_such_tool")
    reason = reason_of(unavailable_records(caplog)["loud"])
    assert "x" * UPSTREAM_STDERR_LINE_CHARS not in reason
    assert "x" * (UPSTREAM_STDERR_LINE_CHARS // 2) in reason
    assert "\x1b" not in reason
    assert "\r" not in reason


async def test_an_upstream_that_never_answers_the_handshake_is_named_once_the_first_listing_goes_on(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "UPSTREAM_START_TIMEOUT_SECONDS", 0.5)
    caplog.set_level(logging.INFO, logger="mcp_elicit.gateway")
    silent = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}
    names, result = await call({"silent": silent}, "no_such_tool")
    records = [r for r in caplog.records if r.msg.startswith("upstream %s is unavailable for now")]
    assert [r.args[0] for r in records] == ["silent"]  # type: ignore[index]  (once, however many ask)
    reason = reason_of(records[0])
    assert "handshake" in reason
    assert names == []
    assert "'silent'" in result.content[0].text
    assert reason in result.content[0].text


async def test_an_upstream_that_never_answers_the_handshake_delays_the_first_request_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by a new user: every request waited the whole start wait while one upstream hung."""
    monkeypatch.setattr(pool_module, "UPSTREAM_START_TIMEOUT_SECONDS", 0.5)
    silent = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}
    async with (
        http_gateway(config({"silent": silent})) as (_, url),
        http_client(url, None, "legacy") as client,
    ):
        with anyio.fail_after(CALL_BOUND_SECONDS):
            await client.list_tools()  # the first request waits for the upstreams, a bounded while
        monkeypatch.setattr(pool_module, "UPSTREAM_START_TIMEOUT_SECONDS", 3600.0)
        with anyio.fail_after(CALL_BOUND_SECONDS):  # later ones never wait for it again
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("greet", {})
    assert names == []
    assert "'silent'" in result.content[0].text  # type: ignore[union-attr]  (the reason, at once)


async def test_an_http_upstream_nothing_listens_on_is_reported_with_its_address_and_the_connection_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_elicit.gateway")
    with socket.socket() as probe:  # a port that was free a moment ago, now closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    _, result = await call({"down": {"url": url}, "fm": FASTMCP}, "no_such_tool")
    reason = reason_of(unavailable_records(caplog)["down"])
    assert url in reason
    assert "refused" in reason.lower()
    assert reason in result.content[0].text


async def test_a_bare_name_several_servers_offer_is_answered_with_the_prefixed_names() -> None:
    servers = {"ghost": {"command": MISSING}, "fm": FASTMCP, "fm2": FASTMCP}
    names, result = await call(servers, "hello")
    assert {"fm__hello", "fm2__hello"} <= set(names)
    assert "hello" not in names
    assert result.is_error is True
    text = result.content[0].text
    assert "'hello'" in text
    assert text.index("fm__hello") < text.index("fm2__hello")  # the servers in the file's order
    assert "ghost" not in text  # not blamed on an unavailable server


async def test_an_unknown_name_still_lists_the_unavailable_servers() -> None:
    _, result = await call({"ghost": {"command": MISSING}, "fm": FASTMCP, "fm2": FASTMCP}, "hel")
    text = result.content[0].text
    assert "'ghost'" in text
    assert "fm__hello" not in text


async def test_a_banner_an_upstream_prints_on_stdout_is_one_warning_naming_that_upstream(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    banner = {"command": sys.executable, "args": ["-c", "print('Cool Server v1 starting', flush=True)"]}
    await call({"chatty": banner, "fm": FASTMCP}, "hello")
    [record] = [r for r in caplog.records if r.name == "mcp.client.stdio"]
    assert (record.levelno, record.exc_info) == (logging.WARNING, None)
    assert "'chatty'" in record.getMessage()
    assert record.args == ("Cool Server v1 starting",)


async def test_an_upstream_writing_a_line_over_the_bound_is_left_out_with_a_one_line_reason(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    bound = 1_048_576
    monkeypatch.setattr(stdio_guard, "MAX_STDOUT_LINE_BYTES", bound)
    caplog.set_level(logging.INFO)
    endless = {"command": sys.executable, "args": [ENDLESS_LINE, "initialize", str(32 * bound)]}
    names, result = await call({"huge": endless, "fm": FASTMCP}, "no_such_tool")
    reason = reason_of(unavailable_records(caplog)["huge"])
    assert str(bound) in reason
    assert "hello" in names  # the others serve
    assert "'huge'" in result.content[0].text
    assert reason in result.content[0].text
    assert all(r.exc_info is None for r in caplog.records)


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])  # 2026-07-28: the call is held across rounds
async def test_a_call_whose_upstream_writes_a_line_over_the_bound_gets_the_reason_and_the_others_serve_on(
    era: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    bound = 1_048_576
    monkeypatch.setattr(stdio_guard, "MAX_STDOUT_LINE_BYTES", bound)
    caplog.set_level(logging.INFO)
    endless = {"command": sys.executable, "args": [ENDLESS_LINE, "call", str(32 * bound)]}
    servers = config({"huge": endless, "fm": FASTMCP})
    async with http_gateway(servers) as (_, url), http_client(url, None, era) as client:
        with anyio.fail_after(CALL_BOUND_SECONDS):
            broken = await client.call_tool("anything", {})
            again = await client.call_tool("anything", {})  # its connection is gone: the same reason
            other = await client.call_tool("hello", {})
            with pytest.raises(MCPError) as prompt:  # a prompt has no error result: a JSON-RPC error
                await client.get_prompt("anything")
    for result in (broken, again):
        assert result.is_error is True
        assert "'huge'" in result.content[0].text
        assert str(bound) in result.content[0].text
    assert "'huge'" in prompt.value.error.message
    assert other.is_error is False
    assert "huge" not in str(other)
    assert all(r.exc_info is None for r in caplog.records)  # no traceback: not the SDK's, not ours
    [warning] = [r for r in caplog.records if r.name == stdio_guard.__name__]
    assert "'huge'" in warning.getMessage()


async def test_an_upstream_writing_invalid_utf8_in_the_handshake_is_left_out_naming_the_byte(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_elicit.gateway")
    bad = {
        "command": sys.executable,
        "args": [str(Path(ENDLESS_LINE).with_name("misbehaving_server.py")), "initialize"],
    }
    _, result = await call({"bad": bad, "fm": FASTMCP}, "no_such_tool")
    reason = reason_of(unavailable_records(caplog)["bad"])
    assert "\\xc3" in reason  # the byte, not "exited before the handshake"
    assert reason in result.content[0].text


async def test_an_sse_only_upstream_the_file_marks_type_sse_is_said_to_need_streamable_http(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Found by a new user: a server kept as `"type": "sse"` (FastMCP serving the older HTTP+SSE
    transport) was left out as "it answered the handshake with error -32603: Server returned an
    error response", which does not say that the gateway speaks streamable HTTP only."""
    caplog.set_level(logging.INFO, logger="mcp_elicit.gateway")
    with listening([sys.executable, PEERS, "fastmcp", "sse"]) as sse:
        _, result = await call({"old": {"type": "sse", "url": sse.url}, "fm": FASTMCP}, "hello")
    reason = reason_of(unavailable_records(caplog)["old"])
    assert '"type": "sse"' in reason
    assert "streamable HTTP" in reason
    assert result.is_error is False  # the other upstream serves

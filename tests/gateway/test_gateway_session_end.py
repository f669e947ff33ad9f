"""A gateway stopping does not wait on an HTTP upstream that never answers the request ending its
session (the SDK's DELETE): after `SESSION_END_TIMEOUT_SECONDS` it goes on, in one log line, and
exits (found by a new user: the stop waited for the HTTP read timeout, 300 s, per such upstream).

Real parts: the raw-SDK peer over streamable HTTP in a subprocess whose DELETE never answers; the
gateway as a subprocess over stdio (`mcp-elicit gateway --config`), its stdin closed as a desktop
client quitting does."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from mcp_elicit.client.http_watch import SESSION_END_TIMEOUT_SECONDS
from tests.gateway.test_gateway_lost_http_upstream import http_upstream
from tests.gateway.test_gateway_lost_upstream import BOUND_SECONDS

pytestmark = pytest.mark.anyio

# What the gateway's own stop may take beyond the bound on a loaded machine (it takes about a second).
STOP_SECONDS = 20.0


def message(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    sent = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(sent).encode() + b"\n"


INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "session-end-test", "version": "1"},
}


async def test_a_gateway_stops_within_the_bound_though_its_http_upstream_never_answers_the_end_of_its_session(
    tmp_path: Path,
) -> None:
    async with http_upstream(env={"PEER_HANG_DELETE": "1"}) as upstream:
        config = tmp_path / "servers.json"
        config.write_text(json.dumps({"mcpServers": {"web": {"url": upstream.url}}}))
        stderr = tmp_path / "stderr"
        command = [sys.executable, "-m", "mcp_elicit", "gateway", "--config", str(config)]
        with stderr.open("wb") as err:
            gateway = await anyio.open_process(command, stderr=err, env=dict(os.environ))
        try:
            assert gateway.stdin is not None
            assert gateway.stdout is not None
            replies = BufferedByteReceiveStream(gateway.stdout)
            with anyio.fail_after(BOUND_SECONDS):
                await gateway.stdin.send(message(1, "initialize", INITIALIZE))
                await replies.receive_until(b"\n", 1 << 20)
                await gateway.stdin.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
                await gateway.stdin.send(message(2, "tools/call", {"name": "process_id", "arguments": {}}))
                result = json.loads(await replies.receive_until(b"\n", 1 << 20))
            assert result["result"]["content"][0]["text"] == str(upstream.process.pid)  # the session is open
            await gateway.stdin.aclose()  # the client quits: the gateway ends the upstream's session
            with anyio.fail_after(SESSION_END_TIMEOUT_SECONDS + STOP_SECONDS):
                status = await gateway.wait()
        finally:
            if gateway.returncode is None:
                gateway.kill()
                await gateway.wait()
            await gateway.aclose()
    assert status == 0
    said = stderr.read_text().splitlines()
    assert "Traceback" not in "\n".join(said)
    [line] = [line for line in said if "end of its session" in line]  # one line
    assert upstream.url in line

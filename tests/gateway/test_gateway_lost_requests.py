"""An upstream lost during a request fails a tool call, a prompt and a resource read alike: one
error of the gateway's own (`UpstreamLost`, worded once in `core.refusals`) naming the server and
saying it is reconnected at the next request, never the SDK's bare "Connection closed" or
"Session not found"; the gateway logs one line and no traceback (tools: test_gateway_lost_upstream.py,
HTTP upstreams: test_gateway_lost_http_upstream.py).

Real parts: a raw-SDK upstream as a stdio subprocess that exits in the middle of a request, the
gateway in-process over streamable HTTP, the SDK's `Client` downstream in either era."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from mcp_elicit.gateway.failures import process_end
from tests.gateway.support import http_client, http_gateway
from tests.gateway.test_gateway_lost_http_upstream import config as http_config
from tests.gateway.test_gateway_lost_http_upstream import http_upstream
from tests.gateway.test_gateway_lost_upstream import BOUND_SECONDS, Changes, kill_upstream
from tests.gateway.test_gateway_lost_upstream import config as wrapped_config

pytestmark = pytest.mark.anyio

# An upstream whose tool, prompt and resource each end its process mid-request (no answer sent).
VANISHING = """
import os
from mcp.server.mcpserver import MCPServer

server = MCPServer("vanishing")

@server.tool()
def vanish() -> str:
    os._exit(3)

@server.prompt()
def vanish_prompt() -> str:
    os._exit(3)

@server.resource("vanish://now")
def vanish_resource() -> str:
    os._exit(3)

server.run("stdio")
"""


def config() -> str:
    return json.dumps({"mcpServers": {"gone": {"command": sys.executable, "args": ["-c", VANISHING]}}})


async def lost_error(client: Any, method: str) -> MCPError:
    """The JSON-RPC error a prompt or a read gets when its upstream vanishes during it."""
    if method == "prompts/get":
        request = client.get_prompt("vanish_prompt", {})
    else:
        request = client.read_resource("vanish://now")
    with pytest.raises(MCPError) as failed:
        await request
    return failed.value


@pytest.mark.parametrize("method", ["prompts/get", "resources/read"])
@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_prompt_or_read_whose_upstream_dies_during_it_fails_as_a_tool_call_does(
    method: str, era: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_elicit.gateway")
    async with http_gateway(config()) as (_, url), http_client(url, None, era) as client:
        with anyio.fail_after(BOUND_SECONDS):
            error = await lost_error(client, method)
            tool = await client.call_tool("vanish", {})  # the upstream started again, lost again
    # its process's exit status, not only "its connection closed" (found by a new user)
    assert error.error.data == {"reason": "upstream_lost", "server": "gone", "exit_status": 3}
    assert tool.is_error is True
    assert tool.content[0].text == error.error.message  # one wording for both
    assert process_end(3) in tool.content[0].text
    gateway = [r for r in caplog.records if r.name == "mcp_elicit.gateway"]
    assert all(r.exc_info is None for r in gateway)  # no traceback
    lost = [r.args[1] for r in gateway if r.levelno == logging.WARNING and isinstance(r.args, tuple)]
    assert lost
    assert set(lost) == {process_end(3)}  # the log says it as the client does


async def test_a_prompt_meeting_a_restarted_http_upstreams_old_session_says_it_was_lost() -> None:
    """Before, the client got the SDK's bare "Session not found" (a tool call said the upstream was
    lost); a prompt right after one reconnects the upstream."""
    async with (
        http_upstream() as first,
        http_gateway(http_config(first.url)) as (_, url),
        http_client(url, None, "legacy") as client,
    ):
        with anyio.fail_after(BOUND_SECONDS):
            assert await client.call_tool("process_id", {})  # the gateway's session is open
            async with http_upstream(first.port):
                await first.kill()
                # at once: on the old session (unless the gateway's stream found it gone first, and
                # this request reconnected it: then the new upstream's own error, it cannot ask)
                first = await prompt_error(client)
                if first.error.data != {"reason": "upstream_lost", "server": "web"}:
                    assert first.error.message.startswith(RENDERING)
                again = await prompt_error(client)  # reconnected
    assert again.error.message.startswith(RENDERING)


RENDERING = "Error rendering prompt strict"  # the upstream's own: this client cannot be asked


async def prompt_error(client: Any) -> MCPError:
    with pytest.raises(MCPError) as failed:
        await client.get_prompt("strict", {})
    return failed.value


async def test_a_prompt_or_read_of_an_upstream_still_down_names_it_and_why_as_a_tool_call_does(
    tmp_path: Path,
) -> None:
    """Before, "prompt 'strict' is not offered (or its server is unavailable)" and nothing more,
    where a tool call of the same server listed the unavailable upstreams and why."""
    changes = Changes()
    async with (
        http_gateway(wrapped_config(tmp_path)) as (_, url),
        http_client(url, None, "legacy", message_handler=changes) as client,
    ):
        with anyio.fail_after(BOUND_SECONDS):
            await kill_upstream(client)
            (tmp_path / "down").write_text("")  # its restarts exit at once
            await changes.wait_for(1)
            tool = await client.call_tool("process_id", {})
            with pytest.raises(MCPError) as prompt:
                await client.get_prompt("strict", {})
            with pytest.raises(MCPError) as read:
                await client.read_resource("sdk://nothing")
    assert tool.is_error is True
    unavailable = tool.content[0].text.partition(". ")[2]
    assert unavailable.startswith("Unavailable upstream servers: 'sdk' (")
    assert prompt.value.error.message.endswith(unavailable)
    assert read.value.error.message.endswith(unavailable)

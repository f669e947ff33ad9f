"""A pushed question (2025-11-25) never pins a tool: it times out, and a disconnect releases it (C3)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer

from mcp_elicit.errors import ClientGone, ElicitationTimeout
from mcp_elicit.server import ElicitSettings, ask, install
from tests.e2e.servers import serving_http
from tests.support import text_of

pytestmark = pytest.mark.anyio

RELEASE_BOUND_SECONDS = 1.0


@dataclasses.dataclass
class Name:
    name: str


def waiting_server(
    outcome: list[BaseException], released: anyio.Event, timeout: float = 30.0
) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("waiting")
    install(server, ElicitSettings(ask_timeout=timeout))

    @server.tool()
    async def wait_for_name(ctx: Context) -> str:
        try:
            await ask(ctx, "Name?", Name)
        except (ElicitationTimeout, ClientGone) as exc:
            outcome.append(exc)
            return type(exc).__name__
        finally:
            released.set()
        return "answered"

    return server


@contextlib.asynccontextmanager
async def connected(server: MCPServer[Any], transport: str, callback: Any) -> AsyncIterator[Client]:
    """A legacy-mode SDK client on `server`, in memory or over streamable HTTP on 127.0.0.1."""
    if transport == "memory":
        async with Client(server, mode="legacy", elicitation_callback=callback) as c:
            yield c
        return
    async with serving_http(server) as url, Client(url, mode="legacy", elicitation_callback=callback) as c:
        yield c


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_a_question_nobody_answers_ends_with_elicitation_timeout_carrying_the_seconds(
    transport: str,
) -> None:
    outcome: list[BaseException] = []
    released = anyio.Event()

    async def never(context: Any, params: Any) -> Any:
        await anyio.sleep_forever()

    async with connected(waiting_server(outcome, released, timeout=0.2), transport, never) as c:
        result = await c.call_tool("wait_for_name", {})
    assert text_of(result) == "ElicitationTimeout"
    assert isinstance(outcome[0], ElicitationTimeout)
    assert outcome[0].seconds == 0.2


async def test_a_client_that_disconnects_mid_question_releases_the_tool_within_a_second() -> None:
    outcome: list[BaseException] = []
    released = anyio.Event()
    asked = anyio.Event()

    async def walk_away(context: Any, params: Any) -> Any:
        asked.set()
        await anyio.sleep_forever()

    async with serving_http(waiting_server(outcome, released)) as url:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                async with Client(url, mode="legacy", elicitation_callback=walk_away) as c:
                    await c.call_tool("wait_for_name", {})

            tg.start_soon(call)
            await asked.wait()
            tg.cancel_scope.cancel()
        with anyio.fail_after(RELEASE_BOUND_SECONDS):
            await released.wait()
    assert isinstance(outcome[0], ClientGone)

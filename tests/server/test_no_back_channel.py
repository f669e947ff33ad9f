"""A 2025-11-25 server on streamable HTTP with JSON responses (no event stream) has no channel to
push a question on: the SDK refuses to send it (`NoBackChannelError`). The kit maps that once, to
CapabilityError(channel=False): the tool can catch it as it catches a client that cannot ask, and
when it does not, the client reads one line saying this connection cannot carry a question (not a
raw -32600), and the server logs one line at WARNING (its own setup is at fault), no traceback.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import fastmcp
import mcp_types as t
import pytest
from mcp.server.mcpserver import Context, MCPServer

from mcp_elicit import ElicitSettings, ask, install
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.errors import CapabilityError
from mcp_elicit.testing import MemoryAuditSink
from tests.e2e.servers import serving_app, serving_http
from tests.server.handoff_support import mcp_client
from tests.support import text_of

pytestmark = pytest.mark.anyio


@dataclass
class Order:
    item: str


async def answer(context: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"item": "tea"})


def build(kind: str, sink: MemoryAuditSink, caught: list[BaseException]) -> Any:
    async def order(ctx: Any) -> str:
        answered = await ask(ctx, "What to order?", Order)
        return answered.action

    async def careful(ctx: Any) -> str:
        try:
            await ask(ctx, "What to order?", Order)
        except CapabilityError as exc:
            caught.append(exc)
            return "fell back"
        return "asked"

    server: Any
    if kind == "fastmcp":
        server = fastmcp.FastMCP("json-fastmcp")
        install(server, ElicitSettings(audit=sink))

        async def order_f(ctx: fastmcp.Context) -> str:
            return await order(ctx)

        async def careful_f(ctx: fastmcp.Context) -> str:
            return await careful(ctx)

        server.tool(order_f, name="order")
        server.tool(careful_f, name="careful")
    else:
        server = MCPServer("json-mcpserver")
        install(server, ElicitSettings(audit=sink))

        async def order_m(ctx: Context) -> str:
            return await order(ctx)

        async def careful_m(ctx: Context) -> str:
            return await careful(ctx)

        server.tool(name="order")(order_m)
        server.tool(name="careful")(careful_m)
    return server


@asynccontextmanager
async def serving_json(kind: str, server: Any) -> AsyncIterator[str]:
    if kind == "fastmcp":
        async with serving_app(server.http_app(path="/mcp", json_response=True)) as origin:
            yield f"{origin}/mcp"
    else:
        async with serving_http(server, json_response=True) as url:
            yield url


async def call(kind: str, url: str, tool: str) -> tuple[bool, str]:
    """(is_error, text) of calling `tool` with a 2025-11-25 client that would answer any question."""
    if kind == "fastmcp":

        async def handler(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
            return {"item": "tea"}

        async with fastmcp.Client(url, mode="legacy", elicitation_handler=handler) as fc:
            got = await fc.call_tool(tool, {}, raise_on_error=False)
            return got.is_error, text_of(got)
    async with mcp_client(url, "legacy", answer) as c:
        result = await c.call_tool(tool, {})
        return bool(result.is_error), text_of(result)


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Any:
    caplog.set_level(logging.DEBUG)
    fast = logging.getLogger("fastmcp")  # FastMCP's own logger does not propagate to the root
    fast.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        fast.removeHandler(caplog.handler)


@pytest.mark.parametrize("kind", ["mcpserver", "fastmcp"])
async def test_a_question_over_json_responses_ends_the_tool_with_one_line_saying_it_cannot_be_carried(
    kind: str, logs: pytest.LogCaptureFixture
) -> None:
    sink = MemoryAuditSink()
    server = build(kind, sink, [])
    async with serving_json(kind, server) as url:
        is_error, text = await call(kind, url, "order")
    assert is_error
    refusal = refusal_of(CapabilityError("form", channel=False), modern=False, method="tools/call")
    assert refusal.reason == "no_back_channel"
    assert text == refusal.text
    assert [r.getMessage() for r in logs.records if r.exc_info] == []  # no traceback anywhere
    ours = ("mcp_elicit", "fastmcp")
    loud = [r for r in logs.records if r.levelno >= logging.INFO and r.name.startswith(ours)]
    # The server's own transport is at fault, not the client: the operator is told, at WARNING.
    assert [(r.name, r.levelno) for r in loud] == [("mcp_elicit.server", logging.WARNING)]
    assert "no_back_channel" in loud[0].getMessage()
    assert sink.records == []  # nothing was asked, so there is no consent to record


@pytest.mark.parametrize("kind", ["mcpserver", "fastmcp"])
async def test_the_tool_can_catch_it_as_a_client_that_cannot_be_asked_and_fall_back(kind: str) -> None:
    caught: list[BaseException] = []
    server = build(kind, MemoryAuditSink(), caught)
    async with serving_json(kind, server) as url:
        assert await call(kind, url, "careful") == (False, "fell back")
    [exc] = caught
    assert isinstance(exc, CapabilityError)
    assert (exc.mode, exc.channel) == ("form", False)


async def test_a_server_with_an_event_stream_still_asks() -> None:
    server = build("mcpserver", MemoryAuditSink(), [])
    async with serving_http(server) as url:
        assert await call("mcpserver", url, "order") == (False, "accept")


@pytest.mark.parametrize("kind", ["mcpserver", "fastmcp"])
async def test_a_stateless_server_says_it_cannot_carry_the_question_not_that_the_client_did_not_declare(
    kind: str, logs: pytest.LogCaptureFixture
) -> None:
    """Stateless HTTP: each request is a session that never saw `initialize`, so the client's
    declaration is unknown (it did declare form mode here) and nothing can be pushed on it."""
    caught: list[BaseException] = []
    server = build(kind, MemoryAuditSink(), caught)
    if kind == "fastmcp":
        app = server.http_app(path="/mcp", stateless_http=True)
        async with serving_app(app) as origin:
            is_error, text = await call(kind, f"{origin}/mcp", "order")
            assert await call(kind, f"{origin}/mcp", "careful") == (False, "fell back")
    else:
        async with serving_http(server, stateless_http=True) as url:
            is_error, text = await call(kind, url, "order")
            assert await call(kind, url, "careful") == (False, "fell back")
    assert is_error
    assert text == refusal_of(CapabilityError("form", channel=False), modern=False, method="tools/call").text
    [exc] = caught
    assert isinstance(exc, CapabilityError)
    assert (exc.mode, exc.channel) == ("form", False)
    assert [r.getMessage() for r in logs.records if r.exc_info] == []
    assert any("no_back_channel" in r.getMessage() for r in logs.records if r.name == "mcp_elicit.server")

"""C3 (client failure) against real clients: a client that answers a pushed question with a
JSON-RPC error instead of a result. FastMCP's `Client` does that when the answer its handler
returns fails its own check against the form (here "six" for an integer); mcp-elicit's client does
it on purpose when it refuses a form (its `Refuse`). Either way the tool in the SDK's `MCPServer`
or in a FastMCP server gets ClientRefused, the model reads one line, the server logs one line and
the consent trail records the question as ended in error.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import fastmcp
import pytest
from mcp.server.mcpserver import Context, MCPServer

from mcp_elicit import ElicitSettings, ask, install
from mcp_elicit.client import Elicitation, ElicitClient, Pipeline, Refuse
from mcp_elicit.core import wire_codes
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.errors import ClientRefused
from mcp_elicit.testing import MemoryAuditSink
from mcp_elicit.ui.scripted import ScriptedUI
from tests.e2e.servers import serving_app, serving_http

pytestmark = pytest.mark.anyio


@dataclass
class Order:
    item: str
    quantity: int


SIZES = Form((Field.single_select("size", ["small", "large"]),))


class RefuseSizes:
    """A stage of mcp-elicit's client that refuses the form asking for a size, as its schema gate
    refuses a form it cannot take (the kit's own forms always pass that gate)."""

    name = "refuse_sizes"

    async def __call__(self, e: Elicitation) -> Refuse | None:
        if e.form is not None and "size" in e.form.names:
            return Refuse("schema", "requestedSchema refused: field 'size': not a form this client takes")
        return None


def build(kind: str, sink: MemoryAuditSink, caught: list[BaseException]) -> Any:
    """A server of `kind` ("mcpserver" or "fastmcp") whose tools ask with the kit and keep the
    ClientRefused they get before letting it end the call."""

    async def order(ctx: Any) -> str:
        try:
            answer = await ask(ctx, "How many?", Order)
        except ClientRefused as exc:
            caught.append(exc)
            raise
        return f"{answer.action} {answer.data}"

    async def size(ctx: Any) -> str:
        try:
            answer = await ask(ctx, "Which size?", SIZES)
        except ClientRefused as exc:
            caught.append(exc)
            raise
        return answer.action

    settings = ElicitSettings(audit=sink)
    server: Any
    if kind == "fastmcp":
        server = fastmcp.FastMCP("refused-fastmcp")
        install(server, settings)

        async def order_f(ctx: fastmcp.Context) -> str:
            return await order(ctx)

        async def size_f(ctx: fastmcp.Context) -> str:
            return await size(ctx)

        server.tool(order_f, name="order")
        server.tool(size_f, name="size")
    else:
        server = MCPServer("refused-mcpserver")
        install(server, settings)

        async def order_m(ctx: Context) -> str:
            return await order(ctx)

        async def size_m(ctx: Context) -> str:
            return await size(ctx)

        server.tool(name="order")(order_m)
        server.tool(name="size")(size_m)
    return server


@asynccontextmanager
async def serving(kind: str, server: Any) -> AsyncIterator[str]:
    if kind == "fastmcp":
        async with serving_app(server.http_app(path="/mcp")) as origin:
            yield f"{origin}/mcp"
    else:
        async with serving_http(server) as url:
            yield url


async def wrong_type(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
    """A FastMCP elicitation handler whose answer does not fit the form (quantity is an integer)."""
    return {"item": "tea", "quantity": "six"}


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Everything logged, FastMCP's own logger included (it does not propagate to the root)."""
    caplog.set_level(logging.DEBUG)
    fast = logging.getLogger("fastmcp")
    fast.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        fast.removeHandler(caplog.handler)


def text_of(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.parametrize("transport", ["memory", "http"])
@pytest.mark.parametrize("kind", ["mcpserver", "fastmcp"])
async def test_fastmcps_client_failing_its_own_check_of_an_answer_ends_the_tool_with_one_line(
    kind: str, transport: str, logs: pytest.LogCaptureFixture
) -> None:
    sink, caught = MemoryAuditSink(), []
    server = build(kind, sink, caught)
    if transport == "memory":
        async with fastmcp.Client(server, mode="legacy", elicitation_handler=wrong_type) as c:
            result = await c.call_tool("order", {}, raise_on_error=False)
    else:
        async with (
            serving(kind, server) as url,
            fastmcp.Client(url, mode="legacy", elicitation_handler=wrong_type) as c,
        ):
            result = await c.call_tool("order", {}, raise_on_error=False)
    [exc] = caught
    assert isinstance(exc, ClientRefused)
    assert exc.code == wire_codes.INTERNAL_ERROR  # what FastMCP sends for any failure of its handler
    assert exc.detail.startswith("'six' is not of type 'integer'")
    assert result.is_error
    assert text_of(result) == refusal_of(exc, modern=False).text
    assert "\n" not in text_of(result)
    assert [r.getMessage() for r in logs.records if r.exc_info] == []  # no traceback anywhere
    ours = ("mcp_elicit", "fastmcp")
    loud = [r for r in logs.records if r.levelno >= logging.INFO and r.name.startswith(ours)]
    assert [(r.name, r.levelno) for r in loud] == [("mcp_elicit.server", logging.INFO)]
    assert "client_refused" in loud[0].getMessage()
    assert [(r["action"], r["decided_by"], r["reason"]) for r in sink.records] == [
        ("error", "error", "client_refused")
    ]


@pytest.mark.parametrize("kind", ["mcpserver", "fastmcp"])
async def test_mcp_elicits_client_refusing_a_form_ends_the_tool_with_one_line_and_its_reason(
    kind: str, logs: pytest.LogCaptureFixture
) -> None:
    sink, caught, ui = MemoryAuditSink(), [], ScriptedUI([])
    server = build(kind, sink, caught)
    pipeline = Pipeline(ui)
    pipeline.insert(RefuseSizes(), before="ask")
    async with serving(kind, server) as url, ElicitClient(url, pipeline=pipeline, protocol="legacy") as c:
        result = await c.call_tool("size", {})
    [exc] = caught
    assert isinstance(exc, ClientRefused)
    assert exc.code == wire_codes.INVALID_PARAMS
    assert "not a form this client takes" in exc.detail
    assert ui.seen == []  # refused before anything was shown
    assert result.is_error
    assert text_of(result) == refusal_of(exc, modern=False).text
    assert [r.getMessage() for r in logs.records if r.exc_info] == []
    assert [(r["side"], r["action"], r["decided_by"], r["reason"]) for r in sink.records] == [
        ("server", "error", "error", "client_refused")
    ]

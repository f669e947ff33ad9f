"""A client that answers a pushed request with a JSON-RPC error instead of a result (C3: client
failure): its own check of an answer failed, it refused the form, it crashed. The tool gets
ClientRefused (not asked again), the model reads one line, the server logs one line, and the
consent trail records the question as ended in error.

The peer is the SDK's own `Client` (its callbacks may return `ErrorData`); the FastMCP client and
mcp-elicit's client are in tests/e2e/test_client_refused.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import unicodedata
from typing import Any

import mcp_types as t
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_elicit.core import wire_codes
from mcp_elicit.core.limits import MAX_CLIENT_ERROR_CHARS
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.errors import ClientRefused
from mcp_elicit.server import (
    ApiKeyHandoff,
    ElicitSettings,
    IdentityPolicy,
    RawRequest,
    ask,
    gather,
    handoff,
    install,
    sdk,
)
from mcp_elicit.server.stores import CANCELLED
from mcp_elicit.testing import MemoryAuditSink
from tests.e2e.servers import serving_http
from tests.server.handoff_support import make_handoffs, mcp_client
from tests.server.handoff_support import make_server as handoff_server
from tests.support import text_of

pytestmark = pytest.mark.anyio

# What the FastMCP client sends when its own check of an answer fails: jsonschema's message, on
# several indented lines.
WRONG_TYPE = (
    "'six' is not of type 'integer'\n\nFailed validating 'type' in schema['properties']['quantity']:\n"
    "    {'type': 'integer'}\n\nOn instance['quantity']:\n    'six'"
)


@dataclasses.dataclass
class Order:
    item: str
    quantity: int


class Refusing:
    """An SDK elicitation callback that answers every request with a JSON-RPC error."""

    def __init__(self, code: int = t.INTERNAL_ERROR, message: str = WRONG_TYPE) -> None:
        self.error = t.ErrorData(code=code, message=message)
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, context: Any, params: Any) -> t.ErrorData:
        self.seen.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return self.error


def make_server(sink: MemoryAuditSink, caught: list[BaseException]) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("refused")
    install(server, ElicitSettings(audit=sink))

    @server.tool()
    async def order(ctx: Context) -> str:
        answer = await ask(ctx, "How many?", Order)
        return f"{answer.action}"

    @server.tool()
    async def careful(ctx: Context) -> str:
        try:
            await ask(ctx, "How many?", Order)
        except ClientRefused as exc:
            caught.append(exc)
            return "fell back"
        return "asked"

    @server.tool()
    async def summarize(ctx: Context) -> str:
        params = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
        await gather(ctx, {"draft": RawRequest("sampling/createMessage", params)})
        return "sampled"

    @server.prompt()
    async def greeting(ctx: Context) -> str:
        await ask(ctx, "How many?", Order)
        return "hello"

    return server


def kit_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "mcp_elicit.server"]


async def test_an_error_reply_is_one_line_for_the_model_one_log_line_and_an_error_record_not_asked_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    sink, refusing = MemoryAuditSink(), Refusing()
    async with Client(make_server(sink, []), mode="legacy", elicitation_callback=refusing) as client:
        result = await client.call_tool("order", {})
    assert result.is_error
    expected = refusal_of(sdk.client_refused(t.INTERNAL_ERROR, WRONG_TYPE), modern=False)
    assert text_of(result) == expected.text
    assert "\n" not in text_of(result)
    assert len(refusing.seen) == 1
    assert [r.exc_info for r in caplog.records if r.exc_info] == []
    [line] = kit_lines(caplog)
    assert line.levelno == logging.INFO
    assert "client_refused" in line.getMessage()
    assert [(r["action"], r["decided_by"], r["reason"]) for r in sink.records] == [
        ("error", "error", "client_refused")
    ]


async def test_the_tool_can_catch_it_with_the_clients_code_and_its_message_as_one_clean_line() -> None:
    caught: list[BaseException] = []
    hostile = "no\x1b[2J\r\nway\u202e see https://evil.example"
    refusing = Refusing(t.INVALID_PARAMS, hostile)
    server = make_server(MemoryAuditSink(), caught)
    async with Client(server, mode="legacy", elicitation_callback=refusing) as c:
        result = await c.call_tool("careful", {})
    assert text_of(result) == "fell back"
    [exc] = caught
    assert isinstance(exc, ClientRefused)
    assert exc.code == t.INVALID_PARAMS
    assert exc.detail == "no way⟨U+202E⟩ see https[:]//evil.example"


async def test_a_prompt_has_no_error_result_so_it_gets_the_json_rpc_error_with_the_clients_code() -> None:
    server = make_server(MemoryAuditSink(), [])
    async with Client(server, mode="legacy", elicitation_callback=Refusing()) as c:
        with pytest.raises(MCPError) as info:
            await c.get_prompt("greeting", {})
    assert info.value.error.code == wire_codes.INTERNAL_ERROR
    assert info.value.error.data == {"reason": "client_refused", "code": t.INTERNAL_ERROR}


async def test_a_refused_sampling_request_ends_the_tool_the_same_way_without_a_consent_record() -> None:
    sink = MemoryAuditSink()

    async def sampling(context: Any, params: Any) -> t.ErrorData:
        return t.ErrorData(code=t.INVALID_REQUEST, message="User rejected sampling request")

    async with Client(make_server(sink, []), mode="legacy", sampling_callback=sampling) as c:
        result = await c.call_tool("summarize", {})
    assert result.is_error
    refused = sdk.client_refused(t.INVALID_REQUEST, "User rejected sampling request")
    assert text_of(result) == refusal_of(refused, modern=False).text
    assert sink.records == []  # sampling is not an elicitation


async def test_a_refused_url_hand_off_is_closed_and_recorded_as_an_error() -> None:
    sink = MemoryAuditSink()
    hs = make_handoffs(identity=IdentityPolicy(dev_user="dev"))
    server = handoff_server(hs, audit=sink)

    @server.tool()
    async def connect(ctx: Context) -> str:
        await handoff(ctx, "Connect GitHub", ApiKeyHandoff(provider="github"))
        return "connected"

    refusing = Refusing(t.INVALID_PARAMS, "this client did not declare the url elicitation mode")
    async with serving_http(server) as url, mcp_client(url, "legacy", refusing) as c:
        result = await c.call_tool("connect", {})
    assert result.is_error
    assert len(refusing.seen) == 1
    assert [(r["mode"], r["action"], r["decided_by"], r["reason"]) for r in sink.records] == [
        ("url", "error", "error", "client_refused")
    ]
    record = await hs.store.get(refusing.seen[0]["elicitationId"])
    assert record is not None
    assert record.status == CANCELLED  # its link is dead


async def test_a_server_whose_own_transport_cannot_push_does_not_blame_the_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """JSON responses leave no back-channel: the SDK refuses to send the question at all (its
    NoBackChannelError is an MCPError too), so no client answered anything."""
    caplog.set_level(logging.INFO)
    sink, refusing = MemoryAuditSink(), Refusing()
    server = make_server(sink, [])
    async with serving_http(server, json_response=True) as url, mcp_client(url, "legacy", refusing) as c:
        with contextlib.suppress(MCPError):
            await c.call_tool("order", {})
    assert refusing.seen == []
    assert [r["reason"] for r in sink.records if r["reason"] == "client_refused"] == []
    assert [r for r in kit_lines(caplog) if "client_refused" in r.getMessage()] == []


@given(code=st.integers(min_value=-(2**31), max_value=2**31 - 1), message=st.text())
def test_any_client_error_message_becomes_one_bounded_clean_line(code: int, message: str) -> None:
    exc = sdk.client_refused(code, message)
    assert exc.code == code
    assert len(exc.detail) <= MAX_CLIENT_ERROR_CHARS
    text = refusal_of(exc, modern=False).text
    for shown in (exc.detail, text):
        assert len(shown.splitlines()) <= 1
        assert not any(unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") for ch in shown)
        assert "://" not in shown
    assert exc.detail == exc.detail.strip()

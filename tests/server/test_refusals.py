"""What a peer client receives when the server kit refuses, and what the server logs.

The client is the SDK's own `Client` with default settings; the refusal comes from the one map in
`core.refusals`. An ordinary outcome (timeout, a client that lacks a mode) is one log line, never a
traceback.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import anyio
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_elicit.core import wire_codes
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.errors import (
    AnswerError,
    CapabilityError,
    ElicitationTimeout,
    FieldProblem,
    NotInstalled,
    SecretInForm,
)
from mcp_elicit.server import ApiKeyHandoff, ElicitSettings, ask, handoff, install
from tests.support import ScriptedCallback, text_of

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Age:
    age: int


SECRET_FORM = Form((Field.string("api_key", title="API key"),))


def make_server(**settings: Any) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("refusals")
    install(server, ElicitSettings(**settings))

    @server.tool()
    async def how_old(ctx: Context) -> str:
        answer = await ask(ctx, "How old are you?", Age)
        return str(answer.data)

    @server.tool()
    async def paste_key(ctx: Context) -> str:
        await ask(ctx, "Paste your key", SECRET_FORM)
        return "never"

    @server.tool()
    async def connect_github(ctx: Context) -> str:
        await handoff(ctx, "Connect GitHub", ApiKeyHandoff(provider="github"))
        return "never"

    @server.prompt()
    async def greeting(ctx: Context) -> str:
        await ask(ctx, "How old are you?", Age)
        return "hello"

    return server


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    assert [r.name for r in caplog.records if r.exc_info] == []


def kit_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "mcp_elicit.server"]


async def test_a_legacy_client_without_elicitation_reads_which_capability_the_tool_needs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with Client(make_server(), mode="legacy") as client:
        result = await client.call_tool("how_old", {})
    assert result.is_error
    assert text_of(result) == refusal_of(CapabilityError("form"), modern=False, method="tools/call").text
    no_tracebacks(caplog)
    [line] = kit_lines(caplog)
    assert line.levelno == logging.INFO


async def test_a_form_that_asks_for_a_secret_is_refused_with_the_fields_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with Client(make_server(), mode="legacy", elicitation_callback=ScriptedCallback([])) as client:
        result = await client.call_tool("paste_key", {})
    assert result.is_error
    assert text_of(result) == refusal_of(SecretInForm({"api_key": ()}), modern=False).text
    no_tracebacks(caplog)


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_answers_that_keep_failing_end_the_call_with_the_field_named(era: str) -> None:
    bad = {"action": "accept", "content": {"age": "old"}}
    callback = ScriptedCallback([bad, bad, bad])
    async with Client(make_server(), mode=era, elicitation_callback=callback) as client:
        result = await client.call_tool("how_old", {})
    assert result.is_error
    assert text_of(result) == refusal_of(AnswerError((FieldProblem("age", "type"),)), modern=False).text
    assert len(callback.seen) == 3


async def test_a_question_nobody_answers_times_out_with_one_log_line_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    never = anyio.Event()

    async def silent(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        await never.wait()
        return t.ElicitResult(action="cancel")

    async with Client(make_server(ask_timeout=0.05), mode="legacy", elicitation_callback=silent) as client:
        result = await client.call_tool("how_old", {})
        never.set()
    assert result.is_error
    assert text_of(result) == refusal_of(ElicitationTimeout(0.05), modern=False).text
    no_tracebacks(caplog)
    [line] = kit_lines(caplog)
    assert line.levelno == logging.INFO


async def test_a_prompt_has_no_error_result_so_its_refusal_is_a_json_rpc_error_with_a_reason() -> None:
    async with Client(make_server(), mode="legacy") as client:
        with pytest.raises(MCPError) as info:
            await client.get_prompt("greeting", {})
    assert info.value.error.data["reason"] == "missing_capability"  # type: ignore[index]
    assert info.value.error.code == wire_codes.INVALID_PARAMS


async def test_a_server_set_up_wrong_logs_one_warning_with_what_to_fix_and_the_client_reads_the_refusal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    callback = ScriptedCallback([])
    async with Client(make_server(), mode="legacy", elicitation_callback=callback) as client:
        result = await client.call_tool("connect_github", {})
    missing = NotInstalled("handoffs")
    assert text_of(result) == refusal_of(missing, modern=False).text
    no_tracebacks(caplog)
    [line] = kit_lines(caplog)
    assert line.levelno == logging.WARNING
    assert missing.what in line.getMessage()  # what to fix, not only the client's line

"""A server using `ask` never sends a form asking for a secret (F5); the override is explicit and logged."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer

from mcp_elicit.errors import SecretInForm
from mcp_elicit.server import ask, install
from tests.support import ScriptedCallback, text_of

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class ApiAccess:
    account: str
    api_key: str


@dataclasses.dataclass
class Preferences:
    token_count: int
    secretary_email: str


def make_server(caught: list[SecretInForm]) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("guarded")
    install(server)

    @server.tool()
    async def connect(ctx: Context) -> str:
        try:
            await ask(ctx, "Paste your API key", ApiAccess)
        except SecretInForm as exc:
            caught.append(exc)
            return "use URL mode"
        return "asked"

    @server.tool()
    async def connect_anyway(ctx: Context) -> str:
        answer = await ask(ctx, "Paste your API key", ApiAccess, allow_secret_fields=True)
        return answer.action

    @server.tool()
    async def preferences(ctx: Context) -> str:
        return (await ask(ctx, "Preferences", Preferences)).action

    return server


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_form_asking_for_an_api_key_is_never_sent(era: str) -> None:
    caught: list[SecretInForm] = []
    cb = ScriptedCallback([])
    async with Client(make_server(caught), mode=era, elicitation_callback=cb) as c:
        result = await c.call_tool("connect", {})
    assert text_of(result) == "use URL mode"
    assert cb.seen == []
    assert list(caught[0].fields) == ["api_key"]
    assert "api_key" in caught[0].fields["api_key"]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_the_override_sends_the_form_and_logs_the_fields(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    cb = ScriptedCallback([{"action": "decline"}])
    with caplog.at_level(logging.WARNING, logger="mcp_elicit.server"):
        async with Client(make_server([]), mode=era, elicitation_callback=cb) as c:
            result = await c.call_tool("connect_anyway", {})
    assert text_of(result) == "decline"
    assert len(cb.seen) == 1
    assert any("api_key" in r.getMessage() for r in caplog.records)


async def test_benign_fields_that_mention_secret_words_are_sent() -> None:
    cb = ScriptedCallback([{"action": "decline"}])
    async with Client(make_server([]), mode="legacy", elicitation_callback=cb) as c:
        result = await c.call_tool("preferences", {})
    assert text_of(result) == "decline"

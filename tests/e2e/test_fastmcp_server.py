"""The server kit inside a FastMCP server: ask, confirm, gather and a hand-off, in both eras,
driven by the SDK's client and by FastMCP's client (each with default settings), in memory and
over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import fastmcp
import mcp_types as t
import pytest
from fastmcp import Context
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_elicit import ElicitSettings, Question, ask, confirm, gather, install, require
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.errors import CapabilityError, ElicitationTimeout, HandoffNotCompleted
from mcp_elicit.server import ApiKeyHandoff, IdentityPolicy, credential
from tests.e2e.servers import serving_app
from tests.server.handoff_support import Browser, UrlCallback, make_handoffs, mcp_client

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
FLOW = ApiKeyHandoff(provider="github", title="GitHub")


async def enter_key(url: str) -> None:
    page = await Browser().enter_key(url)
    assert page.status == 200


@dataclass
class Target:
    environment: str
    replicas: int = 2


@dataclass
class Name:
    name: str


def build(settings: ElicitSettings | None = None) -> tuple[fastmcp.FastMCP, list[BaseException]]:
    server = fastmcp.FastMCP("fastmcp-with-kit")
    install(server, settings)
    caught: list[BaseException] = []

    @server.tool
    async def deploy(ctx: Context, service: str) -> str:
        target = await ask(ctx, f"Where should {service} go?", Target, key="target")
        if not target.accepted or target.data is None:
            return f"Nothing deployed ({target.action})."
        if not await confirm(ctx, f"Deploy {service} to {target.data.environment}?", key="go"):
            return "Stopped."
        return f"Deployed {service} to {target.data.environment} x{target.data.replicas}."

    @server.tool
    async def survey(ctx: Context) -> str:
        answers = await gather(ctx, {"first": Question("First name?", Name), "last": Question("Last?", Name)})
        return " ".join(answers[k].data.name for k in ("first", "last"))

    @server.tool
    async def careful(ctx: Context) -> str:
        try:
            await ask(ctx, "Where?", Target)
        except CapabilityError as exc:
            caught.append(exc)
            return "fell back"
        return "asked"

    @server.tool
    async def repos(ctx: Context) -> str:
        await require(ctx, FLOW)
        key = await credential(ctx, "github")
        return "3 repositories" if key is not None else "no key"

    @server.tool
    async def repos_later(ctx: Context) -> str:
        await require(ctx, FLOW, fail_fast=True)
        return "3 repositories"

    @server.prompt
    async def greeting(ctx: Context) -> str:
        who = await ask(ctx, "Who?", Name, key="who")
        return f"Hello {who.data.name}." if who.data is not None else "Hello."

    return server, caught


class Script:
    """An SDK elicitation callback that answers form requests from a list, in order."""

    def __init__(self, *contents: dict[str, Any]) -> None:
        self.contents = list(contents)
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        self.seen.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        return t.ElicitResult(action="accept", content=self.contents.pop(0))


class FastAnswers:
    """A FastMCP elicitation handler with the same script."""

    def __init__(self, *contents: dict[str, Any]) -> None:
        self.contents = list(contents)
        self.messages: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
        self.messages.append(message)
        return self.contents.pop(0)


@asynccontextmanager
async def serving(server: fastmcp.FastMCP) -> AsyncIterator[str]:
    async with serving_app(server.http_app(path="/mcp")) as origin:
        yield f"{origin}/mcp"


def text_of(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.parametrize("era", ERAS)
async def test_the_sdk_client_completes_ask_and_confirm_in_a_fastmcp_tool(era: str) -> None:
    server, _ = build()
    script = Script({"environment": "production"}, {"confirm": True})
    async with Client(server._mcp_server, mode=era, elicitation_callback=script) as c:  # type: ignore[arg-type]
        result = await c.call_tool("deploy", {"service": "search"})
    assert text_of(result) == "Deployed search to production x2."
    assert [s["message"] for s in script.seen] == ["Where should search go?", "Deploy search to production?"]


@pytest.mark.parametrize("era", ERAS)
async def test_the_sdk_client_answers_a_gather_over_http(era: str) -> None:
    server, _ = build()
    script = Script({"name": "Ada"}, {"name": "Lovelace"})
    async with serving(server) as url, mcp_client(url, era, script) as c:
        result = await c.call_tool("survey", {})
    assert text_of(result) == "Ada Lovelace"


@pytest.mark.parametrize("transport", ["memory", "http"])
@pytest.mark.parametrize("era", ERAS)
async def test_fastmcps_client_completes_ask_and_confirm_in_a_fastmcp_tool(transport: str, era: str) -> None:
    server, _ = build()
    handler = FastAnswers({"environment": "staging", "replicas": 3}, {"confirm": True})
    if transport == "memory":
        async with fastmcp.Client(server, mode=era, elicitation_handler=handler) as c:
            result = await c.call_tool("deploy", {"service": "api"})
    else:
        async with serving(server) as url, fastmcp.Client(url, mode=era, elicitation_handler=handler) as c:
            result = await c.call_tool("deploy", {"service": "api"})
    assert result.content[0].text == "Deployed api to staging x3."  # type: ignore[union-attr]
    assert len(handler.messages) == 2


@pytest.mark.parametrize("era", ERAS)
async def test_a_hand_off_completes_inside_a_fastmcp_tool(era: str) -> None:
    hs = make_handoffs(identity=IdentityPolicy(dev_user="dev"))
    server, _ = build(ElicitSettings(handoffs=hs))
    callback = UrlCallback(enter_key)
    async with serving(server) as url, mcp_client(url, era, callback) as c:
        result = await c.call_tool("repos", {})
    assert text_of(result) == "3 repositories"
    [request] = callback.seen
    assert request["url"].startswith(url.removesuffix("/mcp") + "/elicit/start/")


async def test_a_legacy_client_without_elicitation_gets_a_readable_refusal_not_a_crash() -> None:
    server, _ = build()
    async with Client(server._mcp_server, mode="legacy") as c:  # type: ignore[arg-type]
        result = await c.call_tool("deploy", {"service": "search"})
    assert result.is_error
    assert "elicitation.form" in text_of(result)
    assert "Error calling tool" not in text_of(result)


async def test_a_fastmcp_tool_can_catch_the_missing_capability_and_fall_back() -> None:
    server, caught = build()
    async with Client(server._mcp_server, mode="legacy") as c:  # type: ignore[arg-type]
        result = await c.call_tool("careful", {})
    assert text_of(result) == "fell back"
    assert isinstance(caught[0], CapabilityError)
    assert caught[0].mode == "form"


async def test_a_2026_client_without_elicitation_gets_minus_32021_from_a_fastmcp_tool() -> None:
    server, _ = build()
    async with Client(server._mcp_server, mode="2026-07-28") as c:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as info:
            await c.call_tool("deploy", {"service": "search"})
    assert info.value.error.code == t.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert info.value.error.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


@pytest.fixture
def fastmcp_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """What FastMCP logs: its "fastmcp" logger does not propagate to the root, so listen on it."""
    logger = logging.getLogger("fastmcp")
    logger.addHandler(caplog.handler)
    caplog.set_level(logging.DEBUG, logger="fastmcp")
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)


def loud(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What FastMCP logged at INFO or above (its DEBUG lines, tracebacks included, stay hidden)."""
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]


async def test_a_question_pending_on_2026_is_not_logged_as_an_error_of_the_tool_or_prompt(
    fastmcp_log: pytest.LogCaptureFixture,
) -> None:
    server, _ = build()
    script = Script({"environment": "production"}, {"confirm": True}, {"name": "Ada"})
    async with Client(server._mcp_server, mode="2026-07-28", elicitation_callback=script) as c:  # type: ignore[arg-type]
        result = await c.call_tool("deploy", {"service": "search"})
        prompt = await c.get_prompt("greeting", {})
    assert text_of(result) == "Deployed search to production x2."
    assert prompt.messages[0].content.text == "Hello Ada."  # type: ignore[union-attr]
    assert loud(fastmcp_log) == []


async def test_a_fail_fast_hand_off_on_2025_is_not_logged_as_an_error_of_the_tool(
    fastmcp_log: pytest.LogCaptureFixture,
) -> None:
    server, _ = build(ElicitSettings(handoffs=make_handoffs(identity=IdentityPolicy(dev_user="dev"))))
    async with serving(server) as url, mcp_client(url, "legacy", UrlCallback()) as c:
        with pytest.raises(MCPError) as info:
            await c.call_tool("repos_later", {})
    assert info.value.error.code == t.URL_ELICITATION_REQUIRED
    assert loud(fastmcp_log) == []


async def test_a_timed_out_question_reads_as_the_refusal_line_from_a_fastmcp_tool() -> None:
    server, _ = build(ElicitSettings(ask_timeout=0.05))
    never = anyio.Event()

    async def silent(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        await never.wait()
        return t.ElicitResult(action="cancel")

    async with Client(server._mcp_server, mode="legacy", elicitation_callback=silent) as c:  # type: ignore[arg-type]
        result = await c.call_tool("deploy", {"service": "search"})
        never.set()
    assert result.is_error
    assert text_of(result) == refusal_of(ElicitationTimeout(0.05), modern=False).text


@pytest.mark.parametrize("era", ERAS)
async def test_a_declined_hand_off_reads_as_the_refusal_line_from_a_fastmcp_tool(era: str) -> None:
    server, _ = build(ElicitSettings(handoffs=make_handoffs(identity=IdentityPolicy(dev_user="dev"))))
    async with serving(server) as url, mcp_client(url, era, UrlCallback(action="decline")) as c:
        result = await c.call_tool("repos", {})
    assert result.is_error
    assert text_of(result) == refusal_of(HandoffNotCompleted("decline", "", "api_key"), modern=False).text


async def test_a_2026_client_without_elicitation_gets_minus_32021_from_a_fastmcp_prompt_logged_quietly(
    fastmcp_log: pytest.LogCaptureFixture,
) -> None:
    server, _ = build()
    async with Client(server._mcp_server, mode="2026-07-28") as c:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as info:
            await c.get_prompt("greeting", {})
    assert info.value.error.code == t.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert info.value.error.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    assert loud(fastmcp_log) == []


async def test_a_refusal_in_a_fastmcp_tool_is_one_info_line_of_the_kit_as_on_mcpserver(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_elicit.server")
    server, _ = build()
    async with Client(server._mcp_server, mode="legacy") as c:  # type: ignore[arg-type]
        result = await c.call_tool("deploy", {"service": "search"})
    assert result.is_error
    [line] = [r for r in caplog.records if r.name == "mcp_elicit.server"]
    assert line.levelno == logging.INFO
    assert "missing_capability" in line.getMessage()
    assert line.exc_info is None

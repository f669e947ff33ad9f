"""FastMCP's `fastmcp.Client`, with its default settings, against the reference server.

Its default `mode="auto"` probes `server/discover` and settles on 2026-07-28 with our server;
`mode="legacy"` pins 2025-11-25. Its default `input_required_max_rounds` (10) stays in force.
Over stdio it runs the reference server as a subprocess (`StdioTransport`), as a desktop host does.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

import anyio
import fastmcp
import pytest
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_elicit import ask, install
from mcp_elicit.core import wire_codes
from tests.peers.support import (
    LEGACY,
    MODERN,
    PERSON_SECONDS,
    WAIT_BOUND_SECONDS,
    Person,
    Reference,
    open_page,
    reference,
)

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]
SERVE_STDIO = ["-m", "mcp_elicit", "serve-reference", "--transport", "stdio"]
ERAS = {MODERN: None, LEGACY: "legacy"}  # None: the client's default (auto)


def client(ref: Reference, era: str, handler: Any = None) -> fastmcp.Client[Any]:
    target: Any = ref.url
    if target is None:
        target = StdioTransport(
            sys.executable, ["-m", "mcp_elicit", "serve-reference", "--transport", "stdio"]
        )
    options: dict[str, Any] = {"elicitation_handler": handler}
    if ERAS[era] is not None:
        options["mode"] = ERAS[era]
    return fastmcp.Client(target, **options)


class Handler:
    """A FastMCP elicitation handler: forms get the next scripted answer, URL requests are
    accepted at once (the person goes to the page). Keeps every request's mode and message."""

    def __init__(self, person: Person | None = None, *answers: dict[str, Any]) -> None:
        self.person = person
        self.answers = list(answers)
        self.seen: list[tuple[str, str]] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        mode = getattr(params, "mode", "form") or "form"
        self.seen.append((mode, message))
        if mode == "url":
            assert self.person is not None
            self.person.accept(params.url)
            return ElicitResult(action="accept")
        return self.answers.pop(0)


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", list(ERAS))
async def test_fastmcp_answers_the_deploy_forms(transport: str, era: str) -> None:
    handler = Handler(None, {"environment": "production", "region": "us-east"}, {"confirm": True})
    async with reference(transport) as ref, client(ref, era, handler) as c:
        result = await c.call_tool("deploy", {"service": "search"})
    assert text(result) == "Deployed search to production in us-east with 2 replicas."
    assert [mode for mode, _ in handler.seen] == ["form", "form"]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", list(ERAS))
async def test_fastmcp_finishes_a_hand_off_the_person_completes_seconds_after_accepting(
    transport: str, era: str
) -> None:
    person = Person()
    handler = Handler(person)
    async with reference(transport) as ref, client(ref, era, handler) as c:
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(person.finish_page, PERSON_SECONDS if era == MODERN else 0.0)
            with anyio.fail_after(WAIT_BOUND_SECONDS):
                result = await c.call_tool("connect_service", {})
        elapsed = time.monotonic() - started
    assert text(result) == "Connected to Example API."
    assert [mode for mode, _ in handler.seen] == ["url"]
    if ref.tool_calls is not None:
        assert ref.tool_calls == (2 if era == MODERN else 1)
    print(
        f"fastmcp {transport} {era}: {ref.tool_calls} tools/call, {len(handler.seen)} rounds, {elapsed:.2f} s"
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_fastmcp_on_2025_raises_minus_32042_with_the_url_and_retries_after_the_page(
    transport: str,
) -> None:
    # FastMCP 4 keeps -32042 a JSON-RPC error (MCPError with the elicitations), not a ToolError.
    async with reference(transport) as ref, client(ref, LEGACY, Handler()) as c:
        with pytest.raises(MCPError) as info:
            await c.call_tool("service_status", {})
        assert not isinstance(info.value, ToolError)
        assert info.value.code == wire_codes.URL_ELICITATION_REQUIRED
        [elicitation] = info.value.data["elicitations"]
        await open_page(elicitation["url"])
        result = await c.call_tool("service_status", {})
    assert text(result) == "Example API: connected, 3 projects."


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_fastmcp_without_a_handler_on_2025_raises_a_tool_error_naming_the_capability(
    transport: str,
) -> None:
    async with reference(transport) as ref, client(ref, LEGACY) as c:
        with pytest.raises(ToolError) as info:
            await c.call_tool("deploy", {"service": "search"})
    assert str(info.value) == (
        "This tool needs the client's elicitation.form capability, which this client did not declare."
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_fastmcp_without_a_handler_on_2026_raises_minus_32021_with_the_capability(
    transport: str,
) -> None:
    async with reference(transport) as ref, client(ref, MODERN) as c:
        with pytest.raises(MCPError) as info:
            await c.call_tool("deploy", {"service": "search"})
    assert info.value.code == wire_codes.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert info.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


@dataclass
class Note:
    title: str
    note: str | None = None  # optional, and the wire schema gives it no default


async def test_fastmcp_refuses_its_own_typed_answer_when_an_optional_field_has_no_default() -> None:
    """FastMCP 4.2.3's `response_type(...)` fills an optional field the form gives no default with
    None, and its own schema check then refuses the answer before sending it (docs/interop.md,
    "Where a peer is at fault"). A plain dict of the answered fields goes through."""
    server = MCPServer("optional-field")
    install(server)

    @server.tool()
    async def take(ctx: Context) -> str:
        answer = await ask(ctx, "A note?", Note)
        return f"{answer.action} {answer.data}"

    async def typed(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return response_type(title="t")

    async def plain(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return {"title": "t"}

    async with fastmcp.Client(server, mode="legacy", elicitation_handler=typed) as fc:
        refused = await fc.call_tool("take", {}, raise_on_error=False)
    async with fastmcp.Client(server, mode="legacy", elicitation_handler=plain) as fc:
        answered = await fc.call_tool("take", {}, raise_on_error=False)
    assert refused.is_error
    assert "None is not of type" in refused.content[0].text  # FastMCP's own check, relayed
    assert (answered.is_error, answered.content[0].text) == (False, "accept Note(title='t', note=None)")

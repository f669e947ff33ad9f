"""The client kit against a server written with FastMCP, whose `ctx.elicit` pushes `elicitation/create`
(2025-11-25) over streamable HTTP: another implementation's forms go through the same pipeline."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import anyio
import fastmcp
import pytest
from fastmcp import Context

from mcp_elicit.client import ElicitClient
from mcp_elicit.client.ui_protocol import FormPrompt
from mcp_elicit.ui.scripted import ScriptedUI
from tests.e2e.servers import serving_http
from tests.support import text_of

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Booking:
    guests: int
    room: Literal["single", "double"] = "double"
    breakfast: bool = True


def build_server() -> fastmcp.FastMCP[Any]:
    server: fastmcp.FastMCP[Any] = fastmcp.FastMCP("hotel")

    @server.tool
    async def book(ctx: Context) -> str:
        answer = await ctx.elicit("How should we book your stay?", response_type=Booking)
        if answer.action != "accept":
            return f"No booking ({answer.action})."
        b = answer.data
        return f"Booked a {b.room} room for {b.guests}, breakfast={b.breakfast}."

    return server


class FastMCPOverHttp:
    """`serving_http` expects an SDK server; FastMCP's app is served the same way."""

    def __init__(self, server: fastmcp.FastMCP[Any]) -> None:
        self.server = server

    def streamable_http_app(self) -> Any:
        return self.server.http_app(path="/mcp")


async def book(ui: ScriptedUI) -> tuple[str, ElicitClient]:
    with anyio.fail_after(60):
        async with (
            serving_http(FastMCPOverHttp(build_server())) as url,
            ElicitClient(url, ui=ui, protocol="legacy") as client,
        ):
            result = await client.call_tool("book")
    return text_of(result), client


async def test_a_fastmcp_form_is_answered_with_its_defaults_applied_F6() -> None:
    ui = ScriptedUI([{"accept_defaults": True, "content": {"guests": 2}}])
    text, client = await book(ui)
    assert text == "Booked a double room for 2, breakfast=True."
    prompt = ui.seen[0]
    assert isinstance(prompt, FormPrompt)
    assert prompt.requester.name == "hotel"
    assert prompt.purpose.target == "book"
    assert prompt.form.names == ("guests", "room", "breakfast")
    assert [(o.action, o.decided_by, o.delivery) for o in client.outcomes] == [("accept", "script", "push")]


async def test_a_fastmcp_question_nobody_scripted_is_declined_and_says_so() -> None:
    ui = ScriptedUI()
    text, _ = await book(ui)
    assert text == "No booking (decline)."
    assert len(ui.notices) == 1

"""A refusal names what was running: a tool, a prompt or a resource (or nothing in particular when
that is not known), in both eras and on both frameworks. The peers are the SDK's `Client` and
FastMCP's `Client`, neither of which declares form elicitation here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import fastmcp
import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_elicit import errors
from mcp_elicit.core import wire_codes
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.server import ask, install
from tests.core.test_refusals import EXAMPLES
from tests.support import text_of

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


@dataclasses.dataclass
class Age:
    age: int


def mcpserver() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("wording")
    install(server)

    @server.tool()
    async def how_old(ctx: Context) -> str:
        return str((await ask(ctx, "How old are you?", Age)).data)

    @server.prompt()
    async def greet(ctx: Context) -> str:
        return str((await ask(ctx, "How old are you?", Age)).data)

    @server.resource("ages://{name}")
    async def age_of(name: str, ctx: Context) -> str:
        return str((await ask(ctx, f"How old is {name}?", Age)).data)

    return server


def fast() -> fastmcp.FastMCP:
    server = fastmcp.FastMCP("wording-fastmcp")
    install(server)

    async def greet(ctx: fastmcp.Context) -> str:
        return str((await ask(ctx, "How old are you?", Age)).data)

    async def age_of(name: str, ctx: fastmcp.Context) -> str:
        return str((await ask(ctx, f"How old is {name}?", Age)).data)

    server.prompt(greet, name="greet")
    server.resource("ages://{name}", name="age_of")(age_of)
    return server


def needs(what: str) -> str:
    return f"{what} needs the client's elicitation.form capability, which this client did not declare."


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_a_prompt_and_a_resource_each_say_what_needs_the_capability(era: str) -> None:
    async with Client(mcpserver(), mode=era) as client:  # type: ignore[arg-type]
        if era == "legacy":
            result = await client.call_tool("how_old", {})
            assert result.is_error
            assert text_of(result) == needs("This tool")
        else:
            with pytest.raises(MCPError) as tool:
                await client.call_tool("how_old", {})
            assert tool.value.error.code == wire_codes.MISSING_REQUIRED_CLIENT_CAPABILITY
            assert tool.value.error.message == needs("This tool")
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("greet", {})
        assert prompt.value.error.message == needs("This prompt")
        with pytest.raises(MCPError) as resource:
            await client.read_resource("ages://ada")
        assert resource.value.error.message == needs("This resource")


@pytest.mark.parametrize("era", ERAS)
async def test_on_fastmcp_a_prompt_and_a_resource_say_so_too(era: str) -> None:
    async with fastmcp.Client(fast(), mode=era) as client:  # type: ignore[arg-type]
        with pytest.raises(Exception) as prompt:  # noqa: PT011 (FastMCP's client raises its own type)
            await client.get_prompt("greet", {})
        assert needs("This prompt") in str(prompt.value)
        with pytest.raises(Exception) as resource:  # noqa: PT011
            await client.read_resource("ages://ada")
        assert needs("This resource") in str(resource.value)


@pytest.mark.parametrize("exc", list(EXAMPLES.values()), ids=lambda exc: type(exc).__name__)
@pytest.mark.parametrize("method", ["prompts/get", "resources/read", None, "completion/complete"])
def test_no_refusal_speaks_of_a_tool_outside_one(exc: errors.ElicitError, method: str | None) -> None:
    for modern in (False, True):
        assert "tool" not in refusal_of(exc, modern=modern, method=method).text.lower()


def test_unknown_wording_is_neutral() -> None:
    assert refusal_of(errors.CapabilityError("form"), modern=False).text == needs("This request")
    assert refusal_of(errors.FormDefinitionError("f", "pattern"), modern=False).text.startswith("The server")

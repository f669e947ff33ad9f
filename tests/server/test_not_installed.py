"""A server whose tool asks a question without `install(server)` says so, in both eras and on both
frameworks: the call ends with NotInstalled's refusal (which names the missing call), the server's log
has one WARNING line naming it, and no traceback. The peers are the SDK's `Client` and FastMCP's
`Client`, both of which answer forms.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import fastmcp
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_elicit import errors
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.server import ask

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
INSTALL = "mcp_elicit.install(server)"


@dataclasses.dataclass
class Name:
    name: str


async def sdk_answer(context: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"name": "Ada"})


async def fastmcp_answer(message: str, response_type: Any, params: Any, context: Any) -> dict[str, str]:
    return {"name": "Ada"}


def kit_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("mcp_elicit")]


def assert_one_warning_naming_install(caplog: pytest.LogCaptureFixture) -> None:
    lines = kit_lines(caplog)
    assert [r.levelno for r in lines] == [logging.WARNING]
    assert INSTALL in lines[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)  # one line, no traceback


@pytest.mark.parametrize("era", ERAS)
async def test_an_sdk_server_without_install_refuses_the_question_naming_install(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    server: MCPServer[Any] = MCPServer("forgot-install")
    asked: list[BaseException] = []

    @server.tool()
    async def greet(ctx: Context) -> str:
        try:
            return str((await ask(ctx, "Who are you?", Name)).data)
        except errors.NotInstalled as exc:  # tool code can catch it by its own class
            asked.append(exc)
            raise

    caplog.set_level(logging.INFO)
    async with Client(server, mode=era, elicitation_callback=sdk_answer) as client:  # type: ignore[arg-type]
        with pytest.raises(MCPError) as info:
            await client.call_tool("greet", {})
    assert isinstance(asked[0], errors.NotInstalled)
    assert asked[0].what == "middleware"
    assert info.value.error.data == {"reason": "not_installed", "missing": "middleware"}
    assert INSTALL in info.value.error.message
    assert_one_warning_naming_install(caplog)


@pytest.mark.parametrize("era", ERAS)
async def test_a_fastmcp_server_without_install_answers_a_tool_error_naming_install(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = fastmcp.FastMCP("forgot-install-fastmcp")

    async def greet(ctx: fastmcp.Context) -> str:
        return str((await ask(ctx, "Who are you?", Name)).data)

    server.tool(greet, name="greet")
    caplog.set_level(logging.INFO)
    async with fastmcp.Client(server, mode=era, elicitation_handler=fastmcp_answer) as client:  # type: ignore[arg-type]
        result = await client.call_tool("greet", {}, raise_on_error=False)
    assert result.is_error
    assert INSTALL in result.content[0].text  # type: ignore[union-attr]
    assert_one_warning_naming_install(caplog)


def test_the_refusals_of_a_missing_install_name_the_call_to_make() -> None:
    for modern in (False, True):
        middleware = refusal_of(errors.NotInstalled("middleware"), modern=modern, method="tools/call")
        handoffs = refusal_of(errors.NotInstalled("handoffs"), modern=modern, method="tools/call")
        assert INSTALL in middleware.text
        assert "ElicitSettings(handoffs=" in handoffs.text

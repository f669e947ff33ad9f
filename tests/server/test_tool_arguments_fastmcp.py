"""On a FastMCP server with `install()`, a tool call whose arguments do not fit the tool is a tool
error naming each argument at fault (`ToolArgumentsError`), as on `MCPServer`, not pydantic's
report, to FastMCP's `Client` and the SDK's alike; a custom validator runs once."""

from __future__ import annotations

from typing import Annotated, Any

import fastmcp
import mcp_types as t
import pytest
from mcp.client import Client
from pydantic import AfterValidator

from mcp_elicit.errors import ArgumentProblem, FieldProblem
from mcp_elicit.server import install
from tests.server.test_tool_arguments import OWN_FAILURE, Counted, Filter, pydantic_says, said

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


CHECK = Counted()  # module level: FastMCP reads the annotations by name


def fast_server() -> fastmcp.FastMCP[Any]:
    server: fastmcp.FastMCP[Any] = fastmcp.FastMCP("arguments")

    @server.tool()
    async def query(
        sql: str, rows: Annotated[int, AfterValidator(CHECK)] = 10, where: Filter | None = None
    ) -> t.CallToolResult:
        text = OWN_FAILURE if sql == "refuse" else sql
        return t.CallToolResult(content=[t.TextContent(type="text", text=text)], is_error=sql == "refuse")

    install(server)
    return server


MISFITS = [
    ({}, (FieldProblem("sql", ArgumentProblem.MISSING),)),
    ({"sql": 5}, (FieldProblem("sql", ArgumentProblem.WRONG_TYPE, pydantic_says(str, 5)),)),
    (
        {"sql": "x", "where": {"limit": "many"}},
        (
            FieldProblem("where.column", ArgumentProblem.MISSING),
            FieldProblem("where.limit", ArgumentProblem.WRONG_TYPE, pydantic_says(int, "many")),
        ),
    ),
    (
        {"sql": "x", "rows": -1},
        (FieldProblem("rows", ArgumentProblem.INVALID, "Value error, must not be negative"),),
    ),
]


def texts(result: Any) -> list[str]:
    return [c.text for c in result.content if c.type == "text"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("arguments", "problems"), MISFITS)
async def test_fastmcps_client_gets_a_tool_error_naming_each_argument(
    era: str, arguments: dict[str, Any], problems: tuple[FieldProblem, ...]
) -> None:
    async with fastmcp.Client(fast_server(), mode=era) as client:  # type: ignore[arg-type]
        result = await client.call_tool("query", arguments, raise_on_error=False)
    assert result.is_error
    assert texts(result) == [said(problems)]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("arguments", "problems"), MISFITS)
async def test_the_sdks_client_gets_a_tool_error_naming_each_argument(
    era: str, arguments: dict[str, Any], problems: tuple[FieldProblem, ...]
) -> None:
    server = fast_server()
    async with Client(server._mcp_server, mode=era) as client:  # type: ignore[arg-type]
        result = await client.call_tool("query", arguments)
    assert result.is_error
    assert texts(result) == [said(problems)]


async def test_a_custom_validator_runs_once_on_a_misfit_call() -> None:
    async with fastmcp.Client(fast_server()) as client:
        before = CHECK.runs
        result = await client.call_tool("query", {"sql": "x", "rows": -1}, raise_on_error=False)
    assert result.is_error
    assert CHECK.runs - before == 1


@pytest.mark.parametrize("era", ERAS)
async def test_a_tools_own_error_with_arguments_that_fit_is_left_as_fastmcp_gives_it(era: str) -> None:
    async with fastmcp.Client(fast_server(), mode=era) as client:  # type: ignore[arg-type]
        result = await client.call_tool("query", {"sql": "refuse"}, raise_on_error=False)
        fine = await client.call_tool("query", {"sql": "SELECT 1"})
    assert result.is_error
    assert texts(result) == [OWN_FAILURE]
    assert not fine.is_error

"""The guarded data server's tools, given arguments that do not fit, answer with a tool error
naming the argument (the kit's `install` does it for every tool), in both eras."""

from __future__ import annotations

import pytest
from mcp.client import Client

from mcp_elicit.apps.data import build_data_server, open_engine
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.errors import ArgumentProblem, FieldProblem, ToolArgumentsError
from tests.apps.data.conftest import Target

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
@pytest.mark.parametrize(("tool", "argument"), [("query", "sql"), ("describe_table", "table")])
async def test_a_missing_argument_is_a_tool_error_naming_it(
    target: Target, era: str, tool: str, argument: str
) -> None:
    server = build_data_server(open_engine(target.engine, target.dsn), target.config)
    async with Client(server, mode=era) as client:
        result = await client.call_tool(tool, {})
    expected = ToolArgumentsError(tool, (FieldProblem(argument, ArgumentProblem.MISSING),))
    assert result.is_error
    assert [c.text for c in result.content if c.type == "text"] == [
        refusal_of(expected, modern=False, method="tools/call").text
    ]

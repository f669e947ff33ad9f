"""A tool call whose arguments do not fit the tool reaches the model as a tool error naming each
argument at fault (`ToolArgumentsError`), not the SDK's validator report, on every kit tool."""

from __future__ import annotations

from typing import Annotated, Any

import mcp_types as t
import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from pydantic import AfterValidator, BaseModel, TypeAdapter, ValidationError

from mcp_elicit.core.arguments import argument_problem
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.errors import ArgumentProblem, FieldProblem, ToolArgumentsError
from mcp_elicit.server import install

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
OWN_FAILURE = "the tool's own failure"


class Filter(BaseModel):
    column: str
    limit: int = 10


class Counted:
    """A custom validator that counts its runs and refuses a negative number."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, value: int) -> int:
        self.runs += 1
        if value < 0:
            raise ValueError("must not be negative")
        return value


CHECK = Counted()  # module level: the SDK reads the annotations by name


def kit_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("arguments")

    @server.tool()
    async def query(
        ctx: Context,
        sql: str,
        rows: Annotated[int, AfterValidator(CHECK)] = 10,
        where: Filter | None = None,
    ) -> t.CallToolResult:
        text = OWN_FAILURE if sql == "refuse" else sql
        return t.CallToolResult(content=[t.TextContent(type="text", text=text)], is_error=sql == "refuse")

    install(server)
    return server


def pydantic_says(kind: Any, value: Any) -> str:
    """pydantic's words for `value` not being a `kind`."""
    try:
        TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        return str(exc.errors()[0]["msg"])
    raise AssertionError(f"{value!r} is a {kind}")


def said(problems: tuple[FieldProblem, ...]) -> str:
    """The tool error text the refusal for these problems has."""
    return refusal_of(ToolArgumentsError("query", problems), modern=False, method="tools/call").text


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("arguments", "problems"),
    [
        ({}, (FieldProblem("sql", ArgumentProblem.MISSING),)),
        ({"sql": 5}, (FieldProblem("sql", ArgumentProblem.WRONG_TYPE, pydantic_says(str, 5)),)),
        (
            {"sql": "x", "where": {"limit": "many"}},
            (
                FieldProblem("where.column", ArgumentProblem.MISSING),
                FieldProblem("where.limit", ArgumentProblem.WRONG_TYPE, pydantic_says(int, "many")),
            ),
        ),
    ],
)
async def test_arguments_that_do_not_fit_are_a_tool_error_naming_each_argument(
    era: str, arguments: dict[str, Any], problems: tuple[FieldProblem, ...]
) -> None:
    async with Client(kit_server(), mode=era) as client:
        result = await client.call_tool("query", arguments)
    assert result.is_error
    assert [c.text for c in result.content if c.type == "text"] == [said(problems)]


@pytest.mark.parametrize("era", ERAS)
async def test_a_custom_validator_runs_once_on_a_misfit_call_and_its_words_are_kept(era: str) -> None:
    async with Client(kit_server(), mode=era) as client:
        before = CHECK.runs
        result = await client.call_tool("query", {"sql": "x", "rows": -1})
        runs = CHECK.runs - before
        before = CHECK.runs
        refused = await client.call_tool("query", {"sql": "refuse", "rows": 1})
        own = CHECK.runs - before
    problem = FieldProblem("rows", ArgumentProblem.INVALID, "Value error, must not be negative")
    assert [c.text for c in result.content if c.type == "text"] == [said((problem,))]
    assert (runs, own) == (1, 1)  # the tool's own error is not validated again either
    assert refused.is_error


@pytest.mark.parametrize("era", ERAS)
async def test_a_tools_own_error_with_arguments_that_fit_is_left_as_the_sdk_gives_it(era: str) -> None:
    async with Client(kit_server(), mode=era) as client:
        result = await client.call_tool("query", {"sql": "refuse"})
        fine = await client.call_tool("query", {"sql": "SELECT 1"})
    assert result.is_error
    assert [c.text for c in result.content if c.type == "text"] == [OWN_FAILURE]
    assert not fine.is_error


@pytest.mark.parametrize(
    ("error", "problem"),
    [
        ({"type": "missing", "loc": ("sql",), "msg": "Field required"}, FieldProblem("sql", "missing")),
        ({"type": "extra_forbidden", "loc": ("x",), "msg": "Extra"}, FieldProblem("x", "unexpected")),
        ({"type": "int_parsing", "loc": ("a", 0), "msg": "m"}, FieldProblem("a.0", "wrong_type", "m")),
        ({"type": "model_type", "loc": ("f",), "msg": "m"}, FieldProblem("f", "wrong_type", "m")),
        ({"type": "greater_than", "loc": ("n",), "msg": "m"}, FieldProblem("n", "invalid", "m")),
        ({"type": "value_error", "loc": (), "msg": "m"}, FieldProblem("", "invalid", "m")),
    ],
)
def test_each_validation_error_becomes_one_argument_problem(
    error: dict[str, Any], problem: FieldProblem
) -> None:
    assert argument_problem(error) == problem

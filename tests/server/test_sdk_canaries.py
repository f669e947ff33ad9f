"""Canaries for every private SDK (and FastMCP) hook the server side relies on.

Each test names the hook it guards; when one fails after an upgrade, the module docstrings of
`server/sdk.py` and `server/sdk_fastmcp.py` say where the hook is used, and `pyproject.toml` pins
`mcp` to the minor versions these passed on.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import fastmcp
import pytest
from fastmcp import Context as FastContext
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer

from mcp_elicit.server import sdk

pytestmark = pytest.mark.anyio


def test_hook_mcpserver_keeps_its_low_level_server_with_a_replaceable_lifespan() -> None:
    server = MCPServer("canary")
    low = sdk.lowlevel_of(server)
    assert low is server._lowlevel_server
    assert callable(low.lifespan)
    assert isinstance(low.middleware, list)


def test_hook_fastmcp_keeps_its_low_level_server_at_mcp_server() -> None:
    server = fastmcp.FastMCP("canary")
    low = sdk.lowlevel_of(server)
    assert low is server._mcp_server
    assert callable(low.lifespan)
    assert isinstance(low.middleware, list)


def test_hook_the_sdks_request_context_has_the_fields_the_kit_reads() -> None:
    names = {f.name for f in dataclasses.fields(ServerRequestContext)}
    assert {"session", "protocol_version", "method", "params", "request_id", "request"} <= names


async def test_hook_call_of_finds_the_sdk_context_behind_an_mcpserver_context() -> None:
    server = MCPServer("canary")
    seen: list[Any] = []

    @server.tool()
    async def probe(ctx: Context) -> str:
        seen.append(sdk.call_of(ctx))
        return "ok"

    async with Client(server) as client:
        await client.call_tool("probe", {})
    assert isinstance(seen[0], ServerRequestContext)


async def test_hook_call_of_finds_the_sdk_context_behind_a_fastmcp_context() -> None:
    """FastMCP's request wrapper keeps the SDK's context as `_srctx`."""
    server = fastmcp.FastMCP("canary")
    seen: list[Any] = []

    @server.tool
    async def probe(ctx: FastContext) -> str:
        seen.append(sdk.call_of(ctx))
        return "ok"

    async with fastmcp.Client(server) as client:
        await client.call_tool("probe", {})
    assert isinstance(seen[0], ServerRequestContext)


def test_outside_a_request_there_is_no_call() -> None:
    assert sdk.call_of(object()) is None
    assert sdk.protocol_version(object()) is None
    assert sdk.declared_capabilities(object()) == frozenset()


async def test_hook_mcpserver_answers_a_tools_call_through_its_call_tool_raising_from_pydantics_error() -> (
    None
):
    """`server/tool_arguments.py` wraps `call_tool` on the instance to keep pydantic's error."""
    from pydantic import ValidationError

    server = MCPServer("canary")

    @server.tool()
    def probe(sql: str) -> str:
        return sql

    raised: list[BaseException] = []
    call_tool = server.call_tool

    async def watching(name: str, arguments: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return await call_tool(name, arguments, *args, **kwargs)
        except Exception as exc:
            raised.append(exc)
            raise

    server.call_tool = watching  # type: ignore[method-assign]
    async with Client(server) as client:
        await client.call_tool("probe", {})
    [exc] = raised
    assert sdk.rejected_arguments(exc)
    assert isinstance(exc.__cause__, ValidationError)


async def test_hook_fastmcp_raises_its_validation_error_from_pydantics_for_a_misfit_call() -> None:
    """`sdk_fastmcp.misfit_arguments` reads pydantic's errors off FastMCP's ValidationError."""
    from fastmcp.exceptions import ValidationError as FastValidationError
    from fastmcp.server.middleware import Middleware
    from pydantic import ValidationError

    raised: list[BaseException] = []

    class Watch(Middleware):
        async def on_call_tool(self, context: Any, call_next: Any) -> Any:
            try:
                return await call_next(context)
            except Exception as exc:
                raised.append(exc)
                raise

    server = fastmcp.FastMCP("canary", middleware=[Watch()])

    @server.tool
    async def probe(n: int) -> str:
        return "ok"

    async with fastmcp.Client(server) as client:
        await client.call_tool("probe", {"n": "many"}, raise_on_error=False)
    [exc] = raised
    assert isinstance(exc, FastValidationError)
    assert isinstance(exc.__cause__, ValidationError)
    assert exc.__cause__.errors()[0]["loc"] == ("n",)

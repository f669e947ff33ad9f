"""The conformance client (`mcp-elicit conformance-client URL`) against a server shaped like the
suite's `elicitation-sep1034-client-defaults` mock: every defaulted field comes back, typed (F6).

The real suite runs in `.ci/conformance.sh reference`; this keeps the same promise in `make test`.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import Context, MCPServer

from mcp_elicit.cli.conformance import run
from tests.e2e.servers import serving_http

pytestmark = pytest.mark.anyio


# The mock's schema, word for word: nothing is required, every field has a default.
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


def build_mock(received: list[Any]) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("elicitation-defaults-test-server")

    @server.tool()
    async def test_client_elicitation_defaults(ctx: Context) -> str:
        # Like the suite's mock: a push with no related request, so it travels on the GET stream.
        result = await ctx.request_context.session.elicit_form(
            "Test client default value handling - please accept with defaults", SCHEMA
        )
        received.append(result.content)  # the raw content, as the client sent it
        return "Elicitation completed" if result.action == "accept" else "Elicitation was not accepted"

    @server.tool()
    async def needs_arguments(city: str) -> str:
        raise AssertionError("the conformance client calls only tools without required arguments")

    return server


async def test_the_conformance_client_accepts_every_default_and_exits_zero() -> None:
    received: list[Any] = []
    with anyio.fail_after(60):
        async with serving_http(build_mock(received)) as url:
            code = await run(url, "2025-11-25")
    assert code == 0
    assert received == [{"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True}]
    assert [type(v) for v in received[0].values()] == [str, int, float, str, bool]

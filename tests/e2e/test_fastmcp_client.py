"""FastMCP's client, an independent implementation, drives the reference server in both eras."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import fastmcp
import pytest

from mcp_elicit.reference import build_reference_server
from tests.e2e.servers import serving_http

pytestmark = pytest.mark.anyio


class Answers:
    """A FastMCP elicitation handler that returns scripted content and records each message."""

    def __init__(self, *contents: dict[str, Any]) -> None:
        self.contents = list(contents)
        self.messages: list[str] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
        self.messages.append(message)
        return self.contents.pop(0)


@asynccontextmanager
async def fastmcp_client(transport: str, era: str, handler: Answers) -> AsyncIterator[fastmcp.Client[Any]]:
    if transport == "memory":
        async with fastmcp.Client(build_reference_server(), mode=era, elicitation_handler=handler) as c:
            yield c
    else:
        async with (
            serving_http(build_reference_server()) as url,
            fastmcp.Client(url, mode=era, elicitation_handler=handler) as c,
        ):
            yield c


@pytest.mark.parametrize("transport", ["memory", "http"])
@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_fastmcp_client_completes_a_deploy_with_two_questions(transport: str, era: str) -> None:
    handler = Answers({"environment": "production", "region": "ap-south"}, {"confirm": True})
    async with fastmcp_client(transport, era, handler) as c:
        result = await c.call_tool("deploy", {"service": "search"})
    assert result.content[0].text == "Deployed search to production in ap-south with 2 replicas."  # type: ignore[union-attr]
    assert len(handler.messages) == 2

"""The reference server, end to end with the official SDK client in both eras over every transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp.client import Client

from mcp_elicit.reference import build_reference_server
from tests.e2e.servers import reference_over_stdio, serving_http
from tests.support import ScriptedCallback, text_of

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
TRANSPORTS = ["memory", "stdio", "http"]


@asynccontextmanager
async def connect(transport: str, era: str, callback: Any) -> AsyncIterator[Client]:
    if transport == "memory":
        async with Client(build_reference_server(), mode=era, elicitation_callback=callback) as c:
            yield c
    elif transport == "stdio":
        async with Client(reference_over_stdio(), mode=era, elicitation_callback=callback) as c:
            yield c
    else:
        async with (
            serving_http(build_reference_server()) as url,
            Client(url, mode=era, elicitation_callback=callback) as c,
        ):
            yield c


DEPLOY_ANSWERS = [
    {"action": "accept", "content": {"environment": "production", "region": "us-east", "replicas": 3}},
    {"action": "accept", "content": {"confirm": True}},
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_deploy_asks_for_a_target_then_confirms_production(transport: str, era: str) -> None:
    cb = ScriptedCallback(list(DEPLOY_ANSWERS))
    async with connect(transport, era, cb) as c:
        result = await c.call_tool("deploy", {"service": "checkout"})
    assert text_of(result) == "Deployed checkout to production in us-east with 3 replicas."
    first = cb.seen[0]["requestedSchema"]
    assert first["properties"]["region"]["oneOf"][0] == {"const": "eu-west", "title": "Europe (Ireland)"}
    assert first["required"] == ["environment"]
    assert cb.seen[1]["requestedSchema"]["properties"]["confirm"]["type"] == "boolean"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("era", ERAS)
async def test_signup_walks_three_steps_and_stops_where_the_person_declines(transport: str, era: str) -> None:
    cb = ScriptedCallback(
        [
            {"action": "accept", "content": {"username": "ada", "email": "ada@example.org"}},
            {"action": "accept", "content": {"newsletter": True, "topics": ["security", "releases"]}},
            {"action": "decline"},
        ]
    )
    async with connect(transport, era, cb) as c:
        result = await c.call_tool("signup", {})
    assert text_of(result) == "Signup stopped at step 3."
    assert [s["message"].split(":")[0] for s in cb.seen] == ["Step 1 of 3", "Step 2 of 3", "Step 3 of 3"]

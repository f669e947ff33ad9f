"""The matrix's Inspector cells: `mcpdo` (@modelcontextprotocol/inspector 2.12.0, defaults) downstream
of `mcp-elicit gateway`, over stdio (mcpdo's daemon starts the gateway) and over HTTP (one gateway
for the module), in both of its eras (`--era modern` is how a person picks 2026-07-28).

mcpdo parks a call that asks and prints `elicitationPending`; the person (the test) answers a form
with `elicitation/respond ID JSON` and a page with `elicitation/respond ID --done`. mcpdo prints
no completion notification, so "completion" here is the call's result arriving after `--done`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_url_mode_inspector import Mcpdo
from tests.gateway.matrix import NEEDS_TS, gateway
from tests.peers.support import open_page
from tests.peers.test_mcpdo import ERAS, Connection, text

pytestmark = [pytest.mark.anyio, NEEDS_TS]

# (transport, era): every pair once, forms in two and pages in the other two (each mcpdo command
# is a Node process of its own, so all of it in all four would take minutes here).
FORM_CELLS = [("stdio", "2026-07-28"), ("http", "2025-11-25")]
PAGE_CELLS = [("stdio", "2025-11-25"), ("http", "2026-07-28")]


@pytest.fixture
async def inspector(tmp_path: Path) -> AsyncIterator[Mcpdo]:
    async with Mcpdo(tmp_path / "home") as tool:  # a private daemon, HOME and catalog
        yield tool


@asynccontextmanager
async def through_gateway(
    mcpdo: Mcpdo, transport: str, era: str, config: Path, url: str
) -> AsyncIterator[Connection]:
    target = [url] if transport == "http" else ["--", *gateway(config)]
    name = (await mcpdo("connect", *ERAS[era], *target))["name"]
    try:
        yield Connection(mcpdo, name)
    finally:
        await mcpdo.stop()  # the daemon first: it holds the stdio gateway (and its upstreams)


async def answer_form(on: Connection, pending: dict[str, Any], content: dict[str, Any]) -> Any:
    assert pending["mode"] == "form"
    return await on("elicitation/respond", pending["elicitationId"], json.dumps(content))


@pytest.mark.parametrize(("transport", "era"), FORM_CELLS)
async def test_mcpdo_answers_forms_from_every_upstream_through_the_gateway(
    inspector: Mcpdo, transport: str, era: str, config: Path, gateway_url: str
) -> None:
    async with through_gateway(inspector, transport, era, config, gateway_url) as on:
        greet = await answer_form(on, await on.pending("tools/call", "greet"), {"name": "ann"})
        hello = await answer_form(on, await on.pending("tools/call", "hello"), {"name": "bo"})
        book = await answer_form(on, await on.pending("tools/call", "ts__book"), {"guests": 3})
        first = await on.pending("tools/call", "deploy", "service:=search")
        second = (await answer_form(on, first, {"environment": "production", "region": "us-east"}))[
            "elicitationPending"
        ]
        deploy = await answer_form(on, second, {"confirm": True})
    assert [text(r) for r in (greet, hello, book, deploy)] == [
        "hello ann",
        "hello bo",
        "Booked for 3.",
        "Deployed search to production in us-east with 2 replicas.",
    ]


@pytest.mark.parametrize(("transport", "era"), PAGE_CELLS)
async def test_mcpdo_finishes_pages_and_a_minus_32042_through_the_gateway(
    inspector: Mcpdo, transport: str, era: str, config: Path, gateway_url: str
) -> None:
    """URL requests from the raw-SDK, TypeScript and reference servers (the last two complete
    upstream when the person saves the loopback page) and the reference server's -32042."""
    results = []
    async with through_gateway(inspector, transport, era, config, gateway_url) as on:
        # service_status first: once connect_service connected the API, it needs no page.
        for tool in ("signin", "ts__ts_signin", "service_status", "connect_service"):
            pending = await on.pending("tools/call", tool)
            assert pending["mode"] == "url"
            if pending["url"].startswith("http://127.0.0.1:"):
                await open_page(pending["url"])  # the person finishes the reference server's page
            results.append(await on("elicitation/respond", pending["elicitationId"], "--done"))
    assert [text(r) for r in results] == [
        "signin accept",
        "ts signin accept",
        "Example API: connected, 3 projects.",
        "Connected to Example API.",
    ]

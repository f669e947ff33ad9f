"""The client kit with DEFAULT settings against servers people run: SDK pushes, `Resolve`, FastMCP and
this kit's `ask`, over stdio and streamable HTTP. "auto" must pick an era in which each one can ask,
without the person choosing and without running a tool twice."""

from __future__ import annotations

import sys

import anyio
import pytest

from mcp_elicit.client import ElicitClient
from mcp_elicit.client.connection import AUTO_LEGACY_REASON
from mcp_elicit.ui.scripted import ScriptedUI
from tests.e2e.servers import serving_http
from tests.peers.py_servers import SERVERS, Http
from tests.support import text_of

pytestmark = pytest.mark.anyio


def stdio_spec(name: str) -> str:
    return f"{sys.executable} -m tests.peers.py_servers {name}"


async def book(spec: str) -> tuple[str, ElicitClient]:
    ui = ScriptedUI([{"content": {"guests": 3}}])
    with anyio.fail_after(60):
        async with ElicitClient(spec, ui=ui) as client:
            result = await client.call_tool("book")
    return text_of(result), client


@pytest.mark.parametrize("name", SERVERS)
async def test_a_default_client_answers_a_peer_over_stdio(name: str) -> None:
    text, client = await book(stdio_spec(name))
    assert text == "Booked for 3."
    assert [o.action for o in client.outcomes] == ["accept"]
    assert client.era_reason == AUTO_LEGACY_REASON


@pytest.mark.parametrize("name", SERVERS)
async def test_a_default_client_answers_a_peer_over_http(name: str) -> None:
    async with serving_http(Http(name)) as url:
        text, client = await book(url)
    assert text == "Booked for 3."
    assert [o.action for o in client.outcomes] == ["accept"]
    assert client.era_reason == AUTO_LEGACY_REASON

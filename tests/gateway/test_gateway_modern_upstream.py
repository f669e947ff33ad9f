"""An upstream that speaks ONLY 2026-07-28 (`modern` in tests/peers/py_servers.py: the SDK's MCPServer
refusing the `initialize` handshake with -32022) behind the gateway. The gateway's connection to it
falls back to 2026-07-28 (that upstream alone), and its input-required rounds reach the downstream
client: pushed to a 2025-11-25 client, as rounds to a 2026-07-28 one. Form and URL hand-off; the
upstream's tool body runs once."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
import pytest
from mcp.client import Client

from tests.e2e.servers import serving_http
from tests.gateway.support import PEERS, Answers, http_client, http_gateway, stdio_gateway
from tests.peers.py_servers import Http
from tests.server.handoff_support import Browser

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
MODERN_PEER = str(Path(__file__).resolve().parents[1] / "peers" / "py_servers.py")
BOUND_SECONDS = 60.0


def write_config(path: Path) -> Path:
    """The 2026-only upstream beside one that pushes on 2025-11-25: each gets its own era."""
    servers = {
        "modern": {"command": sys.executable, "args": [MODERN_PEER, "modern"]},
        "sdk": {"command": sys.executable, "args": [PEERS, "sdk"]},
    }
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def text(result: Any) -> str:
    return str(result.content[-1].text)


@pytest.mark.parametrize("era", ERAS)
async def test_a_2026_only_upstreams_form_reaches_the_client_in_either_era(tmp_path: Path, era: str) -> None:
    messages: list[str] = []

    async def answers(ctx: Any, params: Any) -> t.ElicitResult:
        messages.append(params.message)
        content = {"guests": 3} if params.message == "How many guests?" else {"name": "ann"}
        return t.ElicitResult(action="accept", content=content)

    gateway = stdio_gateway(write_config(tmp_path / "f.json"))
    with anyio.fail_after(BOUND_SECONDS):
        async with Client(gateway, mode=era, elicitation_callback=answers) as c:
            booked = await c.call_tool("book", {})
            greeted = await c.call_tool("greet", {})  # the upstream that pushes still serves
            runs = json.loads(text(await c.call_tool("tool_runs", {})))
    assert text(booked) == "Booked for 3."
    assert text(greeted) == "hello ann"
    assert messages == ["How many guests?", "Who are you?"]
    assert runs == {"tools/call": {"book": 2, "tool_runs": 1}, "book_runs": 1}


@pytest.mark.parametrize("era", ERAS)
async def test_a_2026_only_upstreams_url_handoff_completes_through_the_gateway(
    tmp_path: Path, era: str
) -> None:
    urls: list[str] = []
    finished: list[int] = []

    async with anyio.create_task_group() as tg:

        async def person_finishes(url: str) -> None:
            page = await Browser().enter_key(url)
            finished.append(page.status)

        async def callback(ctx: Any, params: Any) -> t.ElicitResult:
            urls.append(params.url)
            if len(urls) == 1:  # the person accepts, then fills in the page
                tg.start_soon(person_finishes, params.url)
            return t.ElicitResult(action="accept")

        gateway = stdio_gateway(write_config(tmp_path / "f.json"))
        with anyio.fail_after(BOUND_SECONDS):
            async with Client(gateway, mode=era, elicitation_callback=callback) as c:
                result = await c.call_tool("connect_service", {})
    assert text(result) == "Connected to Example API."
    assert finished == [200]
    assert urls[0].startswith("http://127.0.0.1:")  # the upstream's own loopback page, checked
    assert set(urls) == {urls[0]}


@pytest.mark.parametrize("era", ERAS)
async def test_a_2026_only_http_upstream_with_headers_serves_an_http_gateway(era: str) -> None:
    answers = Answers({"guests": 2})
    async with serving_http(Http("modern")) as upstream:
        servers = {"modern": {"url": upstream, "headers": {"X-Team": "blue"}}}
        config = json.dumps({"mcpServers": servers, "users": {"token-a": "alice"}})
        with anyio.fail_after(BOUND_SECONDS):
            async with http_gateway(config) as (_, url), http_client(url, "token-a", era, answers) as c:
                booked = await c.call_tool("book", {})
    assert text(booked) == "Booked for 2."
    assert answers.messages == ["How many guests?"]

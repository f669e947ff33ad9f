"""An HTTP upstream that refuses requests without the right `X-Api-Key` header: the gateway sends the
`headers` of the mcpServers file, so calls (and their questions) work; with a wrong key the downstream
gets an error naming that upstream, and the other upstreams keep working. Real parts: the reference
server over streamable HTTP on 127.0.0.1 behind a header check, the raw-SDK peer over stdio, the
gateway as a `mcp-elicit gateway` subprocess, the SDK's `Client` downstream."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from mcp_elicit.reference import build_reference_server
from tests.e2e.servers import serving_app
from tests.gateway.support import PEERS, Answers, stdio_gateway

pytestmark = pytest.mark.anyio

API_KEY = "right-key-7f3a"
CALL_BOUND_SECONDS = 60.0
DEPLOY = {"environment": "staging", "region": "eu-west", "replicas": 2}


class HeaderCheck:
    """ASGI: every HTTP request needs `X-Api-Key: API_KEY`, else 401 before the MCP layer."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.refused = 0
        self.key = API_KEY  # what it accepts now (a test rotates it)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"x-api-key") != self.key.encode():
            self.refused += 1
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing or wrong X-Api-Key"})
            return
        await self.app(scope, receive, send)


@asynccontextmanager
async def checked_upstream() -> AsyncIterator[tuple[str, HeaderCheck]]:
    app = HeaderCheck(build_reference_server().streamable_http_app())
    async with serving_app(app) as origin:
        yield f"{origin}/mcp", app


def config(tmp_path: Path, url: str, key: str) -> Path:
    servers = {
        "checked": {"url": url, "headers": {"X-Api-Key": key}},
        "sdk": {"command": sys.executable, "args": [PEERS, "sdk"]},
    }
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


async def test_the_configured_header_reaches_a_checking_upstream_and_its_questions_are_relayed(
    tmp_path: Path,
) -> None:
    async with checked_upstream() as (url, check):
        gateway = stdio_gateway(config(tmp_path, url, API_KEY))
        async with Client(gateway, mode="legacy", elicitation_callback=Answers(DEPLOY)) as client:
            with anyio.fail_after(CALL_BOUND_SECONDS):
                result = await client.call_tool("deploy", {"service": "web"})
    assert result.is_error is not True
    assert result.content[0].text == "Deployed web to staging in eu-west with 2 replicas."  # type: ignore[union-attr]
    assert check.refused == 0


async def test_a_wrong_header_gives_an_error_naming_the_upstream_and_the_others_keep_working(
    tmp_path: Path,
) -> None:
    async with checked_upstream() as (url, check):
        gateway = stdio_gateway(config(tmp_path, url, "wrong-key"))
        async with Client(gateway, mode="legacy", elicitation_callback=Answers()) as client:
            with anyio.fail_after(CALL_BOUND_SECONDS):
                names = [tool.name for tool in (await client.list_tools()).tools]
                refused = await client.call_tool("deploy", {"service": "web"})
                other = await client.call_tool("greet", {})
    assert "greet" in names
    assert "deploy" not in names
    assert refused.is_error is True
    text = refused.content[0].text  # type: ignore[union-attr]
    assert "'checked'" in text
    assert "401" in text
    assert other.content[0].text == "hello ann"  # type: ignore[union-attr]
    assert check.refused >= 1


async def test_an_upstream_that_starts_refusing_mid_session_is_named_in_the_result_and_the_others_serve(
    tmp_path: Path,
) -> None:
    async with checked_upstream() as (url, check):
        gateway = stdio_gateway(config(tmp_path, url, API_KEY))
        async with Client(gateway, mode="legacy", elicitation_callback=Answers()) as client:
            with anyio.fail_after(CALL_BOUND_SECONDS):
                await client.list_tools()
                check.key = "rotated-key"  # the upstream's operator rotates the key
                refused = await client.call_tool("deploy", {"service": "web"})
                other = await client.call_tool("greet", {})
    assert refused.is_error is True
    text = refused.content[0].text  # type: ignore[union-attr]
    assert "'checked'" in text
    assert "401" in text
    assert other.content[0].text == "hello ann"  # type: ignore[union-attr]

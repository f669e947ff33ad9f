"""The client kit with default settings against a TypeScript SDK server (npm @modelcontextprotocol/sdk),
over stdio and streamable HTTP: its `elicitInput` pushes, and "auto" must let it ask.

Needs `bash .ci/ts-sdk.sh` (installs the package into .cache/ts-sdk); skipped with that command
when absent."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_elicit.client import ElicitClient
from mcp_elicit.client.connection import AUTO_LEGACY_REASON
from mcp_elicit.client.sdk_transport import StdioServerParameters
from mcp_elicit.ui.scripted import ScriptedUI
from tests.support import text_of

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / ".cache" / "ts-sdk" / "node_modules"
SERVER = ROOT / "tests" / "peers" / "ts_server.mjs"
BOUND_SECONDS = 60.0


def node() -> str:
    found = sorted(ROOT.glob(".cache/conformance/node-22*/node_modules/node-linux-*/bin/node"))
    return str(found[0]) if found else (shutil.which("node") or "")


pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not (MODULES / "@modelcontextprotocol" / "sdk").is_dir() or not node(),
        reason="the TypeScript SDK is not installed: run `bash .ci/ts-sdk.sh`",
    ),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def http_url() -> Iterator[str]:
    env = {**os.environ, "TS_PEER_MODULES": str(MODULES)}
    process = subprocess.Popen([node(), str(SERVER), "http"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the server prints its URL once listening
        assert line.startswith("listening "), line
        yield line.split()[1]
    finally:
        process.terminate()
        process.wait(timeout=BOUND_SECONDS)


async def book(server: object) -> str:
    ui = ScriptedUI([{"content": {"guests": 5}}])
    with anyio.fail_after(BOUND_SECONDS):
        async with ElicitClient(server, ui=ui) as client:
            result = await client.call_tool("book")
    assert [o.action for o in client.outcomes] == ["accept"]
    assert client.era_reason == AUTO_LEGACY_REASON
    return text_of(result)


async def test_a_default_client_answers_a_typescript_server_over_stdio() -> None:
    params = StdioServerParameters(command=node(), args=[str(SERVER)], env={"TS_PEER_MODULES": str(MODULES)})
    assert await book(params) == "Booked for 5."


async def test_a_default_client_answers_a_typescript_server_over_http(http_url: str) -> None:
    assert await book(http_url) == "Booked for 5."

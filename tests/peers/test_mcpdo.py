"""The MCP Inspector's `mcpdo` (pinned in .ci/inspector.sh) with its default settings: era legacy
(2025-11-25), both elicitation modes declared; `--era modern` is how a person picks 2026-07-28.

tests/e2e/test_url_mode_inspector.py has the HTTP hand-off cells (both eras, -32042); these add the
forms, stdio, a 2026-07-28 page the person finishes seconds after `--done`, and the refusals
(`--elicit off`). mcpdo parks a call that asks and prints `elicitationPending`; the person (the
test) answers with `elicitation/respond`.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.test_url_mode_inspector import Mcpdo
from tests.peers.support import PERSON_SECONDS, WAIT_BOUND_SECONDS, Person, reference

pytestmark = pytest.mark.anyio

ERAS = {"2025-11-25": [], "2026-07-28": ["--era", "modern"]}  # [] is mcpdo's default (legacy)
STDIO = [sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "stdio"]
NEEDS_FORMS = "This tool needs the client's elicitation.form capability, which this client did not declare."


@pytest.fixture
async def tool(tmp_path: Path) -> AsyncIterator[Mcpdo]:
    mcpdo = Mcpdo(tmp_path / "home")
    await mcpdo.start()
    try:
        yield mcpdo
    finally:
        await mcpdo.stop()


class Connection:
    """mcpdo commands on one named connection."""

    def __init__(self, mcpdo: Mcpdo, name: str) -> None:
        self.mcpdo, self.name = mcpdo, name

    async def __call__(self, *args: str) -> Any:
        return await self.mcpdo("--connection", self.name, *args)

    async def pending(self, *args: str) -> dict[str, Any]:
        answer: dict[str, Any] = (await self(*args))["elicitationPending"]
        return answer

    async def failing(self, *args: str) -> tuple[int, str, str]:
        return await self.mcpdo._run("--format", "json", "--connection", self.name, *args)


@asynccontextmanager
async def connected(mcpdo: Mcpdo, transport: str, era: str, *options: str) -> AsyncIterator[Connection]:
    """mcpdo connected to the reference server. The daemon stops while the server still runs (see
    tests/e2e/test_url_mode_inspector.py)."""
    async with reference(transport) as ref:
        target = [ref.url] if ref.url is not None else ["--", *STDIO]
        name = (await mcpdo("connect", *ERAS[era], *options, *target))["name"]
        try:
            yield Connection(mcpdo, name)
        finally:
            await mcpdo.stop()


def text(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result["content"])


@pytest.mark.parametrize(("transport", "era"), [("stdio", "2025-11-25"), ("http", "2026-07-28")])
async def test_mcpdo_answers_the_deploy_forms(tool: Mcpdo, transport: str, era: str) -> None:
    async with connected(tool, transport, era) as on:
        first = await on.pending("tools/call", "deploy", "service:=search")
        assert first["mode"] == "form"
        answer = json.dumps({"environment": "production", "region": "us-east"})
        second = await on.pending("elicitation/respond", first["elicitationId"], answer)
        assert second["requestedSchema"]["properties"]["confirm"]["type"] == "boolean"
        result = await on("elicitation/respond", second["elicitationId"], "confirm:=true")
    assert text(result) == "Deployed search to production in us-east with 2 replicas."


@pytest.mark.parametrize("era", list(ERAS))
async def test_mcpdo_over_stdio_finishes_a_hand_off_on_a_loopback_page(tool: Mcpdo, era: str) -> None:
    person = Person()
    async with connected(tool, "stdio", era) as on:
        pending = await on.pending("tools/call", "connect_service")
        assert pending["url"].startswith("http://127.0.0.1:")
        person.accept(pending["url"])
        await person.finish_page(0.0)
        result = await on("elicitation/respond", pending["elicitationId"], "--done")
    assert text(result) == "Connected to Example API."


async def test_mcpdo_over_stdio_retries_after_minus_32042_once_the_page_is_done(tool: Mcpdo) -> None:
    async with connected(tool, "stdio", "2025-11-25") as on:
        pending = await on.pending("tools/call", "service_status")
        person = Person()
        person.accept(pending["url"])
        await person.finish_page(0.0)
        result = await on("elicitation/respond", pending["elicitationId"], "--done")
    assert text(result) == "Example API: connected, 3 projects."


async def test_mcpdo_on_2026_says_done_early_and_the_held_retry_waits_for_the_person(tool: Mcpdo) -> None:
    """`--done` before the page is finished: the server holds the retry until the person saves."""
    person = Person()
    async with connected(tool, "http", "2026-07-28") as on:
        pending = await on.pending("tools/call", "connect_service")
        person.accept(pending["url"])
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(person.finish_page, PERSON_SECONDS)
            with anyio.fail_after(WAIT_BOUND_SECONDS):
                result = await on("elicitation/respond", pending["elicitationId"], "--done")
        elapsed = time.monotonic() - started
    assert "elicitationPending" not in result  # one held retry, not the URL again
    assert text(result) == "Connected to Example API."
    assert elapsed >= PERSON_SECONDS
    print(f"mcpdo http 2026-07-28: --done answered after {elapsed:.2f} s")


@pytest.mark.parametrize("era", list(ERAS))
async def test_mcpdo_without_elicitation_reads_the_refusal_naming_it(tool: Mcpdo, era: str) -> None:
    async with connected(tool, "stdio", era, "--elicit", "off") as on:
        code, out, err = await on.failing("tools/call", "deploy", "service:=x")
    assert code != 0
    if era == "2025-11-25":  # a tool error: mcpdo prints the result, exits non-zero
        result = json.loads(out)
        assert result["isError"] is True
        assert text(result) == NEEDS_FORMS
    else:  # -32021: mcpdo prints the error's message only, without its code and data
        last = err.strip().splitlines()[-1]
        assert json.loads(last)["error"] == {"code": "error", "message": NEEDS_FORMS}

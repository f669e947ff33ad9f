"""Progress and cancellation through the gateway: an upstream's `notifications/progress` reaches the
downstream call under the downstream's own token, in order; a downstream `notifications/cancelled`
reaches the upstream tool. Real peers: the raw-SDK server over stdio upstream, the gateway as a
`mcp-elicit gateway` subprocess, the SDK's `Client` downstream."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client

from tests.gateway.replicas import gateway_process, started
from tests.gateway.support import PEERS, Answers, http_client, stdio_gateway

pytestmark = pytest.mark.anyio

CALL_BOUND_SECONDS = 60.0


def sdk_only(tmp_path: Path) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"sdk": {"command": sys.executable, "args": [PEERS, "sdk"]}}}))
    return path


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_an_upstreams_progress_reaches_the_downstream_callback_in_order_in_both_eras(
    tmp_path: Path, era: str
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total, message))

    async with Client(stdio_gateway(sdk_only(tmp_path)), mode=era) as client:
        with anyio.fail_after(CALL_BOUND_SECONDS):
            result = await client.call_tool("work", {}, progress_callback=progress)
    assert result.content[0].text == "worked"  # type: ignore[union-attr]
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_downstream_cancel_reaches_the_upstream_tool_and_the_gateway_logs_one_line(
    tmp_path: Path, era: str
) -> None:
    running = anyio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        if message == "started":
            running.set()

    with gateway_process(sdk_only(tmp_path)) as gateway:
        url = await started(gateway)
        async with http_client(url, None, era, Answers()) as client:

            async def call_slow() -> Any:
                return await client.call_tool("slow", {}, progress_callback=progress)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call_slow)
                with anyio.fail_after(CALL_BOUND_SECONDS):
                    await running.wait()
                tg.cancel_scope.cancel()  # the SDK client sends notifications/cancelled
            with anyio.fail_after(CALL_BOUND_SECONDS):
                seen = await client.call_tool("was_cancelled", {})
        assert seen.content[0].text == "cancelled"  # type: ignore[union-attr]
        lines = await gateway.wait_for_line("call slow on sdk")
    assert len(lines) == 1
    assert "cancelled" in lines[0]
    assert "Traceback" not in gateway.log()

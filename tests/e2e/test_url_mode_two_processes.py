"""Two reference-server processes share their hand-off state through the machine's real Redis: the
MCP session lives on process A, the browser finishes the page on process B, and the tool waiting on A
continues, in both eras (issue 4: "tested with two server processes").
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from mcp_elicit.server import KeyRing
from tests.server.handoff_support import Browser, redis_client, redis_url

pytestmark = [pytest.mark.anyio, pytest.mark.redis]
STARTUP_BOUND_SECONDS = 30.0
CALL_BOUND_SECONDS = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def reference_process(env: dict[str, str]) -> Iterator[str]:
    """`mcp-elicit serve-reference --transport http` on a free loopback port; yields its origin."""
    port = free_port()
    argv = [sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(argv, env={**os.environ, **env}, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        with anyio.from_thread.start_blocking_portal() as portal:
            portal.call(_wait_for_start, proc.stderr)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def _wait_for_start(stderr: Any) -> None:
    with anyio.fail_after(STARTUP_BOUND_SECONDS):
        while True:
            line = await anyio.to_thread.run_sync(stderr.readline)
            if not line:
                raise RuntimeError("the server exited before it started")
            if "Uvicorn running" in line or "Application startup complete" in line:
                return


@asynccontextmanager
async def two_replicas() -> AsyncIterator[tuple[str, str]]:
    redis_url()  # skips with a reason when no Redis answers
    async with redis_client() as (_, prefix):
        env = {
            "MCP_ELICIT_REDIS_URL": redis_url(),
            "MCP_ELICIT_REDIS_PREFIX": prefix,
            "MCP_ELICIT_HANDOFF_SECRET": secrets.token_hex(32),
            "MCP_ELICIT_VAULT_KEYS": KeyRing.new_key_text("k1"),
        }
        with reference_process(env) as a, reference_process(env) as b:
            yield a, b


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_page_finished_on_process_b_completes_the_tool_waiting_on_process_a(era: str) -> None:
    opened: list[str] = []
    async with two_replicas() as (a, b):

        async def finish_on_b(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
            assert isinstance(params, t.ElicitRequestURLParams)
            assert params.url.startswith(a)
            url_on_b = re.sub(r"^http://127\.0\.0\.1:\d+", b, params.url)
            browser = Browser()
            try:
                page = await browser.enter_key(url_on_b)
            finally:
                await browser.close()
            assert page.status == 200
            opened.append(url_on_b)
            return t.ElicitResult(action="accept")

        async with Client(f"{a}/mcp", mode=era, elicitation_callback=finish_on_b) as client:
            with anyio.fail_after(CALL_BOUND_SECONDS):
                result = await client.call_tool("connect_service", {})
    assert result.content[0].text == "Connected to Example API."  # type: ignore[union-attr]
    assert len(opened) == 1
    assert opened[0].startswith(b)


async def test_a_2026_call_started_on_process_a_continues_on_process_b_and_its_state_is_used_once() -> None:
    """Issue 10: requestState sealed on A opens on B (shared keys), and its nonce is spent for both
    (the replay guard in Redis), so the same state presented again on A is refused."""

    async def never(context: Any, params: Any) -> Any:
        raise AssertionError("answers travel in inputResponses here")

    answer = {"elicitation-0": t.ElicitResult(action="accept", content={"environment": "staging"})}
    async with two_replicas() as (a, b):
        with anyio.fail_after(CALL_BOUND_SECONDS):
            async with Client(f"{a}/mcp", mode="2026-07-28", elicitation_callback=never) as on_a:
                first = await on_a.session.call_tool("deploy", {"service": "api"}, allow_input_required=True)
                assert isinstance(first, t.InputRequiredResult)
                async with Client(f"{b}/mcp", mode="2026-07-28", elicitation_callback=never) as on_b:
                    done = await on_b.session.call_tool(
                        "deploy",
                        {"service": "api"},
                        input_responses=answer,
                        request_state=first.request_state,
                        allow_input_required=True,
                    )
                assert isinstance(done, t.CallToolResult)
                assert done.content[0].text.startswith("Deployed api to staging")  # type: ignore[union-attr]
                try:
                    await on_a.session.call_tool(
                        "deploy",
                        {"service": "api"},
                        input_responses=answer,
                        request_state=first.request_state,
                        allow_input_required=True,
                    )
                except MCPError as exc:
                    replayed: MCPError | None = exc
                else:
                    replayed = None
    assert replayed is not None
    assert replayed.error.code == t.INVALID_PARAMS

"""Two replicas behind one public origin, sharing the machine's real Redis: the MCP session lives on
replica A, the browser finishes the page on replica B, and the completion still reaches the client.

Each replica has its own Redis connection, store and vault objects (as separate processes would);
they share only the Redis prefix, the link-signing secret and the vault key ring.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as t
import pytest
import redis.asyncio as aioredis
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_elicit.server import (
    ApiKeyHandoff,
    Handoffs,
    IdentityPolicy,
    KeyRing,
    RedisHandoffStore,
    TokenVault,
    handoff,
    require,
)
from mcp_elicit.server.vault import RedisVaultStorage
from tests.e2e.servers import serving_http
from tests.server.handoff_support import (
    Browser,
    LateCallback,
    Notes,
    UrlCallback,
    make_server,
    mcp_client,
    redis_client,
    redis_url,
)
from tests.support import text_of

pytestmark = [pytest.mark.anyio, pytest.mark.redis]

FLOW = ApiKeyHandoff(provider="github", title="GitHub")


@dataclass
class Replicas:
    mcp_url: str  # replica A: where the client's session lives
    page_origin: str  # replica B: where every browser request lands
    b: Handoffs
    browsed: list[str]

    async def enter_key(self, url: str) -> None:
        assert url.startswith(self.page_origin)
        browser = Browser()
        assert (await browser.enter_key(url)).status == 200
        self.browsed.extend(p.url for p in browser.history)


def replica(redis: Any, prefix: str, secret: bytes, keys: KeyRing) -> tuple[MCPServer[Any], Handoffs]:
    hs = Handoffs(
        vault=TokenVault(keys, RedisVaultStorage(redis, prefix + "vault:")),
        secret=secret,
        store=RedisHandoffStore(redis, prefix + "handoff:"),
        identity=IdentityPolicy(dev_user="dev"),
        flows=[FLOW],
    )
    server = make_server(hs, name="replica")

    @server.tool()
    async def connect(ctx: Context) -> str:
        return (await handoff(ctx, "Paste your GitHub key.", FLOW, timeout=10.0)).action

    @server.tool()
    async def repos(ctx: Context) -> str:
        await require(ctx, FLOW, fail_fast=True)
        return "3 repositories"

    return server, hs


@asynccontextmanager
async def two_replicas() -> AsyncIterator[Replicas]:
    secret, keys = secrets.token_bytes(32), KeyRing.generate()
    async with redis_client() as (redis_a, prefix):
        redis_b = aioredis.Redis.from_url(redis_url())
        try:
            server_a, hs_a = replica(redis_a, prefix, secret, keys)
            server_b, hs_b = replica(redis_b, prefix, secret, keys)
            async with serving_http(server_a) as url_a, serving_http(server_b) as url_b:
                public = url_b.removesuffix("/mcp")  # the load balancer sends browsers to B
                hs_a.public_base_url = hs_b.public_base_url = public
                yield Replicas(url_a, public, hs_b, [])
        finally:
            await redis_b.aclose()


async def test_a_2025_tool_waiting_on_a_continues_when_the_page_completes_on_b() -> None:
    async with two_replicas() as r:
        notes = Notes()
        cb = UrlCallback(r.enter_key)
        async with mcp_client(r.mcp_url, "legacy", cb, messages=notes) as client:
            assert text_of(await client.call_tool("connect", {})) == "accept"
        assert notes.completions() == [cb.seen[0]["elicitationId"]]
        assert all(u.startswith(r.page_origin) for u in r.browsed)


async def test_a_2026_retry_on_a_sees_the_page_completed_on_b() -> None:
    """The retry accepted on A is held there while the person finishes the page on B."""
    async with two_replicas() as r:
        cb = LateCallback()
        async with mcp_client(r.mcp_url, "2026-07-28", cb) as client, anyio.create_task_group() as tg:

            async def person() -> None:
                await cb.answered.wait()
                await r.enter_key(cb.seen[0]["url"])

            tg.start_soon(person)
            assert text_of(await client.call_tool("connect", {})) == "accept"
        assert len(cb.seen) == 1


async def test_after_minus_32042_on_a_the_completion_on_b_reaches_the_session_on_a() -> None:
    """U6, U7 across replicas: A's relay hears B's completion through Redis and notifies the session."""
    async with two_replicas() as r:
        notes = Notes()
        async with mcp_client(r.mcp_url, "legacy", UrlCallback(), messages=notes) as client:
            with pytest.raises(MCPError) as info:
                await client.call_tool("repos", {})
            assert info.value.error.code == t.URL_ELICITATION_REQUIRED
            [listed] = info.value.error.data["elicitations"]  # type: ignore[index]
            await r.enter_key(listed["url"])
            await notes.wait_completion(listed["elicitationId"])
            assert text_of(await client.call_tool("repos", {})) == "3 repositories"

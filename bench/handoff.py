"""ms per URL hand-off, end to end over streamable HTTP on 127.0.0.1.

One measured unit is one complete flow: the `tools/call` whose tool calls `handoff()`, the URL
request reaching the SDK client's callback, the "browser" (an httpx2 client with its own cookie
jar) opening the link (303 + marker cookie), loading the form, posting the key (vault write),
and the tool finishing:
- 2025-11-25: pushed `elicitation/create`, the tool waits, `notifications/elicitation/complete`;
- 2026-07-28: InputRequiredResult, the SDK client retries with accept, the store says done;
- pages only: mint a hand-off and drive its three page requests (no MCP traffic).
With --redis URL the store and the vault live in Redis instead of memory.
Variants are interleaved round by round so drift hits them alike; the median round is reported.

Run: .venv/bin/python bench/handoff.py [--flows N] [--rounds R] [--redis redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.e2e.servers import serving_http
from tests.server.handoff_support import Browser

from mcp_elicit.server import (
    ApiKeyHandoff,
    ElicitSettings,
    Handoffs,
    IdentityPolicy,
    KeyRing,
    RedisHandoffStore,
    TokenVault,
    handoff,
    install,
)
from mcp_elicit.server.identity import DEV_ISSUER, Principal
from mcp_elicit.server.vault import RedisVaultStorage

FLOW = ApiKeyHandoff(provider="bench", title="Bench API")
KEY = "sk-bench-0123456789abcdef"


def build(redis: Any, prefix: str) -> tuple[MCPServer[Any], Handoffs]:
    keys = KeyRing.generate()
    if redis is not None:
        hs = Handoffs(
            vault=TokenVault(keys, RedisVaultStorage(redis, prefix)),
            store=RedisHandoffStore(redis, prefix),
            identity=IdentityPolicy(dev_user="bench"),
            flows=[FLOW],
        )
    else:
        hs = Handoffs(vault=TokenVault(keys), identity=IdentityPolicy(dev_user="bench"), flows=[FLOW])
    server: MCPServer[Any] = MCPServer("bench-handoff", log_level="WARNING")
    install(server, ElicitSettings(handoffs=hs))

    @server.tool()
    async def connect(ctx: Context) -> str:
        return (await handoff(ctx, "Paste your key.", FLOW)).action

    return server, hs


async def drive(browser: Browser, url: str) -> None:
    page = await browser.enter_key(url, KEY)
    if page.status != 200:
        raise RuntimeError(f"page answered {page.status}")
    browser.history.clear()
    browser.http.cookies.clear()  # one person's finished flow; keeps the jar from growing


async def timed(n: int, once: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await once()
    return (time.perf_counter() - start) / n * 1000


async def main(flows: int, rounds: int, redis_url: str | None) -> None:
    redis = None
    prefix = f"mcp-elicit-bench:{uuid.uuid4().hex}:"
    if redis_url:
        import redis.asyncio as aioredis

        redis = aioredis.Redis.from_url(redis_url)
    server, hs = build(redis, prefix)
    browser = Browser()

    async def callback(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        await drive(browser, params.url)  # type: ignore[union-attr]
        return t.ElicitResult(action="accept")

    results: dict[str, list[float]] = {"2025-11-25 flow": [], "2026-07-28 flow": [], "pages only": []}
    try:
        async with (
            serving_http(server) as url,
            Client(url, mode="legacy", elicitation_callback=callback) as legacy,
            Client(url, mode="2026-07-28", elicitation_callback=callback) as modern,
        ):
            hs.public_base_url = url.removesuffix("/mcp")
            person = Principal("bench", DEV_ISSUER)

            async def legacy_once() -> None:
                await legacy.call_tool("connect", {})

            async def modern_once() -> None:
                await modern.call_tool("connect", {})

            async def pages_once() -> None:
                record = await hs.mint(None, person, FLOW, "Paste your key.")
                await drive(browser, record.url)

            for fn in (legacy_once, modern_once, pages_once):  # warm up
                await fn()
            for _ in range(rounds):
                results["2025-11-25 flow"].append(await timed(flows, legacy_once))
                results["2026-07-28 flow"].append(await timed(flows, modern_once))
                results["pages only"].append(await timed(flows, pages_once))
    finally:
        await browser.close()
        if redis is not None:
            keys = [k async for k in redis.scan_iter(match=prefix + "*")]
            if keys:
                await redis.delete(*keys)
            await redis.aclose()
    store = "redis" if redis_url else "memory"
    print(f"URL hand-off round trip over HTTP on 127.0.0.1, {store} store ({flows} flows x {rounds} rounds)")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"  {name:<18} {median:7.2f} ms/flow   ({1000 / median:6.0f} flows/s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--redis", default=None, help="Redis URL for the store and the vault")
    args = parser.parse_args()
    anyio.run(main, args.flows, args.rounds, args.redis)

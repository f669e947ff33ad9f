"""`Gateway`: the downstream server's handlers, mapping users to their pools and names to upstreams.

```
async with Gateway(parse_config(text)) as gw:
    await gw.serve_stdio()            # or: await gw.serve_http("127.0.0.1", 8700)
```

Users: over HTTP with a `users` map, the bearer token names the user (the transport already refused
unknown tokens); otherwise every call is the one local user's. Each user gets their own upstream
connections (a `Pool`), opened on their first request and held until the gateway stops.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

from mcp_elicit.audit.base import AuditSink
from mcp_elicit.client.ui_protocol import UserInterface
from mcp_elicit.core.policy import Policy
from mcp_elicit.errors import OutOfOrder
from mcp_elicit.gateway import sdk
from mcp_elicit.gateway.config import GatewayConfig
from mcp_elicit.gateway.pool import Pool
from mcp_elicit.gateway.relay import DownstreamCall

__all__ = ["LOCAL_USER", "MAX_POOLS", "Gateway"]

logger = logging.getLogger("mcp_elicit.gateway")

LOCAL_USER: Final = "local"
# Users with open upstream connections at once (each holds one connection per upstream).
MAX_POOLS: Final = 64


class Gateway:
    def __init__(
        self,
        config: GatewayConfig,
        *,
        policy: Policy | None = None,
        audit: AuditSink | None = None,
        browser: UserInterface | None = None,
        name: str = "mcp-elicit-gateway",
    ) -> None:
        self.config = config
        self.policy = policy
        self.audit = audit
        self.browser = browser
        self.pools: dict[str, Pool] = {}
        self._tg: TaskGroup | None = None
        self.server = sdk.build_server(name, "1", self.list_tools, self.call_tool)

    async def __aenter__(self) -> Gateway:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for pool in self.pools.values():
            pool.stop()
        tg, self._tg = self._tg, None
        if tg is not None:
            await tg.__aexit__(exc_type, exc, tb)

    def user_of(self, ctx: Any) -> str:
        if not self.config.users:
            return LOCAL_USER
        token = sdk.bearer_of(ctx)
        user = self.config.users.get(token or "")
        if user is None:  # the transport refuses unknown tokens; stdio never has users
            raise OutOfOrder("gateway", "a request without a known bearer token reached the gateway")
        return user

    async def pool_for(self, user: str) -> Pool:
        pool = self.pools.get(user)
        if pool is None:
            if self._tg is None:
                raise OutOfOrder("Gateway", "enter the gateway with `async with`")
            if len(self.pools) >= MAX_POOLS:
                raise OutOfOrder("gateway", f"at most {MAX_POOLS} users at once")
            pool = self.pools[user] = Pool(
                self.config, user, policy=self.policy, audit=self.audit, browser=self.browser
            )
            self._tg.start_soon(pool.run)
        await pool.wait_settled()
        return pool

    async def list_tools(self, ctx: Any) -> list[Any]:
        pool = await self.pool_for(self.user_of(ctx))
        return [sdk.tool_named(tool, name) for name, (_, tool) in pool.offered().items()]

    async def call_tool(self, ctx: Any, name: str, arguments: dict[str, Any]) -> Any:
        user = self.user_of(ctx)
        pool = await self.pool_for(user)
        found = pool.offered().get(name)
        client = pool.clients.get(found[0]) if found is not None else None
        if found is None or client is None:
            return sdk.error_result(f"Unknown tool {name!r} (or its server is unavailable).")
        server, tool = found
        call = DownstreamCall(ctx, user, server, tool.name)
        with pool.books[server].track(call):
            result = await client.call_tool(tool.name, arguments)
        if call.refusals:  # never a silent drop: say what could not be asked
            return sdk.error_result(
                "The gateway could not relay a question: " + "; ".join(call.refusals), result
            )
        return result

    async def serve_stdio(self) -> None:
        await self.pool_for(LOCAL_USER)  # start the upstreams before the client lists tools
        await sdk.serve_stdio(self.server)

    async def serve_http(self, host: str, port: int, started: Any = None) -> None:
        await sdk.serve_http(self.server, host, port, self.config.users, started=started)

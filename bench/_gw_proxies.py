"""The proxies the gateway benchmark compares against, in-process or in their own process.

- "floor": the least any relay costs: a raw-SDK low-level `Server` that forwards `tools/call` to
  one upstream SDK `Client` and pushes each upstream question, untouched, on the calling request
  (no checks, no records, one caller at a time). The gateway against it is our own cost; it
  against a direct connection is what one more SDK exchange costs by construction.
- "fastmcp": FastMCP's `create_proxy` in front of the same upstream, as its docs show it (by
  default a fresh upstream session per request; it forwards forms, a URL becomes an empty form).

Run one: python bench/_gw_proxies.py {floor|fastmcp} {stdio|http} UPSTREAM
(UPSTREAM is an http:// URL or "stdio:<kind>" for `_rt_servers.py <kind> stdio`; http prints
"PORT <n>" on stdout once it listens on 127.0.0.1).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

import mcp_types as t
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.lowlevel.server import Server

SERVERS = Path(__file__).resolve().parent / "_rt_servers.py"


def upstream_target(upstream: str) -> Any:
    if upstream.startswith("stdio:"):
        kind = upstream.removeprefix("stdio:")
        return StdioServerParameters(command=sys.executable, args=[str(SERVERS), kind, "stdio"])
    return upstream


@asynccontextmanager
async def floor_proxy(upstream: str) -> AsyncIterator[Server[Any]]:
    """The pass-through floor, connected to `upstream` while the context is open."""
    current: list[Any] = []  # the downstream request being forwarded (one at a time)

    async def relay(context: Any, params: Any) -> t.ElicitResult:
        ctx = current[-1]
        return await ctx.session.elicit_form(params.message, params.requested_schema, ctx.request_id)

    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            Client(upstream_target(upstream), mode="legacy", elicitation_callback=relay)
        )
        tools = (await client.list_tools()).tools

        async def on_list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
            return t.ListToolsResult(tools=tools)

        async def on_call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
            current.append(ctx)
            try:
                return await client.call_tool(params.name, dict(params.arguments or {}))
            finally:
                current.pop()

        yield Server("floor", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def fastmcp_proxy(upstream: str) -> Any:
    from fastmcp.server import create_proxy

    if upstream.startswith("stdio:"):
        kind = upstream.removeprefix("stdio:")
        from fastmcp.client.transports import StdioTransport

        return create_proxy(
            StdioTransport(sys.executable, [str(SERVERS), kind, "stdio"]), name="fastmcp-proxy"
        )
    return create_proxy(upstream, name="fastmcp-proxy")


def main() -> None:
    import anyio

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _rt_servers import _serve_http

    kind, transport, upstream = sys.argv[1], sys.argv[2], sys.argv[3]
    if kind == "fastmcp":
        proxy = fastmcp_proxy(upstream)
        if transport == "stdio":
            proxy.run(transport="stdio", show_banner=False)
        else:
            _serve_http(proxy.http_app(path="/mcp", transport="streamable-http"))
        return

    async def serve() -> None:
        async with floor_proxy(upstream) as server:
            if transport == "stdio":
                from mcp.server.stdio import stdio_server

                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())
            else:
                await _serve_http_async(server.streamable_http_app(host="127.0.0.1"))

    anyio.run(serve)


async def _serve_http_async(app: Any, on_port: Callable[[int], None] | None = None) -> None:
    """Serve `app` on 127.0.0.1 (a free port), telling the port to `on_port` or as "PORT n" on stdout."""
    import uvicorn

    class Server_(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            port = self.servers[0].sockets[0].getsockname()[1]
            if on_port is not None:
                on_port(port)
            else:
                print(f"PORT {port}", flush=True)

    await Server_(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")).serve()


if __name__ == "__main__":
    main()

"""Real transports for end-to-end tests: streamable HTTP on 127.0.0.1 and stdio subprocesses."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import uvicorn
from mcp.client.stdio import StdioServerParameters

STARTUP_BOUND_SECONDS = 20.0


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = anyio.Event()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@asynccontextmanager
async def serving_app(app: Any) -> AsyncIterator[str]:
    """Serve any ASGI app on 127.0.0.1 (a free port) and yield its origin."""
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(STARTUP_BOUND_SECONDS):
            await server.ready.wait()
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


@asynccontextmanager
async def serving_http(mcp_server: Any, **app_options: Any) -> AsyncIterator[str]:
    """Serve `mcp_server` over streamable HTTP on 127.0.0.1 (a free port) and yield its URL."""
    async with serving_app(mcp_server.streamable_http_app(**app_options)) as origin:
        yield f"{origin}/mcp"


def reference_over_stdio() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_elicit", "serve-reference", "--transport", "stdio"]
    )

"""A server's own loopback HTTP listener for its hand-off pages, for servers that speak stdio.

Most desktop servers run over stdio, where there is no HTTP app to put the pages on. Like a
native app that receives an OAuth redirect on a loopback port (RFC 8252, section 7.3), such a
server can serve its pages on 127.0.0.1 itself: `Handoffs(pages_listen="127.0.0.1:0")` starts
this listener with the server (a free port when the port is 0) and builds links on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Route

from mcp_elicit.errors import ConfigError
from mcp_elicit.server.identity import is_loopback_host

__all__ = ["LOOPBACK_START_SECONDS", "parse_listen", "serving"]

# How long the listener may take to start before the server gives up on it.
LOOPBACK_START_SECONDS = 10.0


def parse_listen(listen: str) -> tuple[str, int]:
    """("127.0.0.1", 0) from "127.0.0.1:0"; ConfigError for anything but a loopback host and a port."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    if not is_loopback_host(host) or not port.isdigit() or int(port) > 65535:
        raise ConfigError("pages_listen", f"{listen!r} is not a loopback address and port (127.0.0.1:0)")
    return host, int(port)


class _Quiet(uvicorn.Server):
    """uvicorn without its signal handlers (the MCP server that embeds it owns the signals), with
    an event for when it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = anyio.Event()
        self.failed = False

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        self.ready.set()

    async def run_quietly(self) -> None:
        try:
            await self.serve()
        except SystemExit:  # uvicorn exits when it cannot bind; report it instead
            self.failed = True
            self.ready.set()


@asynccontextmanager
async def serving(routes: Sequence[tuple[str, list[str], Any]], listen: str) -> AsyncIterator[str]:
    """Serve `routes` (path, methods, endpoint) on `listen` for as long as the block runs; yields
    the origin ("http://127.0.0.1:PORT")."""
    host, port = parse_listen(listen)
    app = Starlette(routes=[Route(path, endpoint, methods=methods) for path, methods, endpoint in routes])
    server = _Quiet(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run_quietly)
        with anyio.fail_after(LOOPBACK_START_SECONDS):
            await server.ready.wait()
        if server.failed:
            raise ConfigError("pages_listen", f"could not listen on {listen}")
        bound = server.servers[0].sockets[0].getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        try:
            yield f"http://{shown}:{bound[1]}"
        finally:
            server.should_exit = True

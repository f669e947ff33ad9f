"""The server side's second door to the SDK (`mcp` 2.x): hosting a server, not answering requests.

HTTP routes outside MCP authorization (the hand-off pages), a context around the server's
lifespan (their completion relay), and serving a server over stdio or streamable HTTP (the
shipped servers' commands). `sdk.py` is the door for everything a request goes through.

Private SDK hooks used here (each has a canary test in tests/server/test_sdk_canaries.py):
- `MCPServer._lowlevel_server.lifespan`, wrapped so hand-off pages can run their completion relay.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcp_elicit.server.sdk import lowlevel_of

__all__ = ["add_route", "serve_http", "serve_stdio", "wrap_lifespan"]


# --- HTTP routes and lifespan (hand-off pages) -------------------------------------------------


def add_route(server: Any, path: str, methods: list[str], endpoint: Any) -> None:
    """Add a plain Starlette route to the server's HTTP app (outside MCP authorization)."""
    server.custom_route(path, methods=methods, include_in_schema=False)(endpoint)


def wrap_lifespan(low: Any, context: Any) -> None:
    """Run the async context manager factory `context()` around a low-level server's lifespan: the
    SDK enters it once per HTTP app (and in-memory connection) and has no public hook to add to it."""
    inner = low.lifespan

    @asynccontextmanager
    async def lifespan(app: Any) -> Any:
        async with context(), inner(app) as state:
            yield state

    low.lifespan = lifespan


# --- running a server (the shipped servers' commands) ------------------------------------------


async def serve_stdio(server: Any, stop: anyio.Event | None = None) -> None:
    """Serve an MCPServer over stdin and stdout until end of file, or until `stop` is set (which
    ends the session as end of file does: `mcp_elicit.server.stdin`). `server.run("stdio")`
    without the wait: the SDK's own stdin thread cannot be abandoned, so Ctrl-C waits for Ctrl-D."""
    from mcp.server.stdio import stdio_server

    from mcp_elicit.server.stdin import stdin_lines

    low = lowlevel_of(server)
    async with stdin_lines(stop) as lines, stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
        await low.run(read, write, low.create_initialization_options())


async def serve_http(server: Any, sock: Any, host: str, stop: anyio.Event | None = None) -> None:
    """`server.run("streamable-http")` on `sock`, a socket already bound (so a port in use is said
    before the server starts); `host` is the address it was bound to (DNS-rebinding checks).
    Setting `stop` shuts it down gracefully (`mcp_elicit.server.serving`)."""
    import uvicorn

    from mcp_elicit.server.serving import serve_uvicorn

    app = server.streamable_http_app(host=host)
    # log_config=None: uvicorn's records go through the process's logging as they are (the
    # commands write every record as one plain line: cli/serving.py), no handlers of its own
    config = uvicorn.Config(app, log_level=server.settings.log_level.lower(), log_config=None)
    with sock:
        await serve_uvicorn(config, sock, stop)

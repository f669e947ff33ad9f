"""Third-party-style servers for the client kit's interop tests, each runnable over stdio.

`python -m tests.peers.py_servers NAME` serves one of them on stdio; `build(NAME)` returns it to serve
over streamable HTTP. Every server has one tool, `book`, that asks for a number of guests and
answers "Booked for N." (or "No booking (ACTION).").

- `push`: the SDK's MCPServer, `ctx.elicit` (a 2025-11-25 push; fails on 2026-07-28).
- `resolve`: the SDK's MCPServer, `Resolve(...)` (a push on 2025-11-25, a round on 2026-07-28).
- `fastmcp`: FastMCP, `ctx.elicit` (a push).
- `ask`: the SDK's MCPServer with this kit's `ask` (both eras).

Not in SERVERS (other tools):
- `fastmcp_token`: FastMCP, `ctx.elicit("Paste your GitHub token", str)` in a tool `connect_github`:
  a single generic field whose message names the secret (the client's guard must stop it); its
  answer says what the server heard ("Not connected (decline).").
- `modern`: a server that speaks ONLY 2026-07-28: the SDK's MCPServer (the reference server's, so
  it has the URL hand-off `connect_service` with its pages) with a server middleware that refuses
  the `initialize` handshake with -32022 naming the one revision it serves, as the SDK's own
  2026-07-28 loop does. Its `book` asks through the SDK's `Resolve` (a 2026-07-28 round) and
  counts how often its body ran; `tool_runs` reports, as JSON, the `tools/call` requests per tool
  and the `book` body runs seen by this server process.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from typing import Annotated, Any

import fastmcp
from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ElicitationResult, Resolve
from pydantic import BaseModel, Field

from mcp_elicit.reference import build_reference_server
from mcp_elicit.server import ask, install

SERVERS = ("push", "resolve", "fastmcp", "ask")


class Guests(BaseModel):
    guests: int = Field(2, ge=1, le=10)


def ask_guests() -> Elicit[Guests]:
    return Elicit("How many guests?", Guests)


def _push() -> Any:
    # PEER_NAME proves an mcpServers `env` (or a VAR=value prefix) reached the process.
    server = MCPServer(os.environ.get("PEER_NAME", "push-peer"))

    @server.tool()
    async def book(ctx: Context) -> str:
        answer = await ctx.elicit("How many guests?", schema=Guests)
        if answer.action != "accept":
            return f"No booking ({answer.action})."
        return f"Booked for {answer.data.guests}."

    return server


def _resolve() -> Any:

    server = MCPServer("resolve-peer")

    @server.tool()
    async def book(answer: Annotated[ElicitationResult[Guests], Resolve(ask_guests)]) -> str:
        if answer.action != "accept":
            return f"No booking ({answer.action})."
        return f"Booked for {answer.data.guests}."

    return server


def _fastmcp() -> Any:

    server: fastmcp.FastMCP[Any] = fastmcp.FastMCP("fastmcp-peer")

    @server.tool
    async def book(ctx: fastmcp.Context) -> str:
        answer = await ctx.elicit("How many guests?", response_type=Guests)
        if answer.action != "accept":
            return f"No booking ({answer.action})."
        return f"Booked for {answer.data.guests}."

    return server


def _ask() -> Any:
    server = MCPServer("ask-peer")
    install(server)

    @server.tool()
    async def book(ctx: Context) -> str:
        answer = await ask(ctx, "How many guests?", Guests)
        if not answer.accepted or answer.data is None:
            return f"No booking ({answer.action})."
        return f"Booked for {answer.data.guests}."

    return server


def _fastmcp_token() -> Any:
    server: fastmcp.FastMCP[Any] = fastmcp.FastMCP("fastmcp-token-peer")

    @server.tool
    async def connect_github(ctx: fastmcp.Context) -> str:
        answer = await ctx.elicit("Paste your GitHub token", str)
        return "Connected." if answer.action == "accept" else f"Not connected ({answer.action})."

    return server


MODERN = "2026-07-28"
UNSUPPORTED_PROTOCOL_VERSION = -32022  # the specification's code, as the SDK sends it


class OnlyModern:
    """A server middleware: the `initialize` handshake is refused (-32022 with the revisions served,
    what the SDK answers on a 2026-07-28 connection), and `tools/call` requests are counted."""

    def __init__(self) -> None:
        self.tool_calls: Counter[str] = Counter()
        self.book_runs = 0

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "initialize":
            requested = (ctx.params or {}).get("protocolVersion")
            raise MCPError(
                code=UNSUPPORTED_PROTOCOL_VERSION,
                message=f"this server speaks only {MODERN}; the initialize handshake is not accepted",
                data={"supported": [MODERN], "requested": requested},
            )
        if ctx.method == "tools/call":
            self.tool_calls[str((ctx.params or {}).get("name"))] += 1
        return await call_next(ctx)


def _modern(stdio: bool = False) -> Any:
    server = build_reference_server(stdio=stdio)
    only = OnlyModern()
    server._lowlevel_server.middleware.append(
        only
    )  # the SDK's hook (canary: tests/server/test_sdk_canaries.py)

    @server.tool()
    async def book(answer: Annotated[ElicitationResult[Guests], Resolve(ask_guests)]) -> str:
        only.book_runs += 1
        if answer.action != "accept":
            return f"No booking ({answer.action})."
        return f"Booked for {answer.data.guests}."

    @server.tool()
    async def tool_runs() -> str:
        return json.dumps({"tools/call": dict(only.tool_calls), "book_runs": only.book_runs})

    return server


def build(name: str, *, stdio: bool = False) -> Any:
    if name == "modern":
        return _modern(stdio=stdio)
    return {
        "push": _push,
        "resolve": _resolve,
        "fastmcp": _fastmcp,
        "ask": _ask,
        "fastmcp_token": _fastmcp_token,
    }[name]()


class Http:
    """An object `serving_http` can serve, for the SDK's servers and FastMCP alike."""

    def __init__(self, name: str) -> None:
        self.server = build(name)
        self.name = name

    def streamable_http_app(self) -> Any:
        if self.name.startswith("fastmcp"):
            return self.server.http_app(path="/mcp")
        return self.server.streamable_http_app()


if __name__ == "__main__":
    server = build(sys.argv[1], stdio=True)
    if sys.argv[1].startswith("fastmcp"):
        server.run(transport="stdio", show_banner=False)
    else:
        server.run(transport="stdio")

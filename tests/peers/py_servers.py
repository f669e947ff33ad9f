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
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import fastmcp
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ElicitationResult, Resolve
from pydantic import BaseModel, Field

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


def build(name: str) -> Any:
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
    server = build(sys.argv[1])
    if sys.argv[1].startswith("fastmcp"):
        server.run(transport="stdio", show_banner=False)
    else:
        server.run(transport="stdio")

"""The servers the round-trip benchmarks drive, and a way to run one in its own process.

Every server has `noop` (no question: the SDK round trip floor) and `ask_one` (one four-field
form, answered "accept"); the raw SDK server also has `ask_one_resolved` (the SDK's 2026-07-28
resolver path, `Resolve` + `Elicit`).

Run one: python bench/_rt_servers.py {ours|sdk|fastmcp} {stdio|http}
(http prints "PORT <n>" on stdout once it listens on 127.0.0.1).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any, Literal

os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")  # no start-up banner in the timing output

import fastmcp
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

from mcp_elicit.server import ElicitSettings, ask, install


class Ticket(BaseModel):
    title: str = Field(title="Title", max_length=80)
    priority: Literal["low", "normal", "high"] = "normal"
    estimate: int = Field(1, ge=1, le=40, title="Estimate (hours)")
    urgent: bool = False


ANSWER = {"title": "Fix login", "priority": "high", "estimate": 3, "urgent": True}


def ours(audit: Any = None) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("bench-ours", log_level="WARNING")
    install(server, ElicitSettings(audit=audit))

    @server.tool()
    async def ask_one(ctx: Context) -> str:
        answer = await ask(ctx, "New ticket", Ticket)
        return answer.data.title if answer.data else answer.action

    @server.tool()
    async def noop() -> str:
        return "ok"

    return server


async def ticket() -> Elicit[Ticket]:
    """The SDK's resolver path: a dependency that asks the question."""
    return Elicit("New ticket", Ticket)


def raw_sdk() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("bench-sdk", log_level="WARNING")

    @server.tool()
    async def ask_one(ctx: Context) -> str:
        answer = await ctx.elicit("New ticket", Ticket)
        return answer.data.title if answer.action == "accept" else answer.action

    @server.tool()
    async def ask_one_resolved(data: Annotated[Ticket, Resolve(ticket)]) -> str:
        return data.title

    @server.tool()
    async def noop() -> str:
        return "ok"

    return server


def fastmcp_server() -> Any:
    server = fastmcp.FastMCP("bench-fastmcp")

    @server.tool()
    async def ask_one(ctx: fastmcp.Context) -> str:
        answer = await ctx.elicit("New ticket", Ticket)
        return answer.data.title if answer.action == "accept" else answer.action

    @server.tool()
    async def noop() -> str:
        return "ok"

    return server


BUILDERS = {"ours": ours, "sdk": raw_sdk, "fastmcp": fastmcp_server}


def _serve_http(app: Any) -> None:
    import anyio
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            print(f"PORT {self.servers[0].sockets[0].getsockname()[1]}", flush=True)

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    anyio.run(Server(config).serve)


def main() -> None:
    kind, transport = sys.argv[1], sys.argv[2]
    server = BUILDERS[kind]()
    if transport == "stdio":
        if kind == "fastmcp":
            server.run(transport="stdio", show_banner=False)
        else:
            server.run("stdio")
    elif kind == "fastmcp":
        _serve_http(server.http_app(path="/mcp", transport="streamable-http"))
    else:
        _serve_http(server.streamable_http_app())


if __name__ == "__main__":
    main()

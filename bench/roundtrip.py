"""µs per form elicitation: mcp-elicit's `ask` against the raw SDK and FastMCP, in the same run.

Each measured unit is one `tools/call` whose tool asks one question and gets an accepted answer:
- push, in memory (2025-11-25): `ask` vs the SDK's `ctx.elicit` vs FastMCP's `ctx.elicit`;
- pull, in memory (2026-07-28): `ask` vs the SDK's resolver path (`Resolve` + `Elicit`);
- push over streamable HTTP on 127.0.0.1: `ask` vs the SDK's `ctx.elicit`;
- `ask` with a server-side SQLite consent trail vs without.
Variants are interleaved round by round so drift hits them alike; the median round is reported.

Run: .venv/bin/python bench/roundtrip.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import fastmcp
import mcp_types as t
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.e2e.servers import serving_http

from mcp_elicit.audit.sqlite import SqliteAuditSink
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
    async def file_ticket(ctx: Context) -> str:
        answer = await ask(ctx, "New ticket", Ticket)
        return answer.data.title if answer.data else answer.action

    return server


async def ticket() -> Elicit[Ticket]:
    """The SDK's resolver path: a dependency that asks the question."""
    return Elicit("New ticket", Ticket)


def raw_sdk() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("bench-sdk", log_level="WARNING")

    @server.tool()
    async def file_ticket(ctx: Context) -> str:
        answer = await ctx.elicit("New ticket", Ticket)
        return answer.data.title if answer.action == "accept" else answer.action

    @server.tool()
    async def file_ticket_resolved(data: Annotated[Ticket, Resolve(ticket)]) -> str:
        return data.title

    return server


def fastmcp_server() -> fastmcp.FastMCP:
    server = fastmcp.FastMCP("bench-fastmcp")

    @server.tool()
    async def file_ticket(ctx: fastmcp.Context) -> str:
        answer = await ctx.elicit("New ticket", Ticket)
        return answer.data.title if answer.action == "accept" else answer.action

    return server


async def sdk_callback(context: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content=dict(ANSWER))


async def fastmcp_handler(message: str, response_type: Any, params: Any, context: Any) -> dict[str, Any]:
    return dict(ANSWER)


Timed = Callable[[int], Awaitable[float]]


def sdk_variant(target: Any, mode: str, tool: str) -> Timed:
    async def run(calls: int) -> float:
        async with Client(target, mode=mode, elicitation_callback=sdk_callback) as client:
            await client.call_tool(tool, {})  # warm-up: connection, caches
            start = time.perf_counter()
            for _ in range(calls):
                await client.call_tool(tool, {})
            return (time.perf_counter() - start) / calls * 1e6

    return run


def fastmcp_variant(target: Any) -> Timed:
    async def run(calls: int) -> float:
        async with fastmcp.Client(target, mode="legacy", elicitation_handler=fastmcp_handler) as client:
            await client.call_tool("file_ticket", {})
            start = time.perf_counter()
            for _ in range(calls):
                await client.call_tool("file_ticket", {})
            return (time.perf_counter() - start) / calls * 1e6

    return run


async def measure(variants: dict[str, Timed], calls: int, rounds: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            samples[name].append(await run(calls))
    return {name: statistics.median(values) for name, values in samples.items()}


def report(title: str, results: dict[str, float], baseline: str) -> None:
    print(f"\n{title}")
    for name, micros in results.items():
        print(f"  {name:<34} {micros:9.1f} µs/elicitation   {micros / results[baseline]:5.2f}x {baseline}")


async def main(calls: int, rounds: int) -> None:
    ours_server, sdk_server, fm_server = ours(), raw_sdk(), fastmcp_server()
    push = await measure(
        {
            "raw SDK ctx.elicit": sdk_variant(sdk_server, "legacy", "file_ticket"),
            "mcp-elicit ask": sdk_variant(ours_server, "legacy", "file_ticket"),
            "FastMCP ctx.elicit": fastmcp_variant(fm_server),
        },
        calls,
        rounds,
    )
    report("push (2025-11-25), in memory", push, "raw SDK ctx.elicit")
    pull = await measure(
        {
            "raw SDK Resolve+Elicit": sdk_variant(sdk_server, "2026-07-28", "file_ticket_resolved"),
            "mcp-elicit ask": sdk_variant(ours_server, "2026-07-28", "file_ticket"),
        },
        calls,
        rounds,
    )
    report("pull (2026-07-28, InputRequiredResult), in memory", pull, "raw SDK Resolve+Elicit")
    async with serving_http(ours()) as ours_url, serving_http(raw_sdk()) as sdk_url:
        http = await measure(
            {
                "raw SDK ctx.elicit": sdk_variant(sdk_url, "legacy", "file_ticket"),
                "mcp-elicit ask": sdk_variant(ours_url, "legacy", "file_ticket"),
            },
            max(calls // 4, 10),
            rounds,
        )
    report("push (2025-11-25), streamable HTTP on 127.0.0.1", http, "raw SDK ctx.elicit")
    with tempfile.TemporaryDirectory() as folder:
        sink = SqliteAuditSink(Path(folder) / "audit.sqlite3")
        audited = await measure(
            {
                "mcp-elicit ask, no audit": sdk_variant(ours(), "legacy", "file_ticket"),
                "mcp-elicit ask, SQLite audit": sdk_variant(ours(sink), "legacy", "file_ticket"),
            },
            calls,
            rounds,
        )
        sink.close()
    report("server-side consent records on vs off, push in memory", audited, "mcp-elicit ask, no audit")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200, help="calls per variant per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the median is reported")
    args = parser.parse_args()
    anyio.run(main, args.calls, args.rounds)

"""An elicitation with the server's consent trail against one without, in the same run.

One unit is one pushed (2025-11-25) question answered by the client, timed per elicitation inside
the tool (the tool asks --asks questions in a row, so the call's own cost is not in the figure),
over the SDK's in-memory transport. Variants, interleaved in alternating order each round:
`ask` with no audit; `ask` with the SQLite trail (WAL, durability "process_crash" =
synchronous=NORMAL: the record is committed before the answer reaches the tool), as shipped
(a lone record commits on the event loop's thread, audit/writer.py) and forced through the
writer thread; SQLite at durability "power_loss" (synchronous=FULL, an fsync per record); the
PostgreSQL trail when a server answers ($MCP_ELICIT_TEST_POSTGRES or
postgresql://postgres@127.0.0.1:5432/test, a throw-away table).

Each variant is timed two ways per round: wall time inside the tool, and the process's CPU time
over the same calls (client and server share the process; CPU time is what the work costs, wall
time also holds the waits for a core on a busy machine). Ratios are paired within a round.
The whole comparison runs --repeat times in the same process, one table each.

Run: .venv/bin/python bench/audited_ask.py [--asks N] [--calls C] [--rounds R] [--repeat K]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

from _stats import conditions, fmt_ratio, interleaved, ratios
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.server import ElicitSettings, ask, install


class Target(BaseModel):
    environment: str
    replicas: int = 2


def make_server(sink: Any, asks: int, spent: list[float]) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("audit-bench")
    install(server, ElicitSettings(audit=sink))

    @server.tool()
    async def deploy(ctx: Context) -> str:
        start = time.perf_counter()
        for i in range(asks):
            await ask(ctx, f"Where should build {i} go?", Target)
        spent.append((time.perf_counter() - start) / asks)
        return "ok"

    return server


async def answer(context: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"environment": "staging", "replicas": 3})


async def per_elicitation(sink: Any, asks: int, calls: int) -> tuple[float, float]:
    """(wall µs, process CPU µs) per elicitation, medians over the calls."""
    spent: list[float] = []
    cpu: list[float] = []
    async with Client(make_server(sink, asks, spent), mode="legacy", elicitation_callback=answer) as c:
        await c.call_tool("deploy", {})  # warm-up
        spent.clear()
        for _ in range(calls):
            start = time.process_time()
            await c.call_tool("deploy", {})
            cpu.append((time.process_time() - start) / asks)
    return statistics.median(spent) * 1e6, statistics.median(cpu) * 1e6


class ThreadOnly(SqliteAuditSink):
    """The shipped SQLite sink without `append_now`: every record hops to the writer thread."""

    append_now = None  # type: ignore[assignment]


def postgres_sink() -> Any | None:
    import os

    from mcp_elicit.audit.postgres import PostgresAuditSink
    from mcp_elicit.errors import AuditWriteError

    url = os.environ.get("MCP_ELICIT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
    try:
        return PostgresAuditSink(url, table=f"bench_ask_{uuid.uuid4().hex[:10]}")
    except AuditWriteError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--asks", type=int, default=20)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(conditions())
    with tempfile.TemporaryDirectory() as tmp:
        sinks: dict[str, Any] = {
            "no audit": None,
            "SQLite trail": SqliteAuditSink(Path(tmp) / "a.sqlite3"),
            "SQLite, via writer thread": ThreadOnly(Path(tmp) / "b.sqlite3"),
            "SQLite, power_loss": SqliteAuditSink(Path(tmp) / "c.sqlite3", durability="power_loss"),
        }
        pg = postgres_sink()
        if pg is not None:
            sinks["PostgreSQL trail"] = pg
        names = list(sinks)
        for rep in range(args.repeat):
            got = interleaved(
                names, args.rounds, lambda n: anyio.run(per_elicitation, sinks[n], args.asks, args.calls)
            )
            wall = {n: [v[0] for v in got[n]] for n in names}
            cpu = {n: [v[1] for v in got[n]] for n in names}
            print(f"\nrepeat {rep + 1} ({conditions()})")
            print("| variant | wall µs | wall ratio (min-max) | CPU µs | CPU ratio (min-max) |")
            print("|---|---|---|---|---|")
            for n in names:
                w = fmt_ratio(ratios(wall[n], wall["no audit"]))
                c = fmt_ratio(ratios(cpu[n], cpu["no audit"]))
                mw, mc = statistics.median(wall[n]), statistics.median(cpu[n])
                print(f"| {n} | {mw:,.0f} | {w} | {mc:,.0f} | {c} |")
        if pg is not None:
            pg.drop()
            pg.close()
        for sink in sinks.values():
            if isinstance(sink, SqliteAuditSink):
                sink.close()


if __name__ == "__main__":
    main()

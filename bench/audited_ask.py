"""An elicitation with the server's consent trail against one without, in the same run.

One unit is one pushed (2025-11-25) question answered by the client, timed per elicitation inside
the tool (the tool asks --asks questions in a row, so the call's own cost is not in the figure),
over the SDK's in-memory transport. Variants, interleaved in alternating order each round:
`ask` with no audit; `ask` with the SQLite trail (WAL, synchronous=NORMAL: the record is
committed before the answer reaches the tool); with the PostgreSQL trail when a server answers
($MCP_ELICIT_TEST_POSTGRES or postgresql://postgres@127.0.0.1:5432/test, a throw-away table).
Prints the median µs per elicitation and the ratio to no audit, with min-max over rounds.

Run: .venv/bin/python bench/audited_ask.py [--asks N] [--rounds R]
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


async def per_elicitation(sink: Any, asks: int, calls: int) -> float:
    spent: list[float] = []
    async with Client(make_server(sink, asks, spent), mode="legacy", elicitation_callback=answer) as c:
        await c.call_tool("deploy", {})  # warm-up
        spent.clear()
        for _ in range(calls):
            await c.call_tool("deploy", {})
    return statistics.median(spent) * 1e6


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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sinks: dict[str, Any] = {"no audit": None, "SQLite trail": SqliteAuditSink(Path(tmp) / "a.sqlite3")}
        pg = postgres_sink()
        if pg is not None:
            sinks["PostgreSQL trail"] = pg
        names = list(sinks)
        got: dict[str, list[float]] = {n: [] for n in names}
        for r in range(args.rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                got[name].append(anyio.run(per_elicitation, sinks[name], args.asks, args.calls))
        base = got["no audit"]
        print("| variant | µs per elicitation (median) | ratio to no audit (min-max) |")
        print("|---|---|---|")
        for name in names:
            ratios = [v / b for v, b in zip(got[name], base, strict=True)]
            print(
                f"| {name} | {statistics.median(got[name]):,.0f} | {statistics.median(ratios):.2f}×"
                f" ({min(ratios):.2f}-{max(ratios):.2f}) |"
            )
        if pg is not None:
            pg.drop()
            pg.close()
        sinks["SQLite trail"].close()


if __name__ == "__main__":
    main()

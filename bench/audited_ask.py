"""An elicitation with the server's consent trail against one without, in the same run.

One unit is one pushed (2025-11-25) question answered by the client, timed per elicitation
inside the tool (the tool asks --asks questions in a row, so the call's own cost is not in the
figure), over the SDK's in-memory transport. Variants, interleaved in alternating order each
round: `ask` with no audit; `ask` with the SQLite trail (WAL, durability "process_crash" =
synchronous=NORMAL), as shipped (a lone record is journaled on the event loop's thread before
the answer reaches the tool, one write, and merged into the chain in batches by the writer
thread, audit/journal.py); the same with a keyed checkpoint (each journal line signed with an
HMAC, the checkpoint file rewritten after each merge); without the journal (each record
committed on the event loop's thread before the answer goes on, audit/writer.py) and forced
through the writer thread (a commit per record there); SQLite at durability "power_loss"
(synchronous=FULL, an fsync per record); the PostgreSQL trail when a server answers
($MCP_ELICIT_TEST_POSTGRES or postgresql://postgres@127.0.0.1:5432/test, a throw-away table).

Each variant is timed two ways per round: wall time inside the tool, and the process's CPU time
over the same calls (client and server share the process; CPU time is what the work costs, wall
time also holds the waits for a core on a busy machine). Ratios are paired within a round.
Work a trail defers (the journal's merge, a due WAL checkpoint: the sink's `maintain`) is run at
the end of each timed window and counted in it (over HTTP through an `upkeep` tool every variant
calls, the audit-free one included), so no variant's records are merged outside the windows.
The whole comparison runs --repeat times in the same process, one table each, then one table of
every round of every repeat (the medians of all the paired rounds).

`--transport http`: the same over streamable HTTP on 127.0.0.1, every variant (SQLite ones only)
in one server process, switched between windows by a `use` tool (so two variants never differ by
where their processes happened to land; "no audit (again)" shows the noise between two windows
of the same code), driven by the SDK's client from this process. Then the CPU figure is the
server process's own CPU time per elicitation (the scheduler's run time of its threads,
/proc/PID/task/*/schedstat), which is what an audited server pays, and the wall figure is the
client's time per elicitation. The server freezes its start-up heap before serving, as the
shipped servers do (`freeze_startup_heap()`; `--no-freeze` leaves it), and after the tables prints
per variant its garbage collections (time per elicitation, full collections per 10,000) and its
kernel time per elicitation (/proc/PID/stat, in clock ticks: read it over many rounds).

Run: .venv/bin/python bench/audited_ask.py [--asks N] [--calls C] [--rounds R] [--repeat K]
     [--transport memory|http] [--no-freeze] [--only PREFIX ...]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import glob
import json
import os
import statistics
import subprocess
import sys
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

import mcp_elicit.audit.sqlite as sqlite_sink
from _stats import conditions, fmt_ratio, interleaved, ratios
from mcp_elicit.audit.base import new_record_id
from mcp_elicit.audit.checkpoint import Checkpoint
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.server import ElicitSettings, ask, freeze_startup_heap, install

# The bench server's garbage collections: how many of each generation, and the seconds they took.
GC_SEEN = {"gen0": 0, "gen1": 0, "gen2": 0, "seconds": 0.0}
_gc_start = [0.0]


def _count_gc(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _gc_start[0] = time.perf_counter()
        return
    GC_SEEN[f"gen{info['generation']}"] += 1
    GC_SEEN["seconds"] += time.perf_counter() - _gc_start[0]


class Target(BaseModel):
    environment: str
    replicas: int = 2


def make_server(
    sink: Any, asks: int, spent: list[float], sinks: dict[str, Any] | None = None
) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("audit-bench")
    settings = install(server, ElicitSettings(audit=sink))

    @server.tool()
    async def deploy(ctx: Context) -> str:
        start = time.perf_counter()
        for i in range(asks):
            await ask(ctx, f"Where should build {i} go?", Target)
        spent.append((time.perf_counter() - start) / asks)
        return "ok"

    @server.tool()
    async def upkeep() -> str:
        """Run the trail's deferred work now (the journal merge), so it lands in the window; say
        the collections seen so far."""
        upkeep_now(settings.audit)
        return json.dumps(GC_SEEN)

    @server.tool()
    async def use(variant: str) -> str:
        """Audit the next calls with `variant`'s sink (over HTTP every variant is one process)."""
        settings.audit = (sinks or {})[variant]
        sqlite_sink.new_record_id = _uuid4_hex if variant == RANDOM_IDS else new_record_id
        return "ok"

    return server


def upkeep_now(sink: Any) -> None:
    """The sink's upkeep its writer thread would run later (merging the journal, a due WAL
    checkpoint), run now: each timed window pays for the records it made."""
    if hasattr(sink, "maintain"):
        sink.maintain()


async def answer(context: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"environment": "staging", "replicas": 3})


async def per_elicitation(sink: Any, asks: int, calls: int) -> tuple[float, float]:
    """(wall µs, process CPU µs) per elicitation, medians over the calls."""
    spent: list[float] = []
    cpu: list[float] = []
    async with Client(make_server(sink, asks, spent), mode="legacy", elicitation_callback=answer) as c:
        await c.call_tool("deploy", {})  # warm-up
        spent.clear()
        upkeep_now(sink)
        for _ in range(calls):
            start = time.process_time()
            await c.call_tool("deploy", {})
            upkeep_now(sink)
            cpu.append((time.process_time() - start) / asks)
    return statistics.median(spent) * 1e6, statistics.median(cpu) * 1e6


class ThreadOnly(SqliteAuditSink):
    """The shipped SQLite sink without `append_now`: every record hops to the writer thread."""

    append_now = None  # type: ignore[assignment]


class NoJournal(SqliteAuditSink):
    """The shipped SQLite sink without its journal: a lone record commits on the caller's thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._journaling = False


def keyed_sink(path: Path) -> SqliteAuditSink:
    """The shipped SQLite sink with a keyed checkpoint beside it: its journal lines are signed
    (an HMAC per record) and the checkpoint file is rewritten after every merge."""
    key = bytes(range(32))  # a fixed throw-away key: this trail is deleted after the run
    return SqliteAuditSink(path, checkpoint=Checkpoint(path.with_suffix(".checkpoint"), key))


def postgres_sink() -> Any | None:

    from mcp_elicit.audit.postgres import PostgresAuditSink
    from mcp_elicit.errors import AuditWriteError

    url = os.environ.get("MCP_ELICIT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
    try:
        return PostgresAuditSink(url, table=f"bench_ask_{uuid.uuid4().hex[:10]}")
    except AuditWriteError:
        return None


# The trail as it was before record ids put the time first: random ids (UUID4) spread the
# inserts over the whole index on ids.
RANDOM_IDS = "SQLite trail, UUID4 ids (before)"


def _uuid4_hex() -> str:
    return uuid.uuid4().hex


HTTP_VARIANTS = (
    "no audit",
    "no audit (again)",
    "SQLite trail",
    RANDOM_IDS,
    "SQLite trail, keyed checkpoint",
    "SQLite, no journal",
    "SQLite, via writer thread",
    "SQLite, power_loss",
)


def http_sink(variant: str, path: str) -> Any:
    if variant.startswith("no audit"):
        return None
    if variant == "SQLite, via writer thread":
        return ThreadOnly(path)
    if variant == "SQLite, no journal":
        return NoJournal(path)
    if variant == "SQLite trail, keyed checkpoint":
        return keyed_sink(Path(path))
    return SqliteAuditSink(
        path, durability="power_loss" if variant == "SQLite, power_loss" else "process_crash"
    )


def serve_http(db_dir: str, asks: int, freeze: bool) -> None:
    import logging

    from _rt_servers import _serve_http

    logging.disable(logging.INFO)
    sinks = {v: http_sink(v, str(Path(db_dir) / f"{k}.sqlite3")) for k, v in enumerate(HTTP_VARIANTS)}
    app = make_server(None, asks, [], sinks).streamable_http_app()
    if freeze:  # as `mcp-elicit serve-reference`, `serve-data` and `gateway` do
        freeze_startup_heap()
    gc.callbacks.append(_count_gc)
    _serve_http(app)


def user_system(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of the process so far, in clock ticks' resolution."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def server_cpu(pid: int) -> float:
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        with contextlib.suppress(OSError, ValueError):
            total += int(Path(path).read_text().split()[0])
    return total / 1e9


async def gc_seen(c: Client) -> dict[str, float]:
    result = await c.call_tool("upkeep", {})
    block = result.content[0]
    assert isinstance(block, t.TextContent)
    seen: dict[str, float] = json.loads(block.text)
    return seen


async def per_elicitation_http(
    port: int, pid: int, variant: str, asks: int, calls: int
) -> tuple[float, float, float, float]:
    """(client wall µs, server CPU µs, server collection µs, full collections) per elicitation
    over streamable HTTP, over all the calls."""
    async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy", elicitation_callback=answer) as c:
        await c.call_tool("use", {"variant": variant})
        await c.call_tool("deploy", {})  # warm-up
        gc0 = await gc_seen(c)
        us0 = user_system(pid)
        cpu0, start = server_cpu(pid), time.perf_counter()
        for _ in range(calls):
            await c.call_tool("deploy", {})
        wall = time.perf_counter() - start
        gc1 = await gc_seen(c)  # the merge of this window's records, in the window
        cpu = server_cpu(pid) - cpu0
        us1 = user_system(pid)
    n = calls * asks
    collecting = (gc1["seconds"] - gc0["seconds"]) / n * 1e6
    full = (gc1["gen2"] - gc0["gen2"]) / n
    system = (us1[1] - us0[1]) / n * 1e6
    return wall / n * 1e6, cpu / n * 1e6, collecting, full, system


def main_http(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        freeze = "no-freeze" if args.no_freeze else "freeze"
        cmd = [sys.executable, __file__, "--serve", tmp, str(args.asks), freeze]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            port = int(proc.stdout.readline().split()[1])
            names = [v for v in HTTP_VARIANTS if not args.only or v.startswith(("no audit", *args.only))]

            def one(n: str) -> Any:
                return anyio.run(per_elicitation_http, port, proc.pid, n, args.asks, args.calls)

            pooled: dict[str, list[Any]] = {n: [] for n in names}
            for rep in range(args.repeat):
                got = interleaved(names, args.rounds, one)
                report(f"repeat {rep + 1}", names, got, "server CPU")
                for n in names:
                    pooled[n] += got[n]
            report(f"all {args.repeat} repeats, every round", names, pooled, "server CPU")
            report_gc(names, pooled, args.asks * args.calls)
        finally:
            proc.kill()
            proc.wait()


def report(label: str, names: list[str], got: dict[str, list[Any]], cpu_name: str) -> None:
    wall = {n: [v[0] for v in got[n]] for n in names}
    cpu = {n: [v[1] for v in got[n]] for n in names}
    print(f"\n{label} ({conditions()})")
    print(f"| variant | wall µs | wall ratio (min-max) | {cpu_name} µs | {cpu_name} ratio (min-max) |")
    print("|---|---|---|---|---|")
    for n in names:
        w = fmt_ratio(ratios(wall[n], wall["no audit"]))
        c = fmt_ratio(ratios(cpu[n], cpu["no audit"]))
        mw, mc = statistics.median(wall[n]), statistics.median(cpu[n])
        print(f"| {n} | {mw:,.0f} | {w} | {mc:,.0f} | {c} |")


def report_gc(names: list[str], got: dict[str, list[Any]], per_window: int) -> None:
    """The server's collections per variant: their time per elicitation (mean, so the rare full
    collection counts), and full collections per 10,000 elicitations."""
    print(f"\nserver garbage collection, every round ({per_window} elicitations per window)")
    print(
        "| variant | collecting µs per elicitation (mean) | full collections per 10,000 | kernel µs (mean) |"
    )
    print("|---|---|---|---|")
    for n in names:
        spent = statistics.fmean(v[2] for v in got[n])
        full = statistics.fmean(v[3] for v in got[n]) * 10_000
        system = statistics.fmean(v[4] for v in got[n])
        print(f"| {n} | {spent:.1f} | {full:.1f} | {system:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--asks", type=int, default=20)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--transport", choices=["memory", "http"], default="memory")
    parser.add_argument(
        "--no-freeze",
        action="store_true",
        help="HTTP: leave the server's start-up heap unfrozen (the shipped servers freeze it)",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="PREFIX",
        help="HTTP: time only the variants whose name starts so (and the audit-free ones); repeatable",
    )
    parser.add_argument("--serve", nargs=3, metavar=("DB_DIR", "ASKS", "FREEZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_http(args.serve[0], int(args.serve[1]), args.serve[2] == "freeze")
        return
    print(conditions())
    if args.transport == "http":
        main_http(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        sinks: dict[str, Any] = {
            "no audit": None,
            "SQLite trail": SqliteAuditSink(Path(tmp) / "a.sqlite3"),
            "SQLite trail, keyed checkpoint": keyed_sink(Path(tmp) / "k.sqlite3"),
            "SQLite, no journal": NoJournal(Path(tmp) / "d.sqlite3"),
            "SQLite, via writer thread": ThreadOnly(Path(tmp) / "b.sqlite3"),
            "SQLite, power_loss": SqliteAuditSink(Path(tmp) / "c.sqlite3", durability="power_loss"),
        }
        pg = postgres_sink()
        if pg is not None:
            sinks["PostgreSQL trail"] = pg
        names = list(sinks)
        pooled: dict[str, list[Any]] = {n: [] for n in names}
        for rep in range(args.repeat):

            def one(n: str) -> Any:
                return anyio.run(per_elicitation, sinks[n], args.asks, args.calls)

            got = interleaved(names, args.rounds, one)
            report(f"repeat {rep + 1}", names, got, "CPU")
            for n in names:
                pooled[n] += got[n]
        report(f"all {args.repeat} repeats, every round", names, pooled, "CPU")
        if pg is not None:
            pg.drop()
            pg.close()
        for sink in sinks.values():
            if isinstance(sink, SqliteAuditSink):
                sink.close()


if __name__ == "__main__":
    main()

"""Many questions waiting at once over streamable HTTP: mcp-elicit `ask` against the raw SDK.

For each size N, a server runs in its own process (uvicorn on 127.0.0.1, a free port), once with
a tool that asks through mcp-elicit's `ask` and once with the raw SDK's `ctx.elicit`, in
alternating order. The clients are --workers processes (the server is what is measured, not
one client process's event loop): each owns a slice of the N questions, opens one session, starts
its tool calls at once (one HTTP request each) and holds every question until the parent says
go. With all N waiting the parent measures the server process: resident memory per waiting
question (RSS with N waiting minus RSS after one warm-up call, over N), and CPU time spent over
a fixed idle window of --idle seconds (the sum of the scheduler's run time of every thread of
the server, /proc/PID/task/*/schedstat, in ns: other load on the machine does not count in it,
only the server's own work). Then every worker answers its questions (each answer carries the
number from its own question) and the parent times until every call has returned; each worker
checks every result is the answer to its own question (misrouted = 0).
The CPU time the server and the
client processes spend from "go" until the last call returns is read the same way, per answer:
the time to answer all is wall time on a shared machine, the CPU per answer is what the answers
cost. `--repeat K` measures K pairs per size, the order alternating, and prints the median of
the paired ratios.
`--gc` has the server log every full (generation 2) garbage collection and counts those that
began in the idle window, with the time they took: with thousands of questions waiting, one full
collection walks the whole heap.

Idle CPU is the SDK's streamable HTTP keep-alive: sse_starlette pings every open event stream
every 15 s (`EventSourceResponse.DEFAULT_PING_INTERVAL`), i.e. N/15 pings a second, for both
variants alike. `--ping SECONDS` sets that interval in both servers, to show what is left.

Run: .venv/bin/python bench/waiting.py [--sizes 1000,3000] [--big] [--idle 10] [--settle 1] [--workers 4]
     [--ping S] [--bound 600] [--repeat K] [--gc]
(--big adds 10,000; each size is bounded by --bound seconds per variant.)
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import anyio
import httpx2
import mcp_types as t
import uvicorn
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

VARIANTS = ("raw SDK ctx.elicit", "mcp-elicit ask")
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")


class Reply(BaseModel):
    n: int


def make_server(variant: str) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("waiting-bench")
    if variant == "kit":
        from mcp_elicit.server import ElicitSettings, ask, install

        install(server, ElicitSettings(ask_timeout=3600.0))

        @server.tool()
        async def question(ctx: Context, n: int) -> str:
            answer = await ask(ctx, f"Question {n}", Reply)
            return str(answer.data.n) if answer.accepted and answer.data else "none"

    else:

        @server.tool()
        async def question(ctx: Context, n: int) -> str:
            result = await ctx.elicit(f"Question {n}", Reply)
            return str(result.data.n) if result.action == "accept" else "none"

    return server


def serve(variant: str, ping: float | None, gc_log: str | None = None) -> None:
    import logging

    logging.disable(logging.INFO)  # the SDK logs every session at INFO; keep the table readable
    if gc_log is not None:
        _log_full_collections(gc_log)
    if ping is not None:
        from sse_starlette import EventSourceResponse

        EventSourceResponse.DEFAULT_PING_INTERVAL = ping  # type: ignore[assignment]
    app = make_server(variant).streamable_http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", backlog=16384)
    ready = anyio.Event()

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            ready.set()

    server = Server(config)

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            await ready.wait()
            print(server.servers[0].sockets[0].getsockname()[1], flush=True)

    anyio.run(run)


def _log_full_collections(path: str) -> None:
    """Append "monotonic-time seconds-spent" to `path` for every full (generation 2) collection."""
    import gc

    started: list[float] = []
    log = open(path, "a", buffering=1)  # noqa: SIM115 - open for the server's lifetime

    def note(phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            started[:] = [time.monotonic()]
        elif started:
            log.write(f"{started[0]} {time.monotonic() - started[0]}\n")

    gc.callbacks.append(note)


def full_collections(path: str | None, start: float, end: float) -> tuple[int, float]:
    """(count, seconds) of the server's full collections that began in [start, end)."""
    if path is None:
        return 0, 0.0
    with open(path) as f:
        spans = [tuple(map(float, line.split())) for line in f if line.strip()]
    inside = [d for t0, d in spans if start <= t0 < end]
    return len(inside), sum(inside)


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE


def cpu_seconds(pid: int) -> float:
    """CPU time the process's threads have run, from the scheduler (ns precision)."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError):  # a thread that just ended
            continue
    return total / 1e9


def _session(url: str, bound: float, answer: Any) -> tuple[Any, Any]:
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
    http = httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(bound, connect=bound))
    client = Client(streamable_http_client(url, http_client=http), mode="legacy", elicitation_callback=answer)
    return http, client


async def _warm_up(port: int, bound: float) -> None:
    async def answer(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"n": int(params.message.rsplit(" ", 1)[1])})

    http, client = _session(f"http://127.0.0.1:{port}/mcp", bound, answer)
    with anyio.fail_after(bound):
        async with http, client:
            warm = await client.call_tool("question", {"n": -1})
            assert warm.content[0].text == "-1"  # type: ignore[union-attr]


async def _client_worker(port: int, first: int, end: int, bound: float) -> None:
    """One client process: holds questions first..end-1, prints "waiting", answers them all on a
    line from stdin, prints {"answered", "misrouted"} as JSON."""
    count = end - first
    waiting = 0
    all_waiting = anyio.Event()
    release = anyio.Event()
    results: dict[int, str] = {}

    def settled() -> None:  # a call that ended before asking counts too, so no worker hangs
        if waiting + len(results) >= count:
            all_waiting.set()

    async def answer(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        nonlocal waiting
        number = int(params.message.rsplit(" ", 1)[1])
        waiting += 1
        settled()
        await release.wait()
        return t.ElicitResult(action="accept", content={"n": number})

    http, client = _session(f"http://127.0.0.1:{port}/mcp", bound, answer)
    with anyio.fail_after(bound):
        async with http, client:

            async def one(i: int) -> None:
                done = await client.call_tool("question", {"n": i})
                content = done.content[0] if done.content else None
                results[i] = getattr(content, "text", "") if not done.is_error else "error"
                if not release.is_set():
                    settled()

            async with anyio.create_task_group() as tg:
                for i in range(first, end):
                    tg.start_soon(one, i)
                await all_waiting.wait()
                print("waiting", flush=True)
                await anyio.to_thread.run_sync(sys.stdin.readline)
                release.set()
    misrouted = sum(1 for i in range(first, end) if results.get(i) != str(i))
    print(
        json.dumps({"answered": sum(1 for r in results.values() if r != "error"), "misrouted": misrouted}),
        flush=True,
    )


def measure(variant: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    kind = "kit" if variant.startswith("mcp-elicit") else "raw"
    ping = [] if args.ping is None else ["--ping", str(args.ping)]
    gc_log = None
    if args.gc:
        fd, gc_log = tempfile.mkstemp(prefix="waiting-gc-")
        os.close(fd)
    gc_arg = [] if gc_log is None else ["--gc-log", gc_log]
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, *ping, *gc_arg], stdout=subprocess.PIPE, text=True
    )
    workers: list[subprocess.Popen[str]] = []
    signal.alarm(int(args.bound))  # the whole size, bounded: SIGALRM ends the bench
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        anyio.run(_warm_up, port, args.bound)
        base = rss(server.pid)
        cuts = [n * k // args.workers for k in range(args.workers + 1)]
        for first, end in itertools.pairwise(cuts):
            cmd = [sys.executable, __file__, "--client", str(port), str(first), str(end), str(args.bound)]
            workers.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        for w in workers:
            assert w.stdout is not None
            if w.stdout.readline().strip() != "waiting":
                raise RuntimeError("a client worker ended before its questions were waiting")
        time.sleep(args.settle)  # let the server settle before measuring
        held = rss(server.pid)
        c0, w0 = cpu_seconds(server.pid), time.monotonic()
        time.sleep(args.idle)
        idle_cpu, window = cpu_seconds(server.pid) - c0, time.monotonic() - w0
        collections = full_collections(gc_log, w0, w0 + window)
        started = time.perf_counter()
        server_cpu0 = cpu_seconds(server.pid)
        clients_cpu0 = sum(cpu_seconds(w.pid) for w in workers)
        for w in workers:
            assert w.stdin is not None
            w.stdin.write("go\n")
            w.stdin.flush()
        done = [json.loads(w.stdout.readline()) for w in workers if w.stdout is not None]
        answer_all = time.perf_counter() - started
        server_cpu = cpu_seconds(server.pid) - server_cpu0
        clients_cpu = sum(cpu_seconds(w.pid) for w in workers) - clients_cpu0
    finally:
        signal.alarm(0)
        for p in (*workers, server):
            p.kill()
            p.wait()
        if gc_log is not None:
            os.unlink(gc_log)
    return {
        "kb_per_question": (held - base) / n / 1024,
        "idle_cpu_ms": idle_cpu * 1000,
        "idle_cpu_pct": idle_cpu / window * 100,
        "full_gc": collections,
        "answer_all_s": answer_all,
        "server_ms_per_answer": server_cpu / n * 1000,
        "clients_ms_per_answer": clients_cpu / n * 1000,
        "answered": sum(d["answered"] for d in done),
        "misrouted": sum(d["misrouted"] for d in done),
    }


def _gc_note(full_gc: tuple[int, float]) -> str:
    count, spent = full_gc
    return f", {count} full GC {spent * 1000:.0f} ms" if count else ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", choices=["kit", "raw"])
    parser.add_argument("--client", nargs=4, metavar=("PORT", "FIRST", "END", "BOUND"))
    parser.add_argument("--sizes", default="1000,3000")
    parser.add_argument("--big", action="store_true", help="add 10,000 waiting questions")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of the idle CPU window")
    parser.add_argument("--settle", type=float, default=1.0, help="s before the window")
    parser.add_argument("--workers", type=int, default=4, help="client processes")
    parser.add_argument("--ping", type=float, default=None, help="SSE keep-alive interval (SDK: 15 s)")
    parser.add_argument("--bound", type=float, default=600.0)
    parser.add_argument("--repeat", type=int, default=1, help="pairs per size, the order alternating")
    parser.add_argument("--gc", action="store_true", help="count the server's full collections in the window")
    parser.add_argument("--gc-log", help=argparse.SUPPRESS)  # the server's side of --gc
    parser.add_argument("--kit-first", action="store_true", help="measure mcp-elicit first at the first size")
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.ping, args.gc_log)
        return
    if args.client:
        port, first, end, bound = args.client
        anyio.run(_client_worker, int(port), int(first), int(end), float(bound))
        return
    sizes = [int(s) for s in args.sizes.split(",")] + ([10_000] if args.big else [])
    load = os.getloadavg()[0]
    pings = "every 15 s (SDK default)" if args.ping is None else f"every {args.ping:g} s"
    print(
        f"{os.cpu_count()} cores, load {load:.1f}; {args.workers} client processes; idle {args.idle:g} s"
        f" after {args.settle:g} s; pings {pings}"
    )
    print(
        "| waiting | variant | kB per waiting question | idle CPU ms in window (% of a core) | answer all (s)"
        " | CPU per answer, server / clients (ms) | answered | misrouted | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    turn = 0
    for n in sizes:
        pairs: list[dict[str, float]] = []
        for _ in range(args.repeat):
            order = VARIANTS if (turn % 2 == 0) != args.kit_first else VARIANTS[::-1]
            turn += 1
            rows: dict[str, dict[str, Any]] = {}
            for v in order:
                r = rows[v] = measure(v, n, args)
                r["load"] = os.getloadavg()[0]
                print(
                    f"| {n:,} | {v} | {r['kb_per_question']:.1f} |"
                    f" {r['idle_cpu_ms']:.0f} ({r['idle_cpu_pct']:.2f} %){_gc_note(r['full_gc'])} |"
                    f" {r['answer_all_s']:.2f} |"
                    f" {r['server_ms_per_answer']:.2f} / {r['clients_ms_per_answer']:.2f} |"
                    f" {r['answered']:,} | {r['misrouted']} | {r['load']:.1f} |",
                    flush=True,
                )
            kit, raw = rows[VARIANTS[1]], rows[VARIANTS[0]]
            pairs.append(
                {
                    "mem": kit["kb_per_question"] / raw["kb_per_question"],
                    "time": kit["answer_all_s"] / raw["answer_all_s"],
                    "server": kit["server_ms_per_answer"] / raw["server_ms_per_answer"],
                    "clients": kit["clients_ms_per_answer"] / raw["clients_ms_per_answer"],
                }
            )
        summary = ", ".join(
            f"{key} {statistics.median(p[key] for p in pairs):.2f}×"
            f" ({min(p[key] for p in pairs):.2f}-{max(p[key] for p in pairs):.2f})"
            for key in ("mem", "time", "server", "clients")
        )
        print(f"{n:,} waiting, mcp-elicit / raw SDK, median (min-max) of {len(pairs)} paired runs: {summary}")


if __name__ == "__main__":
    main()

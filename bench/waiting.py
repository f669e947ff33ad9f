"""Many questions waiting at once over streamable HTTP: mcp-elicit `ask` against the raw SDK.

For each size N, a server runs in its own process (uvicorn on 127.0.0.1, a free port), once with
a tool that asks through mcp-elicit's `ask` and once with the raw SDK's `ctx.elicit`, in
alternating order. One client session starts N tool calls at once (one HTTP request each) and
holds every question until all N are waiting. Then it measures the server process: resident
memory per waiting question (RSS with N waiting minus RSS after one warm-up call, over N), and
CPU while idle (over --idle seconds, from /proc). Then it answers every question (each answer
carries the number from its own question) and times until every call has returned, checking
each result is the answer to its own question (misrouted = 0).

Run: .venv/bin/python bench/waiting.py [--sizes 1000,3000] [--big] [--idle 3] [--bound 300]
(--big adds 10,000; each size is bounded by --bound seconds per variant.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
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


def serve(variant: str) -> None:
    import logging

    logging.disable(logging.INFO)  # the SDK logs every session at INFO; keep the table readable
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


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def measure(variant: str, n: int, idle: float, bound: float) -> dict[str, Any]:
    kind = "kit" if variant.startswith("mcp-elicit") else "raw"
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        return anyio.run(_drive, proc.pid, port, n, idle, bound)
    finally:
        proc.kill()
        proc.wait()


async def _drive(pid: int, port: int, n: int, idle: float, bound: float) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}/mcp"
    waiting = 0
    all_waiting = anyio.Event()
    release = anyio.Event()

    async def answer(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        nonlocal waiting
        number = int(params.message.rsplit(" ", 1)[1])
        waiting += 1
        if waiting >= n:
            all_waiting.set()
        if number >= 0:
            await release.wait()
        return t.ElicitResult(action="accept", content={"n": number})

    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
    http = httpx2.AsyncClient(limits=limits, timeout=httpx2.Timeout(bound, connect=bound))
    results: dict[int, str] = {}
    with anyio.fail_after(bound):
        async with (
            http,
            Client(
                streamable_http_client(url, http_client=http), mode="legacy", elicitation_callback=answer
            ) as client,
        ):
            warm = await client.call_tool("question", {"n": -1})  # not held
            assert warm.content[0].text == "-1"  # type: ignore[union-attr]
            waiting = 0
            base = rss(pid)

            async def one(i: int) -> None:
                done = await client.call_tool("question", {"n": i})
                results[i] = done.content[0].text  # type: ignore[union-attr]

            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(one, i)
                await all_waiting.wait()
                await anyio.sleep(1.0)  # let the server settle before measuring
                held = rss(pid)
                c0, w0 = cpu_seconds(pid), time.monotonic()
                await anyio.sleep(idle)
                idle_cpu = (cpu_seconds(pid) - c0) / (time.monotonic() - w0)
                started = time.perf_counter()
                release.set()
            answer_all = time.perf_counter() - started
    misrouted = sum(1 for i in range(n) if results.get(i) != str(i))
    return {
        "kb_per_question": (held - base) / n / 1024,
        "idle_cpu_pct": idle_cpu * 100,
        "answer_all_s": answer_all,
        "answered": len(results),
        "misrouted": misrouted,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", choices=["kit", "raw"])
    parser.add_argument("--sizes", default="1000,3000")
    parser.add_argument("--big", action="store_true", help="add 10,000 waiting questions")
    parser.add_argument("--idle", type=float, default=3.0)
    parser.add_argument("--bound", type=float, default=300.0)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    sizes = [int(s) for s in args.sizes.split(",")] + ([10_000] if args.big else [])
    print(
        "| waiting | variant | kB per waiting question | idle CPU (% of a core) | answer all (s)"
        " | answered | misrouted |"
    )
    print("|---|---|---|---|---|---|---|")
    for k, n in enumerate(sizes):
        order = VARIANTS if k % 2 == 0 else VARIANTS[::-1]
        rows = {v: measure(v, n, args.idle, args.bound) for v in order}
        raw = rows[VARIANTS[0]]
        for v in VARIANTS:
            r = rows[v]
            ratio = (
                ""
                if v == VARIANTS[0]
                else (
                    f" ({r['kb_per_question'] / raw['kb_per_question']:.2f}× mem,"
                    f" {r['answer_all_s'] / raw['answer_all_s']:.2f}× time)"
                )
            )
            print(
                f"| {n:,} | {v}{ratio} | {r['kb_per_question']:.1f} | {r['idle_cpu_pct']:.1f} |"
                f" {r['answer_all_s']:.2f} | {r['answered']:,} | {r['misrouted']} |",
                flush=True,
            )


if __name__ == "__main__":
    main()

"""Many concurrent sessions through one gateway, each with one question pending: memory, time, none lost.

One upstream process (a raw-SDK server over streamable HTTP: `ask_token(token)` asks a form whose
message names the token and returns "<argument>:<answer>"), one gateway process (`Gateway` over
streamable HTTP on 127.0.0.1 with a `users` map: `--users` users, `--sessions` / `--users`
sessions each), and `--workers` client processes of SDK `Client`s over streamable HTTP, each
session with its own bearer token's user and its own random token. Phases:
1. every session connects and lists tools (gateway RSS: idle, then with the sessions open);
2. every session calls `ask_token` at once; each question is held by the client until all
   `--sessions` are pending (gateway RSS with them all pending);
3. all answer at once; the time until every result is back. A result counts as right only if the
   question named the session's token and the result is "<token>:<token>": a lost question or
   result, or one routed to another session, shows as missing or wrong.
Guardrails on (schema gate, secret guard, URL checks, policy, rate limits with the burst raised
from 5 to 8 questions in 10 s so each of a user's 8 sessions may ask at once; no audit sink: the
per-record cost is in bench/gateway.py). MAX_PENDING_PER_USER (8) is kept, so users x 8 >=
sessions; MAX_POOLS is raised to `--users` (`Gateway(max_pools=...)`).

Run: .venv/bin/python bench/gateway_sessions.py [--sessions 1000] [--users 125] [--workers 4]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _stats import uptime

PHASE_SECONDS = float(
    os.environ.get("GW_SESSIONS_PHASE_SECONDS", "600")
)  # every phase is bounded; a stuck run ends with what it reached
OPEN_AT_ONCE = 16  # sessions a worker connects at the same time
MAX_SESSIONS = 2000


class Token(BaseModel):
    token: str


def upstream_main(port_q: Any) -> None:
    from _gw_proxies import _serve_http_async

    server: MCPServer[Any] = MCPServer("sessions-upstream", log_level="WARNING")

    @server.tool()
    async def ask_token(ctx: Context, token: str) -> str:
        answer = await ctx.elicit(f"Token for {token}?", Token)
        return f"{token}:{answer.data.token}" if answer.action == "accept" and answer.data else answer.action

    anyio.run(_serve_http_async, server.streamable_http_app(), port_q.put)


def gateway_main(upstream_url: str, users: dict[str, str], max_pools: int, port_q: Any) -> None:
    import logging

    from mcp_elicit.core.policy import RATE_BURST, RATE_SUSTAINED, Policy, RateLimit
    from mcp_elicit.gateway import Gateway, parse_config
    from mcp_elicit.gateway.relay import MAX_PENDING_PER_USER

    logging.basicConfig(level=os.environ.get("GW_SESSIONS_LOG", "WARNING"))
    config = parse_config(json.dumps({"mcpServers": {"up": {"url": upstream_url}}, "users": users}))

    # RATE_BURST (5 in 10 s per user and server) would refuse a user's 6th to 8th session asking
    # at the same moment: the burst raised to MAX_PENDING_PER_USER, the sustained window kept.
    burst = RateLimit(MAX_PENDING_PER_USER, RATE_BURST[1])
    policy = Policy(form="allow", url="allow", rate_limits=(burst, RateLimit(*RATE_SUSTAINED)))

    async def serve() -> None:
        async with Gateway(config, policy=policy, max_pools=max_pools) as gw:
            await gw.serve_http("127.0.0.1", 0, started=port_q.put)

    anyio.run(serve)


def worker_main(url: str, tokens: list[str], total: int, pending: Any, go: Any, out: Any) -> None:
    """One client process: its sessions (bearer token per session), each asking once."""
    import httpx2
    import mcp_types as t
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> None:
        results: dict[str, str] = {}
        wrong_question = 0
        all_pending = anyio.Event()

        async def one(bearer: str, token: str, opened: Any, limiter: anyio.CapacityLimiter) -> None:
            nonlocal wrong_question

            async def answer(ctx: Any, params: Any) -> t.ElicitResult:
                nonlocal wrong_question
                if token not in params.message:
                    wrong_question += 1
                with pending.get_lock():
                    pending.value += 1
                await all_pending.wait()
                return t.ElicitResult(action="accept", content={"token": token})

            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {bearer}"}, timeout=PHASE_SECONDS)
            transport = streamable_http_client(url, http_client=http)
            async with limiter:
                client = Client(transport, mode="legacy", elicitation_callback=answer)
                await client.__aenter__()  # left in this task below (the SDK's scopes need it)
            try:
                await client.list_tools()
                opened.append(client)
                if len(opened) == len(tokens):
                    all_open.set()
                await started.wait()
                result = await client.call_tool("ask_token", {"token": token})
                results[token] = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                if len(results) == len(tokens):
                    all_back.set()
                await closing.wait()
            finally:
                await client.__aexit__(None, None, None)

        started = anyio.Event()
        closing = anyio.Event()
        all_open, all_back = anyio.Event(), anyio.Event()
        opened: list[Any] = []
        limiter = anyio.CapacityLimiter(OPEN_AT_ONCE)
        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for bearer, token in tokens:
                tg.start_soon(one, bearer, token, opened, limiter)
            with anyio.fail_after(PHASE_SECONDS):
                await all_open.wait()
            out.put(("opened", time.perf_counter() - t0))
            await anyio.to_thread.run_sync(go["call"].wait)
            started.set()
            await anyio.to_thread.run_sync(go["answer"].wait)
            t1 = time.perf_counter()
            all_pending.set()
            with anyio.fail_after(PHASE_SECONDS):
                await all_back.wait()
            elapsed = time.perf_counter() - t1
            right = sum(1 for tok, text in results.items() if text == f"{tok}:{tok}")
            sample = next((text for tok, text in results.items() if text != f"{tok}:{tok}"), "")
            out.put(("done", elapsed, right, len(results), wrong_question, sample[:200]))
            closing.set()

    try:
        anyio.run(run)
    except Exception as exc:  # reported, so the coordinator says how far it got
        out.put(("failed", f"{type(exc).__name__}: {exc}"[:300]))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) `pid` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for(q: Any, what: str, n: int, seconds: float) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + seconds
    while len(got) < n:
        item = q.get(timeout=max(0.1, deadline - time.monotonic()))
        if item[0] == "failed":
            raise RuntimeError(f"a client worker failed: {item[1]}")
        if item[0] != what:
            raise RuntimeError(f"expected {what}, got {item}")
        got.append(item)
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--users", type=int, default=125)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--direct", action="store_true", help="the clients talk to the upstream itself")
    args = parser.parse_args()
    sessions = min(args.sessions, MAX_SESSIONS)
    users_n = max(1, min(args.users, sessions))
    ctx = mp.get_context("spawn")
    where = "straight to the upstream (no gateway)" if args.direct else "through one gateway"
    print(f"sessions {where}: {sessions} of {users_n} users, {args.workers} client processes")
    print(f"uptime: {uptime()}")

    port_q = ctx.Queue()
    upstream = ctx.Process(target=upstream_main, args=(port_q,), daemon=True)
    upstream.start()
    upstream_url = f"http://127.0.0.1:{port_q.get(timeout=60)}/mcp"
    bearers = {secrets.token_urlsafe(24): f"user{i}" for i in range(users_n)}
    gw = ctx.Process(target=gateway_main, args=(upstream_url, bearers, users_n, port_q), daemon=True)
    if args.direct:  # the same sessions straight to the upstream: the SDK server's own figures
        url, measured = upstream_url, upstream
    else:
        gw.start()
        url, measured = f"http://127.0.0.1:{port_q.get(timeout=60)}/mcp", gw
    time.sleep(1.0)  # let the measured process settle before its idle RSS is read
    pid: int = measured.pid  # type: ignore[assignment]
    rss_idle = rss_mb(pid)
    cpu = {"start": cpu_s(pid)}

    keys = list(bearers)
    plan = [(keys[i % users_n], secrets.token_hex(8)) for i in range(sessions)]
    pending = ctx.Value("i", 0)
    go = {"call": ctx.Event(), "answer": ctx.Event()}
    out = ctx.Queue()
    workers = [
        ctx.Process(target=worker_main, args=(url, plan[w :: args.workers], sessions, pending, go, out))
        for w in range(args.workers)
    ]
    for w in workers:
        w.start()
    try:
        opened = wait_for(out, "opened", len(workers), PHASE_SECONDS)
        rss_open = rss_mb(pid)
        cpu["open"] = cpu_s(pid)
        print(f"  all {sessions} sessions open in {max(o[1] for o in opened):.1f} s")
        go["call"].set()
        t0 = time.monotonic()
        while pending.value < sessions and time.monotonic() - t0 < PHASE_SECONDS:
            time.sleep(0.05)
        reached = pending.value
        rss_pending = rss_mb(pid)
        cpu["pending"] = cpu_s(pid)
        print(f"  {reached} questions pending at the clients {time.monotonic() - t0:.1f} s after the calls")
        go["answer"].set()
        done = wait_for(out, "done", len(workers), PHASE_SECONDS)
        cpu["done"] = cpu_s(pid)
    finally:
        go["call"].set()
        go["answer"].set()
        for w in workers:
            w.join(timeout=30)
        for p in (gw, upstream) if not args.direct else (upstream,):
            p.terminate()
            p.join(timeout=10)
    elapsed = max(d[1] for d in done)
    right = sum(d[2] for d in done)
    answered = sum(d[3] for d in done)
    wrong_q = sum(d[4] for d in done)
    sample = next((d[5] for d in done if d[5]), "")
    kb = {
        k: v * 1024 / sessions
        for k, v in (("open", rss_open - rss_idle), ("pending", rss_pending - rss_open))
    }
    who = "upstream (direct)" if args.direct else "gateway"
    print(
        f"  {who} CPU: {cpu['open'] - cpu['start']:.1f} s opening, "
        f"{cpu['pending'] - cpu['open']:.1f} s asking, {cpu['done'] - cpu['pending']:.1f} s answering"
    )
    print(
        f"  {who} RSS: idle {rss_idle:.1f} MB, sessions open {rss_open:.1f} MB, "
        f"all pending {rss_pending:.1f} MB"
    )
    print(
        f"  per session: {kb['open']:.0f} KB open{'' if args.direct else ' (with its share of a pool)'}, "
        f"{kb['pending']:.0f} KB more with its question pending; "
        f"{sum(kb.values()):.0f} KB in all"
    )
    print(f"  all answered: {answered} results back {elapsed:.2f} s after the answers were sent")
    print(
        f"  right: {right}/{sessions}; lost: {sessions - answered}; wrong or misrouted results: "
        f"{answered - right}; questions naming another session's token: {wrong_q}"
    )
    if sample:
        print(f"  a result that was not right: {sample!r}")
    print(f"uptime: {uptime()}")


if __name__ == "__main__":
    main()

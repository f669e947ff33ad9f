"""µs per form elicitation: mcp-elicit's `ask`, the raw SDK and FastMCP, all driven by one SDK client.

Run: .venv/bin/python bench/roundtrip.py [--calls N] [--rounds R] [--quick] [--transports ...]

What is measured: each server has a tool that asks one four-field form (answered "accept" by the
SDK client's `elicitation_callback`) and a `noop` tool that asks nothing. The cost of one
elicitation is (µs per call of the asking tool) - (µs per `noop` call on the same connection, in
the same round): the tool call around the question is the same for every server and would only
dilute the ratios.
- push (2025-11-25): mcp-elicit `ask`, the raw SDK's `ctx.elicit`, FastMCP's `ctx.elicit`;
- pull (2026-07-28): mcp-elicit `ask`, the raw SDK's resolver path (`Resolve` + `Elicit`);
- in memory, over stdio (the server in its own process) and over streamable HTTP on 127.0.0.1
  (the server in its own process, under uvicorn);
- optionally (--audit) `ask` with a server-side SQLite consent trail, in memory.
Every server is driven by the same `mcp.client.Client`. Floors printed beside: the SDK's own round
trip with no elicitation (`noop`, and `send_ping`), and a bare JSON-RPC ping written straight to
the server process (stdio lines, or one HTTP POST) with no client library.

Within a round the variants of a transport take turns call by call (one call each, the order
reversed on every pass and every round), so a change of load on the machine hits them alike; figures
are medians over rounds, ratios are paired within a round and shown with their min-max.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import mcp_types as t
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from _rt_servers import ANSWER, fastmcp_server, ours, raw_sdk
from _stats import conditions, fmt_ratio, ratios

SERVERS = Path(__file__).resolve().parent / "_rt_servers.py"
PROTOCOL = "2025-11-25"
STARTUP_BOUND_SECONDS = 30.0


async def accept(context: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content=dict(ANSWER))


def stdio_params(kind: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(SERVERS), kind, "stdio"])


@asynccontextmanager
async def http_process(kind: str) -> AsyncIterator[str]:
    """Start a server in its own process on 127.0.0.1 and yield its MCP URL."""
    async with await anyio.open_process([sys.executable, str(SERVERS), kind, "http"]) as process:
        assert process.stdout is not None
        try:
            buffered = b""
            with anyio.fail_after(STARTUP_BOUND_SECONDS):
                while b"\n" not in buffered:
                    buffered += await process.stdout.receive()
            port = int(buffered.split(b"PORT ", 1)[1].split(b"\n", 1)[0])
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()


# --- bare JSON-RPC floors: no client library ------------------------------------------------------

_INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class RawStdio:
    """JSON-RPC pings written as lines to a server's stdin, answers read from its stdout."""

    def __init__(self, process: Any) -> None:
        self.process, self.buffered, self.next_id = process, b"", 1

    async def request(self, message: dict[str, Any]) -> None:
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")
        if "id" in message:
            while b"\n" not in self.buffered:
                self.buffered += await self.process.stdout.receive()
            _, self.buffered = self.buffered.split(b"\n", 1)

    async def ping(self) -> None:
        self.next_id += 1
        await self.request({"jsonrpc": "2.0", "id": self.next_id, "method": "ping"})


@asynccontextmanager
async def raw_stdio(kind: str) -> AsyncIterator[RawStdio]:
    async with await anyio.open_process([sys.executable, str(SERVERS), kind, "stdio"]) as process:
        raw = RawStdio(process)
        with anyio.fail_after(STARTUP_BOUND_SECONDS):
            await raw.request(_INIT)
        await raw.request(_INITIALIZED)
        try:
            yield raw
        finally:
            process.terminate()


class RawHttp:
    """JSON-RPC pings as plain HTTP POSTs (httpx, keep-alive) to a streamable HTTP endpoint."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http, self.url, self.next_id = http, url, 1
        self.headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    async def start(self) -> None:
        reply = await self.http.post(self.url, json=_INIT, headers=self.headers)
        reply.raise_for_status()
        session = reply.headers.get("mcp-session-id")
        if session:
            self.headers["mcp-session-id"] = session
        self.headers["mcp-protocol-version"] = PROTOCOL
        await self.http.post(self.url, json=_INITIALIZED, headers=self.headers)

    async def ping(self) -> None:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": "ping"}
        reply = await self.http.post(self.url, json=message, headers=self.headers)
        reply.raise_for_status()


# --- the measured variants ------------------------------------------------------------------------

Op = Callable[[], Awaitable[object]]


async def connect(stack: AsyncExitStack, target: Any, mode: str) -> Client:
    client = Client(target, mode=mode, elicitation_callback=accept)  # type: ignore[arg-type]
    return await stack.enter_async_context(client)


async def build(stack: AsyncExitStack, transport: str, audit: bool) -> dict[str, Op]:
    """Operations of one transport, by name: 'push|<server>|ask', 'push|<server>|noop', floors."""
    ops: dict[str, Op] = {}

    def tool(client: Client, name: str) -> Op:
        return lambda: client.call_tool(name, {})

    for kind in ("ours", "sdk", "fastmcp"):
        if transport == "memory":
            server = {"ours": ours, "sdk": raw_sdk, "fastmcp": lambda: fastmcp_server()._mcp_server}[kind]()
            targets = {"legacy": server, "2026-07-28": server}
        elif transport == "stdio":
            targets = {"legacy": stdio_params(kind), "2026-07-28": stdio_params(kind)}
        else:
            url = await stack.enter_async_context(http_process(kind))
            targets = {"legacy": url, "2026-07-28": url}
        push = await connect(stack, targets["legacy"], "legacy")
        ops[f"push|{kind}|ask"] = tool(push, "ask_one")
        ops[f"push|{kind}|noop"] = tool(push, "noop")
        if kind == "sdk":
            ops["floor|SDK ping"] = push.send_ping
        if kind != "fastmcp":
            pull = await connect(stack, targets["2026-07-28"], "2026-07-28")
            ops[f"pull|{kind}|ask"] = tool(pull, "ask_one_resolved" if kind == "sdk" else "ask_one")
            ops[f"pull|{kind}|noop"] = tool(pull, "noop")
    if transport == "stdio":
        ops["floor|bare JSON-RPC ping"] = (await stack.enter_async_context(raw_stdio("sdk"))).ping
    elif transport == "http":
        raw = RawHttp(
            await stack.enter_async_context(httpx.AsyncClient()),
            await stack.enter_async_context(http_process("sdk")),
        )
        await raw.start()
        ops["floor|bare JSON-RPC ping"] = raw.ping
    if audit and transport == "memory":
        from mcp_elicit.audit.sqlite import SqliteAuditSink

        folder = stack.enter_context(tempfile.TemporaryDirectory())
        sink = SqliteAuditSink(Path(folder) / "audit.sqlite3")
        stack.callback(sink.close)
        audited = await connect(stack, ours(sink), "legacy")
        ops["push|ours+SQLite audit|ask"] = tool(audited, "ask_one")
        ops["push|ours+SQLite audit|noop"] = tool(audited, "noop")
    return ops


async def round_robin(ops: dict[str, Op], calls: int, forward: bool) -> dict[str, float]:
    """µs per call of every operation, taking turns call by call so load hits them alike."""
    names = list(ops) if forward else list(reversed(ops))
    spent = dict.fromkeys(names, 0.0)
    for i in range(calls):
        for name in names if i % 2 == 0 else reversed(names):
            start = time.perf_counter()
            await ops[name]()
            spent[name] += time.perf_counter() - start
    return {name: total / calls * 1e6 for name, total in spent.items()}


LABELS = {
    "ours": "mcp-elicit ask",
    "sdk": "raw SDK ctx.elicit",
    "fastmcp": "FastMCP ctx.elicit",
    "ours+SQLite audit": "mcp-elicit ask + SQLite audit",
}


def report(transport: str, samples: dict[str, list[float]]) -> None:
    per: dict[str, list[float]] = {}  # per-elicitation µs, per round
    for name, values in samples.items():
        if name.startswith("floor|"):
            continue
        era, kind, what = name.split("|")
        if what == "ask":
            per[f"{era}|{kind}"] = [a - b for a, b in zip(values, samples[f"{era}|{kind}|noop"], strict=True)]
    ping = samples["floor|SDK ping"]
    print(f"\n{transport}: µs per elicitation = call with one question - noop call (median)")
    order = ["push|sdk", "push|ours", "push|fastmcp", "push|ours+SQLite audit", "pull|sdk", "pull|ours"]
    per = {key: per[key] for key in order if key in per}
    print(
        f"  {'era':5s} {'variant':32s} {'per elicit.':>11s} {'whole call':>10s} {'noop call':>9s}  vs raw SDK"
    )
    for key, values in per.items():
        era, kind = key.split("|")
        base_key = f"{era}|sdk"
        label = "raw SDK Resolve+Elicit" if (era, kind) == ("pull", "sdk") else LABELS[kind]
        vs = "1.00x" if kind == "sdk" else fmt_ratio(ratios(values, per[base_key]))
        print(
            f"  {era:5s} {label:32s} {statistics.median(values):11.0f} "
            f"{statistics.median(samples[f'{key}|ask']):10.0f} "
            f"{statistics.median(samples[f'{key}|noop']):9.0f}  {vs}"
        )
    print(f"  floor: SDK ping round trip {statistics.median(ping):.0f} µs", end="")
    if "floor|bare JSON-RPC ping" in samples:
        print(f"; bare JSON-RPC ping {statistics.median(samples['floor|bare JSON-RPC ping']):.0f} µs", end="")
    print()
    for key, values in per.items():
        if key.endswith("|ours"):
            print(
                f"  {key.split('|')[0]} mcp-elicit ask per elicitation / SDK ping: "
                f"{fmt_ratio(ratios(values, ping))}"
            )


async def main(args: argparse.Namespace) -> None:
    # send_ping warns that ping is gone in 2026-07-28; it is only used on legacy sessions here.
    warnings.filterwarnings("ignore", message="ping is removed")
    print(conditions())
    async with AsyncExitStack() as stack:
        ops: dict[str, dict[str, Op]] = {}
        for transport in args.transports:
            ops[transport] = await build(stack, transport, args.audit)
        samples: dict[str, dict[str, list[float]]] = {tr: {name: [] for name in ops[tr]} for tr in ops}
        for tr in ops:
            await round_robin(ops[tr], 2, True)  # warm-up: connections, caches
        started = time.perf_counter()
        for r in range(args.rounds):
            for tr in args.transports if r % 2 == 0 else reversed(args.transports):
                calls = args.calls if tr == "memory" else max(args.calls // 2, 5)
                for name, micros in (await round_robin(ops[tr], calls, r % 2 == 0)).items():
                    samples[tr][name].append(micros)
        print(
            f"{args.rounds} rounds, {args.calls} calls per variant in memory, "
            f"{max(args.calls // 2, 5)} over stdio/HTTP, variants taking turns call by call; "
            f"{time.perf_counter() - started:.0f} s"
        )
        for tr in args.transports:
            report(tr, samples[tr])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--calls", type=int, default=200, help="calls per variant per round in memory (half over stdio/HTTP)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians are reported")
    parser.add_argument(
        "--transports", nargs="+", default=["memory", "stdio", "http"], choices=["memory", "stdio", "http"]
    )
    parser.add_argument(
        "--audit", action="store_true", help="also ask with a server-side SQLite consent trail"
    )
    parser.add_argument("--quick", action="store_true", help="2 rounds of 40 calls")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.calls, arguments.rounds = 40, 2
    anyio.run(main, arguments)

"""Cost per 2026-07-28 call as a server keeps serving: mcp-elicit `ask` against the raw SDK, same run.

Run: .venv/bin/python bench/longrun.py [--calls N] [--block B] [--window W] [--quick]

One server of each kind stays up for the whole run (in memory, one SDK client each, so the
figures show the server's own growth, not transport noise) and serves N calls (default 20,000) of
a tool that asks one four-field form on the 2026-07-28 path: each call is a `tools/call` answered
with an InputRequiredResult, then the retry carrying the answer and the sealed requestState. The
two servers take turns of B calls (default 100), alternating which goes first, so a change of load
on the machine hits both alike. Each table row covers a window of calls served (default 2,000):
the median µs per call of each server's turns in it and the median (min-max) of the paired ratios
of its turns. A flat ratio means nothing grows with the calls served (requestState nonces, caches,
logs).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
import mcp_types as t
from mcp.client import Client

from _rt_servers import ANSWER, ours, raw_sdk
from _stats import conditions


async def accept(context: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content=dict(ANSWER))


async def block(client: Client, tool: str, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        result = await client.call_tool(tool, {})
        if result.is_error:
            raise SystemExit(f"{tool} failed: {result}")
    return (time.perf_counter() - start) / calls * 1e6


async def main(args: argparse.Namespace) -> None:
    print(conditions())
    async with (
        Client(ours(), mode="2026-07-28", elicitation_callback=accept) as ask_client,
        Client(raw_sdk(), mode="2026-07-28", elicitation_callback=accept) as sdk_client,
    ):
        variants = {
            "mcp-elicit ask": (ask_client, "ask_one"),
            "raw SDK Resolve+Elicit": (sdk_client, "ask_one_resolved"),
        }
        for client, tool in variants.values():
            await client.call_tool(tool, {})  # warm-up (not counted)
        blocks: list[tuple[int, float, float]] = []  # (calls served, ask µs/call, SDK µs/call)
        served, started = 0, time.perf_counter()
        while served < args.calls:
            names = list(variants) if (served // args.block) % 2 == 0 else list(reversed(variants))
            got: dict[str, float] = {}
            for name in names:
                got[name] = await block(*variants[name], args.block)
            served += args.block
            blocks.append((served, got["mcp-elicit ask"], got["raw SDK Resolve+Elicit"]))
        elapsed = time.perf_counter() - started
    print(f"{served:,} calls per server in turns of {args.block}, in memory; {elapsed:.0f} s")
    print("per window of calls served: median µs per call, median ratio of paired turns (min-max)")
    print(f"{'calls served':>14s} {'ask µs/call':>12s} {'raw SDK µs/call':>16s}  ratio")
    per_window = max(1, args.window // args.block)
    windows = [blocks[i : i + per_window] for i in range(0, len(blocks), per_window)]
    for window in windows:
        rs = [a / b for _, a, b in window]
        span = f"{window[0][0] - args.block + 1:,}-{window[-1][0]:,}"
        print(
            f"{span:>14s} {statistics.median(a for _, a, _ in window):>12,.0f} "
            f"{statistics.median(b for _, _, b in window):>16,.0f}  "
            f"{statistics.median(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})"
        )
    first = statistics.median(a / b for _, a, b in windows[0])
    last = statistics.median(a / b for _, a, b in windows[-1])
    print(f"ratio in the last window / ratio in the first: {last / first:.2f} (flat is 1.00)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=20_000, help="calls per server (default 20,000)")
    parser.add_argument("--block", type=int, default=100, help="calls per turn (default 100)")
    parser.add_argument("--window", type=int, default=2_000, help="calls per table row (default 2,000)")
    parser.add_argument("--quick", action="store_true", help="3,000 calls, rows of 500 (a smoke run)")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.calls, arguments.window = 3_000, 500
    anyio.run(main, arguments)

"""Cost per 2026-07-28 call as a server keeps serving: mcp-elicit `ask` against the raw SDK, same run.

Run: .venv/bin/python bench/longrun.py [--calls N] [--block B] [--quick]

One server of each kind stays up for the whole run (in memory, one SDK client each, so the
figures show the server's own growth, not transport noise) and serves N calls (default 20,000) of
a tool that asks one four-field form on the 2026-07-28 path: each call is a `tools/call` answered
with an InputRequiredResult, then the retry carrying the answer and the sealed requestState. The
two servers take turns in blocks of B calls, alternating which goes first. The table gives µs per
call in the block ending at each checkpoint and the ratio to the raw SDK's block in the same turn;
a flat ratio means nothing grows with the calls served (requestState nonces, caches, logs).
"""

from __future__ import annotations

import argparse
import gc
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
        rows: list[tuple[int, float, float]] = []
        served, started = 0, time.perf_counter()
        while served < args.calls:
            names = list(variants) if (served // args.block) % 2 == 0 else list(reversed(variants))
            got: dict[str, float] = {}
            for name in names:
                gc.collect()  # a collection lands in neither block's timing by chance
                got[name] = await block(*variants[name], args.block)
            served += args.block
            rows.append((served, got["mcp-elicit ask"], got["raw SDK Resolve+Elicit"]))
        elapsed = time.perf_counter() - started
    print(f"{served:,} calls per server, blocks of {args.block}, in memory; {elapsed:.0f} s")
    print(f"{'calls served':>12s} {'ask µs/call':>12s} {'raw SDK µs/call':>16s} {'ratio':>6s}")
    step = max(1, len(rows) // 10)
    for i, (n, ours_us, sdk_us) in enumerate(rows):
        if i == 0 or (i + 1) % step == 0 or i == len(rows) - 1:
            print(f"{n:>12,} {ours_us:>12,.0f} {sdk_us:>16,.0f} {ours_us / sdk_us:>6.2f}x")
    first = [r[1] / r[2] for r in rows[: max(1, len(rows) // 5)]]
    last = [r[1] / r[2] for r in rows[-max(1, len(rows) // 5) :]]
    print(
        f"ratio, first fifth of the run {statistics.median(first):.2f}x ({min(first):.2f}-{max(first):.2f}), "
        f"last fifth {statistics.median(last):.2f}x ({min(last):.2f}-{max(last):.2f})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=20_000, help="calls per server (default 20,000)")
    parser.add_argument("--block", type=int, default=500, help="calls per turn (default 500)")
    parser.add_argument("--quick", action="store_true", help="3,000 calls in blocks of 250 (a smoke run)")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.calls, arguments.block = 3_000, 250
    anyio.run(main, arguments)

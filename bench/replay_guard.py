"""The in-memory replay guard's cost per request at 1,000, 10,000 and 100,000 live nonces.

Each size fills the guard with that many live nonces, then times --requests consumes of fresh
nonces while the oldest ones expire at the same rate (a steady state: as many expire as arrive),
so the table stays at its size. Printed beside: a bare dict insert-and-lookup, the floor.

Run: .venv/bin/python bench/replay_guard.py [--requests N] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from mcp_elicit.server.replay import MemoryReplayGuard

SIZES = (1_000, 10_000, 100_000)


async def guard_cost(live: int, requests: int) -> float:
    guard = MemoryReplayGuard()
    for i in range(live):
        await guard.consume(f"fill-{i}", expires_at=float(i + 1), now=0.0)
    start = time.perf_counter()
    for j in range(requests):
        # at time j + 0.5, nonce fill-j (expiring at j + 1) is the next one to go: steady state
        await guard.consume(f"req-{j}", expires_at=float(live + j + 1), now=float(j) + 0.5)
    return (time.perf_counter() - start) / requests * 1e6


async def dict_floor(live: int, requests: int) -> float:
    seen = {f"fill-{i}": float(i + 1) for i in range(live)}

    async def consume(nonce: str, expires_at: float) -> bool:
        if nonce in seen:
            return False
        seen[nonce] = expires_at
        return True

    start = time.perf_counter()
    for j in range(requests):
        await consume(f"req-{j}", float(live + j + 1))
    return (time.perf_counter() - start) / requests * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| live nonces | guard µs per request | dict floor µs | ratio |")
    print("|---|---|---|---|")
    for live in SIZES:
        g, f = [], []
        for _ in range(args.rounds):
            g.append(asyncio.run(guard_cost(live, min(args.requests, live))))
            f.append(asyncio.run(dict_floor(live, min(args.requests, live))))
        gm, fm = statistics.median(g), statistics.median(f)
        print(f"| {live:,} | {gm:.2f} | {fm:.2f} | {gm / fm:.2f}× |")


if __name__ == "__main__":
    main()

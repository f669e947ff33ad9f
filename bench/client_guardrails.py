"""µs per elicitation added by the client guardrails: secret guard + policy, and the SQLite audit trail.

Same unit as bench/client_pipeline.py: one `tools/call` whose tool asks one four-field form, answered
by a `ScriptedUI`, on the raw SDK's server in memory. Variants, interleaved round by round:

- "bare SDK callback": `mcp.client.Client` with a callback returning a fixed answer (reference);
- "pipeline, no guardrails": `ElicitClient` with the secret guard taken out, no policy, no audit;
- "guard + policy": the default chain (secret guard) plus the policy stages (`Policy(form="allow")`
  with the default rate limits; the pipeline's clock moves 16 s per question so they never refuse);
- "guard + policy + audit": the same plus `AuditTrail` on a `SqliteAuditSink` (WAL,
  synchronous=NORMAL, one commit per record, in a worker thread), as `mcp-elicit call` runs it.

Ratios printed: guard + policy against no guardrails, audit on against off, and everything against
the bare SDK. Median round reported (and the fastest round).

Run: .venv/bin/python bench/client_guardrails.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.client_pipeline import ANSWER, Timed, bare, server

from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.client import ElicitClient, Pipeline
from mcp_elicit.client.audit import AuditTrail
from mcp_elicit.client.guardrails import install_guardrails
from mcp_elicit.core.policy import Policy
from mcp_elicit.ui.scripted import ScriptedUI

# The pipeline's clock moves this far per question: more than the default sustained rate limit's
# spacing (300 s / 20 = 15 s), so the rate limits are evaluated on every question but never refuse.
CLOCK_STEP_S = 16.0


def stepping_clock() -> Callable[[], float]:
    return itertools.count(1_800_000_000.0, CLOCK_STEP_S).__next__


def guarded(target: Any, protocol: str, tool: str, *, guard: bool, audit_dir: Path | None) -> Timed:
    async def run(calls: int) -> float:
        ui = ScriptedUI([{"content": ANSWER, "repeat": True}])
        pipeline = Pipeline(ui, clock=stepping_clock())
        if guard:
            install_guardrails(pipeline, Policy(form="allow"))
        else:
            pipeline.stages = [s for s in pipeline.stages if s.name != "secret_guard"]
        sink = None
        if audit_dir is not None:
            sink = SqliteAuditSink(audit_dir / "audit.sqlite3")
            pipeline.observers.append(AuditTrail(sink))
        try:
            async with ElicitClient(target, pipeline=pipeline, protocol=protocol) as client:
                await client.call_tool(tool, {})  # warm-up: connection, caches, the first sink write
                start = time.perf_counter()
                for _ in range(calls):
                    await client.call_tool(tool, {})
                elapsed = (time.perf_counter() - start) / calls * 1e6
                if client.outcomes[-1].action != "accept":
                    raise SystemExit(f"the pipeline did not accept: {client.outcomes[-1]}")
                return elapsed
        finally:
            if sink is not None:
                sink.close()

    return run


async def measure(variants: dict[str, Timed], calls: int, rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            samples[name].append(await run(calls))
    return samples


def report(title: str, samples: dict[str, list[float]]) -> None:
    median = {name: statistics.median(values) for name, values in samples.items()}
    fastest = {name: min(values) for name, values in samples.items()}
    base = median["bare SDK callback"]
    print(f"\n{title}")
    for name in samples:
        print(
            f"  {name:<26} {median[name]:9.1f} µs/elicitation (median)  {fastest[name]:9.1f} (fastest)"
            f"   {median[name] / base:5.2f}x bare SDK"
        )
    for label, on, off in (
        ("guard + policy vs none", "guard + policy", "pipeline, no guardrails"),
        ("SQLite audit on vs off", "guard + policy + audit", "guard + policy"),
    ):
        added = median[on] - median[off]
        print(
            f"  {label:<26} {added:+9.1f} µs/elicitation   ratio {median[on] / median[off]:.3f} median,"
            f" {fastest[on] / fastest[off]:.3f} fastest"
        )


async def main(calls: int, rounds: int) -> None:
    srv = server()
    with tempfile.TemporaryDirectory() as tmp:
        for title, protocol, tool in (
            ("push (2025-11-25), in memory", "legacy", "file_ticket"),
            ("pull (2026-07-28, InputRequiredResult), in memory", "2026-07-28", "file_ticket_resolved"),
        ):
            audit_dir = Path(tmp) / protocol
            audit_dir.mkdir()
            samples = await measure(
                {
                    "bare SDK callback": bare(srv, protocol, tool),
                    "pipeline, no guardrails": guarded(srv, protocol, tool, guard=False, audit_dir=None),
                    "guard + policy": guarded(srv, protocol, tool, guard=True, audit_dir=None),
                    "guard + policy + audit": guarded(srv, protocol, tool, guard=True, audit_dir=audit_dir),
                },
                calls,
                rounds,
            )
            report(title, samples)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200, help="calls per variant per round")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds; the median is reported")
    args = parser.parse_args()
    anyio.run(main, args.calls, args.rounds)

"""ms per elicitation through the gateway against a direct connection, same run.

Each measured unit is one `tools/call` whose tool (the raw-SDK peer of tests/gateway/peers.py,
`ctx.elicit`, a one-field form) asks one question that the SDK's `Client` answers. Variants:
- "direct": the SDK's `Client` -> the upstream server (stdio subprocess);
- "gateway (in-process)": the SDK's `Client` -> `Gateway` in this process (the SDK's in-memory
  transport) -> the same upstream over stdio: the gateway's own cost (pipeline, relay, forwarding);
- "gateway (stdio)": the SDK's `Client` -> `mcp-elicit gateway --config` (a stdio subprocess) -> the
  upstream: what a desktop client sees, one more process hop included.
Both eras downstream for the in-process gateway (2026-07-28: the held upstream call answered in a
round). Variants are interleaved round by round (alternating order); ratios are paired per round,
median with range. Wall time (three processes take part). Goal: gateway (in-process) <= 1.15x.

Run: .venv/bin/python bench/gateway.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._stats import conditions, fmt_ratio, ratios

from mcp_elicit.core.policy import Policy
from mcp_elicit.gateway import Gateway, parse_config

GOAL = 1.15
PEERS = str(Path(__file__).resolve().parents[1] / "tests" / "gateway" / "peers.py")
UPSTREAM = {"command": sys.executable, "args": [PEERS, "sdk"]}


async def answer(ctx: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content={"name": "ann"})


async def run(calls: int, rounds: int) -> None:
    config_text = json.dumps({"mcpServers": {"sdk": UPSTREAM}})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.json"
        path.write_text(config_text)
        toml = Path(tmp) / "elicit.toml"  # the same guardrails as in-process, rate limits off
        toml.write_text(
            '[default]\nform = "allow"\nurl = "allow"\nrate_limits = []\n[audit]\nlevel = "none"\n'
        )
        gateway_cmd = StdioServerParameters(
            command=sys.executable,
            args=["-m", "mcp_elicit", "gateway", "--config", str(path), "--elicit-config", str(toml)],
        )
        direct_cmd = StdioServerParameters(command=UPSTREAM["command"], args=list(UPSTREAM["args"]))
        # A benchmark asks far more often than a person: rate limits off, the other guardrails on.
        policy = Policy(form="allow", url="allow", rate_limits=())
        async with Gateway(parse_config(config_text), policy=policy) as gw:
            await gw.pool_for("local")
            async with (
                Client(direct_cmd, mode="legacy", elicitation_callback=answer) as direct,
                Client(gw.server, mode="legacy", elicitation_callback=answer) as inproc,
                Client(gw.server, mode="2026-07-28", elicitation_callback=answer) as inproc_modern,
                Client(gateway_cmd, mode="legacy", elicitation_callback=answer) as stdio,
            ):
                variants = {
                    "direct": direct,
                    "gateway (in-process)": inproc,
                    "gateway (in-process, 2026-07-28 downstream)": inproc_modern,
                    "gateway (stdio)": stdio,
                }
                for c in variants.values():  # warm up: imports, caches, first listing
                    for _ in range(3):
                        result = await c.call_tool("greet", {})
                        assert result.content[0].text == "hello ann", result  # type: ignore[union-attr]
                times: dict[str, list[float]] = {name: [] for name in variants}
                names = list(variants)
                for r in range(rounds):
                    for name in names if r % 2 == 0 else list(reversed(names)):
                        start = time.perf_counter()
                        for _ in range(calls):
                            await variants[name].call_tool("greet", {})
                        times[name].append((time.perf_counter() - start) / calls * 1000)
            for pool in gw.pools.values():
                pool.stop()
    print(f"gateway benchmark: {calls} calls x {rounds} rounds, wall ms per elicitation; {conditions()}")
    base = times["direct"]
    for name, values in times.items():
        ratio = "" if name == "direct" else f"  ratio {fmt_ratio(ratios(values, base))}"
        print(f"  {name:45s} median {statistics.median(values):7.2f} ms  best {min(values):7.2f} ms{ratio}")
    med = ratios(times["gateway (in-process)"], base)[0]
    verdict = "met" if med <= GOAL else "NOT met"
    print(f"goal: gateway (in-process) <= {GOAL:.2f}x direct: {verdict} ({med:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    anyio.run(run, min(args.calls, 2000), min(args.rounds, 20))


if __name__ == "__main__":
    main()

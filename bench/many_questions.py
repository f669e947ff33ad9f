"""Cost per question when one 2026-07-28 tool call asks k questions, k = 1 … 32.

On 2026-07-28 a tool that asks k questions runs k + 1 times; each run replays every answer recorded
so far. This measures what that replay costs: the time of one whole `tools/call` (all k rounds,
the SDK's in-memory client answering each question at once) divided by k, for mcp-elicit's `ask`
and, as the reference, the SDK's own multi-round flow written by hand (one `InputRequiredResult`
per round, answers carried in plain `requestState`, no validation, no digests). A flat column means
replay is O(1) per earlier question. Variants alternate order round by round; medians are reported
with their min–max over rounds.

Run: .venv/bin/python bench/many_questions.py [--rounds R] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_elicit.server import ask, install


class Ticket(BaseModel):
    title: str = Field(title="Title", max_length=80)
    estimate: int = Field(1, ge=1, le=40, title="Estimate (hours)")
    urgent: bool = False


ANSWER = {"title": "Fix login", "estimate": 3, "urgent": True}
SCHEMA = Ticket.model_json_schema()


def ours(k: int) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("bench-ours", log_level="WARNING")
    install(server)

    @server.tool()
    async def tickets(ctx: Context) -> int:
        total = 0
        for i in range(k):
            answer = await ask(ctx, f"Ticket {i}", Ticket, key=f"t{i}")
            total += answer.data.estimate if answer.data else 0
        return total

    return server


def by_hand(k: int) -> MCPServer[Any]:
    """The SDK's multi-round flow written directly: the floor for k questions."""
    server: MCPServer[Any] = MCPServer("bench-raw", log_level="WARNING")

    @server.tool()
    async def tickets(ctx: Context) -> int | t.InputRequiredResult:
        answers: list[dict[str, Any]] = json.loads(ctx.request_state or "[]")
        responses = ctx.input_responses or {}
        key = f"t{len(answers)}"
        if key in responses:
            answers.append(responses[key].content or {})  # type: ignore[union-attr]
        if len(answers) < k:
            nxt = f"t{len(answers)}"
            request = t.ElicitRequest(
                params=t.ElicitRequestFormParams(message=f"Ticket {len(answers)}", requested_schema=SCHEMA)  # type: ignore[arg-type]
            )
            return t.InputRequiredResult(input_requests={nxt: request}, request_state=json.dumps(answers))
        return sum(int(a.get("estimate", 0)) for a in answers)

    return server


async def answer(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content=ANSWER)


async def per_question_us(server: MCPServer[Any], k: int, calls: int) -> float:
    async with Client(
        server, mode="2026-07-28", elicitation_callback=answer, input_required_max_rounds=k + 2
    ) as client:
        await client.call_tool("tickets", {})  # warm up
        started = time.perf_counter()
        for _ in range(calls):
            await client.call_tool("tickets", {})
        return (time.perf_counter() - started) / calls / k * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    ks = [1, 4, 16] if args.quick else [1, 2, 4, 8, 16, 32]
    print("| questions per call | mcp-elicit µs/question | by hand µs/question | ratio (min–max) |")
    print("|---|---|---|---|")
    for k in ks:
        calls = max(2, 64 // k)
        ours_s, raw_s, ratios = [], [], []
        for r in range(args.rounds):
            order = [("ours", ours(k)), ("raw", by_hand(k))]
            if r % 2:
                order.reverse()
            got = {name: await per_question_us(server, k, calls) for name, server in order}
            ours_s.append(got["ours"])
            raw_s.append(got["raw"])
            ratios.append(got["ours"] / got["raw"])
        print(
            f"| {k} | {statistics.median(ours_s):,.0f} | {statistics.median(raw_s):,.0f} | "
            f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) |"
        )


if __name__ == "__main__":
    anyio.run(main)

"""The data server's part of `make demo`: guarded queries on the sample database, in both eras.

The sample database is built in a temporary directory (and removed afterwards), the server runs
as `mcp-elicit serve-data` over stdio, and a scripted person answers its questions.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as t
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

__all__ = ["run_data_demo"]

STEPS: list[tuple[str, str, dict[str, Any] | None]] = [
    (
        "a cheap query runs unasked",
        "SELECT country, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1",
        None,
    ),
    (
        "an expensive query asks first",
        "SELECT kind, count(*) AS n FROM events GROUP BY 1 ORDER BY 1",
        {"action": "accept", "content": {"decision": "run"}},
    ),
    (
        "personal data: run it masked",
        "SELECT name, email, country FROM customers ORDER BY id LIMIT 2",
        {"action": "accept", "content": {"decision": "run_masked"}},
    ),
    ("personal data: declined", "SELECT email FROM customers LIMIT 2", {"action": "decline"}),
    ("a write is refused", "DELETE FROM customers", None),
]


async def run_data_demo(say: Callable[[str], None], eras: tuple[tuple[str, str], ...]) -> None:
    from mcp_elicit.apps.data.sample import ensure_sample

    with tempfile.TemporaryDirectory(prefix="mcp-elicit-demo-") as tmp:
        db = ensure_sample(Path(tmp) / "sample.duckdb")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "mcp_elicit", "serve-data", "--dsn", str(db), "--no-audit"],
        )
        for era, label in eras:
            say(f"=== guarded data queries, {label} ===")
            answers: list[dict[str, Any]] = []

            async def person(
                context: Any, params: t.ElicitRequestParams, answers: list[dict[str, Any]] = answers
            ) -> t.ElicitResult:
                wire = params.model_dump(mode="json", by_alias=True, exclude_none=True)
                for line in str(wire["message"]).splitlines():
                    say(f"      server asks: {line}")
                options = wire["requestedSchema"]["properties"]["decision"]["oneOf"]
                say("      choices: " + " | ".join(o["title"] for o in options))
                reply: dict[str, Any]
                reply = answers.pop(0) if answers else {"action": "cancel"}
                say(f"      answer: {json.dumps(reply)}")
                return t.ElicitResult.model_validate(reply)

            async with Client(params, mode=era, elicitation_callback=person) as client:
                for title, sql, answer in STEPS:
                    say(f"  [{title}] {sql}")
                    answers[:] = [answer] if answer else []
                    result = await client.call_tool("query", {"sql": sql})
                    text = "".join(getattr(c, "text", "") for c in result.content)
                    say(f"      result: {text if len(text) <= 200 else text[:199] + '…'}")  # cut, and says so
            say("")

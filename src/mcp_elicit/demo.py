"""`make demo`: the reference server over stdio, and you (or a script) answering its questions.

In a terminal it starts `mcp-elicit connect` against the reference server, with a short intro on
what to try: a newcomer answers a real form within a minute. Without a terminal (CI, a pipe) it
runs the scripted client in both protocol eras instead, printing each elicitation the server sent
and the answer that went back, step by step.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

SCRIPT: dict[str, list[dict[str, Any]]] = {
    "deploy": [
        {"action": "accept", "content": {"environment": "production", "region": "us-east", "replicas": 3}},
        {"action": "accept", "content": {"confirm": True}},
    ],
    "signup": [
        {"action": "accept", "content": {"username": "ada", "email": "ada@example.org"}},
        {"action": "accept", "content": {"newsletter": True, "topics": ["releases", "security"]}},
        {"action": "decline"},
    ],
}
ERAS = (
    ("legacy", "2025-11-25: server-to-client elicitation/create"),
    ("2026-07-28", "2026-07-28: InputRequiredResult rounds"),
)


class ScriptedAnswers:
    """Answers one tool's elicitations from its script and prints each exchange."""

    def __init__(self, tool: str, script: list[dict[str, Any]], say: Callable[[str], None]) -> None:
        self.tool, self.pending, self.say, self.step = tool, list(script), say, 0

    async def __call__(self, context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        self.step += 1
        wire = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        answer = self.pending.pop(0) if self.pending else {"action": "cancel"}
        self.say(f"  [{self.tool} #{self.step}] server asks: {wire['message']}")
        self.say(f"      schema: {json.dumps(wire.get('requestedSchema'), separators=(',', ':'))}")
        self.say(f"      answer: {json.dumps(answer)}")
        return t.ElicitResult.model_validate(answer)


def reference_server_command() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_elicit", "serve-reference", "--transport", "stdio"]
    )


async def run_demo(out: Any = None) -> None:
    stream = out or sys.stdout

    def say(text: str = "") -> None:
        print(text, file=stream, flush=True)

    for era, label in ERAS:
        say(f"=== {label} ===")
        for tool, script in SCRIPT.items():
            answers = ScriptedAnswers(tool, script, say)
            args = {"service": "checkout"} if tool == "deploy" else {}
            async with Client(reference_server_command(), mode=era, elicitation_callback=answers) as client:
                result = await client.call_tool(tool, args)
            say(f"  [{tool}] result: {''.join(getattr(c, 'text', '') for c in result.content)}")
        say()
    from mcp_elicit.apps.data.demo import run_data_demo

    await run_data_demo(say, ERAS)


INTRO = """\
mcp-elicit demo: you are talking to the reference server, which asks you questions.
Try:
  call deploy     asks for a service name (say checkout), then a form: environment,
                  region, replicas; production adds a confirmation
  call signup     three steps: account, preferences (a multi select, a date), confirm
  tools           everything the server offers
Guarded SQL on a sample database (after quit, from this directory):
  {data}
then call query (try: SELECT name, email FROM customers LIMIT 3).
In a form: Enter keeps the [value] · :decline or Ctrl-D declines · :cancel, Ctrl-C or Esc
cancels. A review screen lets you change any answer before it is sent. quit leaves.
"""


def command_path() -> str:
    """The `mcp-elicit` command beside this Python, as a path from the current directory
    (`.venv/bin/mcp-elicit` for `make demo` in a fresh clone: the venv is not on PATH)."""
    script = Path(sys.executable).parent / "mcp-elicit"
    if not script.exists():
        return "mcp-elicit"
    relative = os.path.relpath(script)
    return relative if os.sep in relative else f".{os.sep}{relative}"


def data_server_hint() -> str:
    """`connect` to the guarded data server, a command line that works when pasted."""
    command = command_path()
    return shlex.join([command, "connect", "--server", shlex.join([command, "serve-data"])])


def reference_server_spec() -> str:
    """The reference server's stdio command line, as `mcp-elicit connect --server` takes it."""
    return shlex.join([sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "stdio"])


async def run_interactive() -> int:
    """`connect` against the reference server, after the intro; the exit code of the session."""
    from mcp_elicit.cli.connect import ConnectSession

    print(INTRO.format(data=data_server_hint()), flush=True)
    return await ConnectSession(reference_server_spec()).run()


def main() -> None:
    if sys.stdin.isatty() and sys.stdout.isatty():
        try:
            code = anyio.run(run_interactive)
        except KeyboardInterrupt:
            code = 130
        raise SystemExit(code)
    anyio.run(run_demo)


if __name__ == "__main__":
    main()

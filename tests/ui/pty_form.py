"""Run by test_terminal_pty.py inside a pseudo-terminal: one hostile form through the real terminal reader.

Prints `RESULT <json>` with what the UI returned, so the test sees the answer that would go back.
"""

from __future__ import annotations

import json

import anyio

from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.ui.terminal import TerminalUI

FORM = Form(
    (
        Field.string("name", title="Name\x1b[5m"),
        Field.integer("replicas", title="Replicas", minimum=1, maximum=20, default=2, required=False),
        Field.multi_select(
            "topics", [("releases", "Releases"), ("security", "Security")], title="Topics", required=False
        ),
    )
)
MESSAGE = "Deploy? \x1b]8;;https://evil.example/\x07click here\x1b]8;;\x07 \x1b[?1049h\u202eend"


async def main() -> None:
    prompt = FormPrompt(
        Requester("pty-server\x1b[31m", "tests/ui/pty_form.py", version="1"),
        Purpose("tools/call", "deploy", {"service": "web"}),
        MESSAGE,
        FORM,
        values={"replicas": 2},
    )
    result = await TerminalUI().ask_form(prompt)
    print("RESULT " + json.dumps({"action": result.action, "content": result.content}), flush=True)


if __name__ == "__main__":
    anyio.run(main)

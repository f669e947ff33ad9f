"""Run by test_terminal_url_pty.py inside a pseudo-terminal: the URL consent and waiting screens
through the real terminal reader (prompt_toolkit), with a hostile message and URL.

Prints `RESULT <json>` with what the UI returned at each screen.
"""

from __future__ import annotations

import json
import sys

import anyio

from mcp_elicit.client.model import Elicitation
from mcp_elicit.client.ui_protocol import Purpose, Requester, UrlWaiting
from mcp_elicit.client.url import UrlMode
from mcp_elicit.core.urls import check_url
from mcp_elicit.ui.terminal import TerminalUI

MESSAGE = "Connect \x1b]8;;https://evil.example/\x07here\x1b]8;;\x07 \u202eknab"
URL = sys.argv[1] if len(sys.argv) > 1 else "https://login.bank.example.com/connect?x=1"


async def nothing(url: str) -> None:
    return None


async def main() -> None:
    e = Elicitation(
        params={},
        protocol="2025-11-25",
        requester=Requester("pty-bank", "tests/ui/pty_url.py", version="1"),
        purpose=Purpose("tools/call", "connect_account", {}),
        message=MESSAGE,  # raw on purpose: the UI's own plain() is the last line of defence
    )
    prompt = UrlMode(opener=nothing).prompt(e, check_url(URL))
    ui = TerminalUI()
    results: list[str] = [(await ui.ask_url(prompt)).action]
    if results[0] == "accept":
        results.append(await ui.wait_url(UrlWaiting(prompt, "retry", True, 1, 40, 1.0)))
        results.append(await ui.wait_url(UrlWaiting(prompt, "completion", False)))
    print("RESULT " + json.dumps(results), flush=True)


if __name__ == "__main__":
    anyio.run(main)

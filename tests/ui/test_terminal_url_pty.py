"""The URL consent and waiting screens in a real pseudo-terminal (prompt_toolkit), driven with pexpect."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.ui.screen import Terminal

SCRIPT = Path(__file__).with_name("pty_url.py")
ROOT = Path(__file__).parents[2]


def run(*args: str) -> Terminal:
    return Terminal([sys.executable, str(SCRIPT), *args], cwd=str(ROOT))


def result_of(term: Terminal) -> list[str]:
    term.wait_for("RESULT ")
    assert term.exit_code() == 0
    parsed: list[str] = json.loads(term.screen().split("RESULT ", 1)[1].splitlines()[0])
    return parsed


def test_a_person_consents_with_open_then_reopens_and_gives_up_waiting_with_ctrl_c() -> None:
    """U3, U6, U8: the full URL before consent; open only when typed; retry/open/cancel while waiting."""
    term = run()
    try:
        term.wait_for("Page    https://login.bank.example.com/connect?x=1")
        term.wait_for("Site    example.com")
        term.wait_for("Open this page?")
        term.type_line("sure")
        term.wait_for("Type open, :decline or :cancel.")
        term.type_line("open")
        term.wait_for("Waiting for the page on example.com")
        term.wait_for("Waiting (Enter checks now):")
        term.type_line(":open")
        term.wait_for("Opening the page again.")
        term.wait_for("Waiting:")
        term.send("\x03")
        term.wait_for("Stopped waiting: the request is cancelled.")
        assert result_of(term) == ["accept", "open", "cancel"]
        for sequence in ("\x1b]8;;https://evil.example", "\u202e"):
            assert sequence not in term.raw
        assert "Traceback" not in term.screen()
    finally:
        term.close()


def test_a_blocked_url_in_a_real_terminal_cannot_be_opened() -> None:
    term = run("javascript:alert(document.cookie)")
    try:
        term.wait_for("This page is blocked: it cannot be opened from here.")
        term.wait_for("Decline? [decline]:")
        term.type_line("open")
        assert result_of(term) == ["decline"]
    finally:
        term.close()

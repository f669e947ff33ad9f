"""The terminal UI in a real pseudo-terminal (prompt_toolkit reading keystrokes), driven with pexpect."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ui.screen import Terminal

SCRIPT = Path(__file__).with_name("pty_form.py")
ROOT = Path(__file__).parents[2]


@pytest.fixture
def term() -> Iterator[Terminal]:
    terminal = Terminal([sys.executable, str(SCRIPT)], cwd=str(ROOT))
    yield terminal
    terminal.close()


def result_of(term: Terminal) -> dict[str, object]:
    term.wait_for("RESULT ")
    assert term.exit_code() == 0
    line = term.screen().split("RESULT ", 1)[1].splitlines()[0]
    parsed: dict[str, object] = json.loads(line)
    return parsed


def test_a_person_fills_in_reviews_changes_and_sends_a_form_with_keystrokes(term: Terminal) -> None:
    """F6 in a real terminal: defaults kept with Enter, an answer changed on the review screen."""
    term.wait_for("pty-server\\u001b[31m asks you to fill in a form")
    term.wait_for("Name\\u001b[5m:")
    term.type_line("Ada")
    term.wait_for("Replicas [2]:")
    term.type_line("")
    term.wait_for("Topics:")
    term.type_line("2")
    term.wait_for("Send? [send]:")
    term.type_line("2")
    term.wait_for("Replicas [2]:")
    term.type_line("5")
    term.wait_for("2) Replicas       5")
    term.wait_for("Send? [send]:")
    term.type_line("")
    term.wait_for("Sent.")
    assert result_of(term) == {
        "action": "accept",
        "content": {"name": "Ada", "replicas": 5, "topics": ["security"]},
    }


@pytest.mark.parametrize(("key", "action"), [("\x03", "cancel"), ("\x04", "decline"), ("\x1b", "cancel")])
def test_ctrl_c_and_esc_cancel_and_ctrl_d_declines_without_a_crash(
    term: Terminal, key: str, action: str
) -> None:
    """C3/C4: Ctrl-C (a KeyboardInterrupt inside the editor), Esc and Ctrl-D end the question cleanly."""
    term.wait_for("Name\\u001b[5m:")
    term.type_line("Ada")
    term.wait_for("Replicas [2]:")
    term.send(key)
    assert result_of(term) == {"action": action, "content": None}
    assert "Traceback" not in term.screen()


def test_typed_commands_decline_on_the_review_screen(term: Terminal) -> None:
    term.wait_for("Name\\u001b[5m:")
    term.type_line("Ada")
    term.wait_for("Replicas [2]:")
    term.type_line("")
    term.wait_for("Topics:")
    term.type_line(":none")
    term.wait_for("Send? [send]:")
    term.type_line(":decline")
    term.wait_for("Declined: the server is told no.")
    assert result_of(term) == {"action": "decline", "content": None}


def test_the_terminal_never_receives_a_raw_escape_sequence_from_the_server(term: Terminal) -> None:
    """F8, defence in depth: OSC 8 links, screen switches, bidi and SGR codes from the server stay inert."""
    term.wait_for("Name\\u001b[5m:")
    term.send("\x03")
    result_of(term)
    for sequence in (
        "\x1b]8;;https://evil.example",
        "\x1b[?1049h",
        "\u202e",
        "pty-server\x1b[31m",
        "Name\x1b[5m",
    ):
        assert sequence not in term.raw
    screen = term.screen()
    assert "Deploy? \\u001b]8;;https://evil.example/\\u0007click here" in screen
    assert "\\u001b[?1049h\\u202eend" in screen

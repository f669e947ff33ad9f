"""The `mcp-elicit audit` readers show a trail's server-chosen text inert, and export it safely."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.cli import main
from mcp_elicit.cli.audit_output import inert_json
from mcp_elicit.core.consent import ConsentEvent, ServerIdentity

# A name a server chose, stored raw by a trail written before the record side cleaned it.
ERASER = "x\x1b[1A\x1b[2K\x1b[1A\x1b[2K\rtrusted-server"
BIDI = "evil\u202eliveс-server\x9b2J"


def event(i: int, name: str, **changes: object) -> ConsentEvent:
    fields: dict[str, object] = {
        "time": 1_800_000_000.0 + 3600 * i,
        "side": "client",
        "mode": "form",
        "action": "accept",
        "decided_by": "gate",
        "reason": "schema\u2066",
        "server": ServerIdentity(name, "1.0\x1b]8;;http://x\x07", "uvx srv"),
    }
    fields.update(changes)
    return ConsentEvent(**fields)  # type: ignore[arg-type]


@pytest.fixture
def raw_trail(tmp_path: Path) -> Path:
    path = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append_many(
            [event(0, "honest", record_id="r1"), event(1, ERASER, record_id="r2"), event(2, BIDI)]
        )
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["audit", *args], color=True)  # color: ESC is not stripped
    return result.exit_code, result.output


def no_terminal_tricks(text: str) -> bool:
    """No control but newline, no bidi or other format character in what reaches the terminal."""
    return all(ch == "\n" or unicodedata.category(ch) not in {"Cc", "Cf", "Cs"} for ch in text)


def test_a_listing_of_a_trail_holding_raw_server_names_shows_them_inert(raw_trail: Path) -> None:
    code, out = run("list", "--db", str(raw_trail))
    assert code == 0
    assert no_terminal_tricks(out)
    assert "⟨U+202E⟩" in out
    assert "⟨U+2066⟩" in out
    assert len(out.splitlines()) == 4  # the header and one line per record: nothing moved up or erased


@pytest.mark.parametrize("command", [("list", "--json"), ("show", "r2"), ("show", "#3")])
def test_json_of_a_trail_holding_raw_server_names_reaches_the_terminal_escaped(
    raw_trail: Path, command: tuple[str, ...]
) -> None:
    code, out = run(*command, "--db", str(raw_trail))
    assert code == 0
    assert no_terminal_tricks(out)
    records = [json.loads(line) for line in out.splitlines()] if command[0] == "list" else [json.loads(out)]
    assert {r["server"]["name"] for r in records} >= ({ERASER} if command[1] == "r2" else {BIDI})


@given(st.recursive(st.text(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))
def test_inert_json_parses_to_the_same_values_and_holds_no_terminal_tricks(value: object) -> None:
    text = inert_json(value)
    assert json.loads(text) == value
    assert no_terminal_tricks(text)

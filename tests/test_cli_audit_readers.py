"""The `mcp-elicit audit` readers show a trail's server-chosen text inert, and export it safely."""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.cli import main
from mcp_elicit.cli.audit_output import FORMULA_STARTS, csv_cell, csv_writer, inert_json
from mcp_elicit.core.consent import CallRef, ConsentEvent, ServerIdentity

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


def exported_rows(path: Path) -> list[dict[str, str]]:
    code, out = run("export", "--format", "csv", "--db", str(path))
    assert code == 0
    return list(csv.DictReader(io.StringIO(out, newline="")))


def test_a_csv_export_neutralises_server_text_a_spreadsheet_would_run(tmp_path: Path) -> None:
    path = tmp_path / "formulas.sqlite3"
    hostile = ServerIdentity('=HYPERLINK("ht"&"tp://evil.example","click")', "@SUM(1+1)", "-2+3\r=1")
    with SqliteAuditSink(path) as sink:
        sink.append(
            event(
                0,
                "x",
                server=hostile,
                reason="+cmd|' /C calc'!A0",
                call=CallRef("tools/call", 1, "\tdde"),
                record_id="r1",
            )
        )
    (row,) = exported_rows(path)
    for column in ("server", "server_version", "server_where", "reason", "call_name"):
        assert row[column].startswith("'")
    assert row["server"] == "'" + hostile.name
    assert row["seq"] == "1"
    assert row["id"] == "r1"


@given(st.text())
def test_no_csv_cell_starts_as_a_formula_and_each_reads_back(text: str) -> None:
    buffer = io.StringIO()
    csv_writer(buffer).writerow([csv_cell(text)])
    (cell,) = next(csv.reader(io.StringIO(buffer.getvalue(), newline="")))
    assert not cell.startswith(FORMULA_STARTS)
    assert (cell[1:] if cell.startswith("'") else cell) == text

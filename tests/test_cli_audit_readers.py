"""The `mcp-elicit audit` readers show a trail's server-chosen text inert, and export it safely."""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import unicodedata
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.audit.sqlite import TABLE, SqliteAuditSink
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


@pytest.fixture
def plain_trail(tmp_path: Path) -> Path:
    path = tmp_path / "plain.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append_many([event(i, f"srv{i % 2}", record_id=f"r{i}") for i in range(1, 5)])
    return path


def edit(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()


def break_lines(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines()[1:]]


def test_verify_names_an_edited_record_by_its_seq_alone(plain_trail: Path) -> None:
    edit(plain_trail, f"UPDATE {TABLE} SET hash = '{'0' * 64}' WHERE seq = 2")
    code, out = run("verify", "--db", str(plain_trail))
    assert code == 1
    assert [line.split(":")[0] for line in break_lines(out)] == ["#2 (id r2)"]


def test_verify_labels_an_unexpected_head_as_the_head_not_a_checkpoint(plain_trail: Path) -> None:
    code, out = run("verify", "--db", str(plain_trail), "--expect-head", "f" * 64)
    assert code == 1
    assert break_lines(out)[0].startswith("#4 (head): head_mismatch")


def test_verify_places_a_torn_json_lines_record_by_its_position(plain_trail: Path, tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    code, out = run("export", "--db", str(plain_trail), "-o", str(torn))
    assert code == 0
    with torn.open("a") as f:
        f.write('{"trunc')
    code, out = run("verify", "--jsonl", str(torn))
    assert code == 1
    assert break_lines(out)[0].startswith("- (position 5): malformed")


def test_list_leaves_out_and_names_a_record_an_edited_column_mislabels(plain_trail: Path) -> None:
    edit(plain_trail, f"UPDATE {TABLE} SET action = 'decline' WHERE seq = 3")  # the record says accept
    result = CliRunner().invoke(main, ["audit", "list", "--db", str(plain_trail), "--action", "decline"])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[1:] == []
    assert "left out #3" in result.stderr


class Counting(SqliteAuditSink):
    """A SQLite sink that counts the records its reads hand out."""

    handed = 0

    def newest(self, limit: int, **filters: Any) -> list[dict[str, Any]]:
        records = super().newest(limit, **filters)
        Counting.handed += len(records)
        return records

    def iter_records(self, **filters: Any) -> Iterator[dict[str, Any]]:
        for record in super().iter_records(**filters):
            Counting.handed += 1
            yield record


@pytest.mark.parametrize("filters", [(), ("--server", "srv1")])
def test_list_limit_reads_only_the_newest_records_of_a_sql_store(
    plain_trail: Path, monkeypatch: pytest.MonkeyPatch, filters: tuple[str, ...]
) -> None:
    monkeypatch.setattr("mcp_elicit.audit.sqlite.SqliteAuditSink", Counting)
    Counting.handed = 0
    code, out = run("list", "--db", str(plain_trail), "--limit", "1", *filters)
    assert code == 0
    assert ids_of(out) == ["r3" if filters else "r4"]
    assert Counting.handed == 1


@pytest.mark.parametrize("sink", ["sqlite", "jsonl", "postgres"])
def test_newest_gives_the_last_records_the_filters_select_oldest_first(tmp_path: Path, sink: str) -> None:
    store = open_store(tmp_path, sink)
    try:
        store.append_many([event(i, f"srv{i % 2}", record_id=f"n{i}") for i in range(1, 8)])
        assert [r["id"] for r in store.newest(2)] == ["n6", "n7"]
        assert [r["id"] for r in store.newest(2, server="srv0")] == ["n4", "n6"]
        assert [r["id"] for r in store.newest(50, server="srv1")] == ["n1", "n3", "n5", "n7"]
        before = store.stamp()
        store.append(event(9, "srv1"))
        assert store.stamp() != before
    finally:
        if sink == "postgres":
            store.drop()
        store.close()


def open_store(tmp_path: Path, kind: str) -> Any:
    if kind == "sqlite":
        return SqliteAuditSink(tmp_path / "n.sqlite3")
    if kind == "jsonl":
        return JsonlAuditSink(tmp_path / "n.jsonl")
    from mcp_elicit.audit.postgres import PostgresAuditSink

    url = os.environ.get("MCP_ELICIT_TEST_POSTGRES")
    if not url:
        pytest.skip("no PostgreSQL ($MCP_ELICIT_TEST_POSTGRES)")
    return PostgresAuditSink(url, table=f"auditfix_newest_{uuid.uuid4().hex[:8]}")


def ids_of(listing: str) -> list[str]:
    return [row.split()[-1] for row in listing.splitlines()[1:]]


@pytest.fixture
def digit_ids(tmp_path: Path) -> Path:
    path = tmp_path / "digits.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append_many([event(i, "srv", record_id=f"{4 - i:02d}93aa") for i in range(1, 4)])
    return path


def test_show_reads_an_all_digit_start_of_an_id_given_with_id(digit_ids: Path) -> None:
    code, out = run("show", "--db", str(digit_ids), "--id", "0293")
    assert code == 0
    assert json.loads(out)["id"] == "0293aa"
    assert run("show", "--db", str(digit_ids), "--id", "0")[0] == 2  # every id starts with 0


def test_show_reads_a_bare_number_as_a_sequence_number_and_names_the_ids_it_also_starts(
    digit_ids: Path,
) -> None:
    for args in (("--seq", "2"), ("#2",), ("2",), ("02",)):
        code, out = run("show", "--db", str(digit_ids), *args)
        assert code == 0
        assert json.loads(out)["seq"] == 2
    result = CliRunner().invoke(main, ["audit", "show", "--db", str(digit_ids), "03"])
    assert result.exit_code == 0  # seq 3, though the id 0393aa (seq 1) starts with 03 too
    assert json.loads(result.stdout)["seq"] == 3
    assert "--id 03" in result.stderr
    assert "#1" in result.stderr
    missing = CliRunner().invoke(main, ["audit", "show", "--db", str(digit_ids), "0293"])
    assert missing.exit_code == 1  # no seq 293; the id that starts so is named
    assert "--id 0293" in missing.stderr
    assert "#2" in missing.stderr
    assert run("show", "--db", str(digit_ids))[0] == 2
    assert run("show", "--db", str(digit_ids), "--seq", "2", "0293")[0] == 2
    assert run("show", "--db", str(digit_ids), "--id", "0293", "2")[0] == 2


def _export_to_a_terminal(trail: Path, *args: str) -> bytes:
    """What `audit export` writes when its stdout is a terminal (a pseudo-terminal here)."""
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "mcp_elicit", "audit", "export", "--db", str(trail), *args]
    with subprocess.Popen(command, stdout=follower, stderr=subprocess.DEVNULL) as process:
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            out += chunk
        assert process.wait(timeout=60) == 0
    os.close(leader)
    return out


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_export_to_a_terminal_writes_server_text_inert_and_to_a_pipe_the_exact_bytes(
    raw_trail: Path, fmt: str
) -> None:
    import re

    # line ends as a terminal gets them: CSV's CRLF, and the terminal's own CR before each LF
    shown = re.sub(r"\r+\n", "\n", _export_to_a_terminal(raw_trail, "--format", fmt).decode("utf-8"))
    assert no_terminal_tricks(shown)
    piped = subprocess_output(raw_trail, "--format", fmt)
    assert not no_terminal_tricks(piped)  # the trail's own text, as stored
    if fmt == "jsonl":  # the same records either way: a terminal's lines parse to them
        assert [json.loads(line) for line in shown.splitlines()] == [
            json.loads(line) for line in piped.splitlines()
        ]


def subprocess_output(trail: Path, *args: str) -> str:
    import subprocess
    import sys

    command = [sys.executable, "-m", "mcp_elicit", "audit", "export", "--db", str(trail), *args]
    return subprocess.run(command, capture_output=True, check=True, timeout=60).stdout.decode("utf-8")

"""A stored record nested deeper than JSON's parser goes (an edit: ``[[[[…``) is a malformed
record to every reader, never a RecursionError that stops `verify`, `list`, `show` or an append."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner

from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.audit.sqlite import TABLE, SqliteAuditSink
from mcp_elicit.cli import main

from .conftest import make_event

# Far past any parser's nesting limit (CPython's json stops near 1,000 levels).
DEEP = "[" * 100_000


def kinds(sink: SqliteAuditSink | JsonlAuditSink) -> list[tuple[int, str]]:
    return [(b.index, b.kind) for b in sink.verify().breaks]


def test_a_sqlite_body_edited_into_deep_nesting_is_malformed_to_every_reader(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append_many([make_event(i) for i in range(3)])
    conn = sqlite3.connect(path)
    conn.execute(f"UPDATE {TABLE} SET body = ? WHERE seq = 2", (DEEP,))
    conn.commit()
    conn.close()
    with SqliteAuditSink(path, readonly=True) as sink:
        assert kinds(sink) == [(1, "malformed")]
        assert [r["seq"] for r in sink.iter_records()] == [1, 3]
    for command, code in (("verify", 1), ("list", 0), ("show", 1)):
        args = ["audit", command, "--db", str(path), *(["2"] if command == "show" else [])]
        result = CliRunner().invoke(main, args)
        assert not isinstance(result.exception, RecursionError), command
        assert result.exit_code == code, (command, result.output)


def test_a_deeply_nested_jsonl_line_is_malformed_and_the_next_append_chains_past_it(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with JsonlAuditSink(path) as sink:
        sink.append_many([make_event(i) for i in range(2)])
    with path.open("a", encoding="utf-8") as f:
        f.write(DEEP + "\n")
    with JsonlAuditSink(path) as sink:
        (record,) = sink.append_many([make_event(2)])
        assert record["seq"] == 3
        assert kinds(sink) == [(2, "malformed")]
        assert [r["seq"] for r in sink.iter_records()] == [1, 2, 3]
    result = CliRunner().invoke(main, ["audit", "verify", "--jsonl", str(path)])
    assert result.exit_code == 1
    assert not isinstance(result.exception, RecursionError)

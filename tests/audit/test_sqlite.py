"""The SQLite sink: WAL, tamper evidence through raw SQL, writers in several processes, fail closed."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_elicit.audit.sqlite import TABLE, SqliteAuditSink
from mcp_elicit.core.consent import record_hash
from mcp_elicit.errors import AuditReadError, AuditWriteError, InvalidArgument

from .conftest import make_event


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append_many([make_event(i) for i in range(5)])
    return path


def raw(db: Path, statement: str, *params: object) -> None:
    conn = sqlite3.connect(db)
    conn.execute(statement, params)
    conn.commit()
    conn.close()


def breaks(db: Path, expected_head: str | None = None) -> list[tuple[int, int | None, str]]:
    with SqliteAuditSink(db, readonly=True) as sink:
        return [(b.index, b.seq, b.kind) for b in sink.verify(expected_head).breaks]


def test_the_database_is_in_wal_mode_and_creates_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "audit.sqlite3"
    SqliteAuditSink(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_an_intact_file_verifies(db: Path) -> None:
    assert breaks(db) == []


def test_a_body_edited_with_raw_sql_is_a_hash_mismatch(db: Path) -> None:
    raw(db, f"UPDATE {TABLE} SET body = replace(body, '\"person\"', '\"script\"') WHERE seq = 3")
    assert breaks(db) == [(2, 3, "hash_mismatch")]


def test_an_edited_index_column_is_a_column_mismatch(db: Path) -> None:
    raw(db, f"UPDATE {TABLE} SET action = 'decline' WHERE seq = 2")
    assert breaks(db) == [(1, 2, "column_mismatch")]


def test_a_deleted_row_is_reported_after_the_gap(db: Path) -> None:
    raw(db, f"DELETE FROM {TABLE} WHERE seq = 3")
    assert breaks(db) == [(2, 4, "deleted")]


def test_a_naively_forged_row_is_a_broken_link(db: Path) -> None:
    with SqliteAuditSink(db, readonly=True) as sink:
        last = list(sink.iter_records())[-1]
    forged = dict(last, seq=6, id="forged", prev_hash="f" * 64)
    forged["hash"] = record_hash(forged)
    from mcp_elicit.audit.base import row_of

    raw(db, f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", *row_of(forged))
    assert breaks(db) == [(5, 6, "broken_link")]


def test_a_row_slipped_into_the_middle_breaks_columns_and_links(db: Path) -> None:
    """Shift seq 3.. up by one and insert a forged seq 3: the shifted rows disagree with their bodies."""
    with SqliteAuditSink(db, readonly=True) as sink:
        records = list(sink.iter_records())
    raw(db, f"UPDATE {TABLE} SET seq = seq + 100 WHERE seq >= 3")
    raw(db, f"UPDATE {TABLE} SET seq = seq - 99 WHERE seq >= 100")
    forged = dict(records[2], id="forged", prev_hash=records[1]["hash"])
    forged["hash"] = record_hash(forged)
    from mcp_elicit.audit.base import row_of

    raw(db, f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", *row_of(forged))
    found = breaks(db)
    assert (3, 4, "column_mismatch") in found
    assert any(index == 3 and kind in ("inserted", "broken_link") for index, _, kind in found)


def test_a_fully_rewritten_tail_needs_the_anchored_head(db: Path) -> None:
    with SqliteAuditSink(db, readonly=True) as sink:
        head = sink.verify().head_hash
    raw(db, f"DELETE FROM {TABLE} WHERE seq = 5")
    assert breaks(db) == []  # a chain alone cannot see a cut tail
    assert breaks(db, expected_head=head) == [(4, 4, "head_mismatch")]


def test_a_body_that_is_not_json_is_malformed(db: Path) -> None:
    raw(db, f"UPDATE {TABLE} SET body = 'garbage' WHERE seq = 2")
    assert breaks(db) == [(1, None, "malformed")]


WRITER = """
import sys
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.core.consent import ConsentEvent
sink = SqliteAuditSink(sys.argv[1])
for i in range(int(sys.argv[2])):
    sink.append(ConsentEvent(time=1.0 * i, side="client", mode="form", action="accept", decided_by="script"))
sink.close()
"""


def test_writers_in_several_processes_never_fork_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    SqliteAuditSink(path).close()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), "40"]) for _ in range(3)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    with SqliteAuditSink(path, readonly=True) as sink:
        report = sink.verify()
        seqs = [r["seq"] for r in sink.iter_records()]
    assert report.ok
    assert report.count == 120
    assert seqs == list(range(1, 121))


def test_a_failed_batch_writes_nothing(tmp_path: Path) -> None:
    with SqliteAuditSink(tmp_path / "a.sqlite3") as sink:
        sink.append(make_event(0, record_id="dup"))
        with pytest.raises(AuditWriteError) as info:
            sink.append_many([make_event(1), make_event(2, record_id="dup")])
        assert info.value.sink == "sqlite"
        assert isinstance(info.value.__cause__, sqlite3.IntegrityError)
        assert [r["seq"] for r in sink.iter_records()] == [1]
        assert sink.append(make_event(3))["seq"] == 2  # the sink is still usable


def test_a_read_only_handle_fails_closed_on_append(db: Path) -> None:
    with SqliteAuditSink(db, readonly=True) as sink, pytest.raises(AuditWriteError):
        sink.append(make_event(9))


def test_a_path_that_cannot_hold_a_database_fails_at_open(tmp_path: Path) -> None:
    (tmp_path / "dir.sqlite3").mkdir()
    with pytest.raises(AuditWriteError) as info:
        SqliteAuditSink(tmp_path / "dir.sqlite3")
    assert info.value.target == str(tmp_path / "dir.sqlite3")


def test_reading_a_missing_file_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "missing.sqlite3"
    with pytest.raises(AuditReadError) as info:
        SqliteAuditSink(path, readonly=True)
    assert (info.value.sink, info.value.target) == ("sqlite", str(path))
    assert not path.exists()


def test_reading_a_file_that_is_not_a_database_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "not.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(AuditReadError):
        list(SqliteAuditSink(path, readonly=True).iter_records())


def test_reading_an_empty_database_yields_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite3"
    sqlite3.connect(path).close()
    path.write_bytes(b"")  # no table at all (one holding other tables is not a trail: test_sqlite_open.py)
    with SqliteAuditSink(path, readonly=True) as sink:
        assert list(sink.iter_records()) == []
        assert sink.verify().ok
        assert sink.get("x") is None


def test_listing_pages_through_more_than_one_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SqliteAuditSink, "page_size", 7)
    with SqliteAuditSink(tmp_path / "p.sqlite3") as sink:
        sink.append_many([make_event(i) for i in range(30)])
        assert [r["seq"] for r in sink.iter_records()] == list(range(1, 31))
        assert sink.verify().count == 30


@pytest.mark.parametrize("sink", ["sqlite", "jsonl"])
def test_a_memory_path_is_refused_and_no_file_named_memory_is_created(
    sink: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_elicit.audit.jsonl import JsonlAuditSink

    monkeypatch.chdir(tmp_path)
    make = SqliteAuditSink if sink == "sqlite" else JsonlAuditSink
    with pytest.raises(InvalidArgument) as caught:
        make(":memory:")
    assert caught.value.name == "path"
    assert list(tmp_path.iterdir()) == []

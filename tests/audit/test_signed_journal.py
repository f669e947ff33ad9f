"""A trail with a keyed checkpoint signs its journal lines with the checkpoint's key: a line
edited before its merge (even into another well-formed record) is refused there, kept aside and
never chained; an opener without the key leaves a signed journal to one that has it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.audit import journal as jr
from mcp_elicit.audit.checkpoint import SIGNED_LINE_MARK, Checkpoint
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.errors import AuditReadError, AuditWriteError

from .conftest import make_event
from .test_journal import crash, edit_line, journaled, rows

KEY = b"k" * 32
OTHER_KEY = b"o" * 32


def anchor(tmp_path: Path, key: bytes = KEY) -> Checkpoint:
    return Checkpoint(tmp_path / "trail.checkpoint", key)


def keyed_crash(db: Path, checkpoint: Checkpoint, n: int) -> tuple[list[str], Path]:
    """A keyed process journals `n` records and dies: their ids, its journal."""
    sink = SqliteAuditSink(db, checkpoint=checkpoint)
    ids = journaled(sink, n)
    assert sink._journal is not None
    path = sink._journal.path
    crash(sink)
    return ids, path


def rejected(db: Path) -> bytes:
    path = db.with_name(db.name + ".journal-rejected")
    return path.read_bytes() if path.exists() else b""


def test_every_line_a_keyed_trail_journals_is_signed(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    _, path = keyed_crash(db, anchor(tmp_path), 3)
    lines = path.read_bytes().splitlines()
    assert len(lines) == 3
    assert all(line.startswith(SIGNED_LINE_MARK) for line in lines)


def test_a_keyed_trails_dead_journal_is_merged_whole_and_verifies(
    tmp_path: Path,
) -> None:
    db = tmp_path / "audit.sqlite3"
    ids, _ = keyed_crash(db, anchor(tmp_path), 3)
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path)) as again:
        assert [r["id"] for r in again.iter_records()] == ids
        report = again.verify()
    assert report.ok
    assert report.count == 3
    assert jr.journals_of(db) == []
    assert rejected(db) == b""


def test_a_well_formed_edit_of_a_keyed_trails_dead_journal_is_refused_and_kept_aside(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    ids, path = keyed_crash(db, anchor(tmp_path), 3)
    edit_line(path, 1, b'"accept"', b'"cancel"')  # still a record the sink could have written
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path)) as again:
        stored = [(r["id"], r["action"]) for r in again.iter_records()]
        assert again.verify().ok
    assert stored == [(ids[0], "accept"), (ids[2], "accept")]
    assert ids[1].encode() in rejected(db)
    assert b'"cancel"' in rejected(db)


def test_lines_signed_under_another_key_are_refused_and_kept_aside(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    ids, _ = keyed_crash(db, anchor(tmp_path, OTHER_KEY), 2)
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path)) as again:
        assert list(again.iter_records()) == []
    assert all(i.encode() in rejected(db) for i in ids)
    assert jr.journals_of(db) == []  # taken whole: nothing is lost, nothing chained


def test_an_opener_whose_key_is_not_the_checkpoints_leaves_a_dead_writers_journal_to_its_key(
    tmp_path: Path,
) -> None:
    """A reader with a mistyped or rotated key would refuse every genuine line: it merges nothing."""
    db = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path)) as writer:
        first = writer.append_many([make_event(0)])  # committed: the checkpoint file exists
    ids, path = keyed_crash(db, anchor(tmp_path), 2)
    with SqliteAuditSink(db, readonly=True, checkpoint=anchor(tmp_path, OTHER_KEY)) as reader:
        assert [r["id"] for r in reader.iter_records()] == [first[0]["id"]]
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path, OTHER_KEY)) as writer:
        assert [r["id"] for r in writer.iter_records()] == [first[0]["id"]]
    assert jr.journals_of(db) == [path]
    assert rejected(db) == b""
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path)) as keyed:
        assert [r["id"] for r in keyed.iter_records()] == [first[0]["id"], *ids]
        assert keyed.verify().ok
    assert jr.journals_of(db) == []


def test_a_checkpoint_file_under_another_key_is_refused_as_a_read_error_of_the_checkpoint(
    tmp_path: Path,
) -> None:
    anchor(tmp_path).write(1, "ab" * 32)
    anchor(tmp_path).require_key_of_file()
    with pytest.raises(AuditReadError) as caught:
        anchor(tmp_path, OTHER_KEY).require_key_of_file()
    assert caught.value.sink == "checkpoint"
    assert caught.value.target == str(tmp_path / "trail.checkpoint")


def test_no_checkpoint_file_yet_lets_any_key_merge(tmp_path: Path) -> None:
    anchor(tmp_path, OTHER_KEY).require_key_of_file()


def test_a_keyed_opener_refuses_the_lines_of_an_unsigned_journal(tmp_path: Path) -> None:
    """An unkeyed writer's journal, or a signed one with its MACs stripped: nothing vouches for it."""
    db = tmp_path / "audit.sqlite3"
    sink = SqliteAuditSink(db)
    ids = journaled(sink, 2)
    crash(sink)
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path)) as again:
        assert list(again.iter_records()) == []
    assert all(i.encode() in rejected(db) for i in ids)


def test_an_opener_without_the_key_leaves_a_signed_journal_to_one_with_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "audit.sqlite3"
    caplog.set_level(logging.WARNING, logger="mcp_elicit.audit")
    ids, path = keyed_crash(db, anchor(tmp_path), 2)
    with SqliteAuditSink(db, readonly=True) as reader:
        assert list(reader.iter_records()) == []
    with SqliteAuditSink(db) as unkeyed_writer:
        assert list(unkeyed_writer.iter_records()) == []
    assert jr.journals_of(db) == [path]
    assert any(str(path) in r.getMessage() for r in caplog.records)
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path)) as keyed:
        assert [r["id"] for r in keyed.iter_records()] == ids
    assert jr.journals_of(db) == []


def test_a_keyed_reader_refuses_an_edit_of_a_live_keyed_processs_journal(tmp_path: Path) -> None:
    """The trail never holds the edit: the reader refuses it, the live process merges what it wrote."""
    db = tmp_path / "audit.sqlite3"
    live = SqliteAuditSink(db, checkpoint=anchor(tmp_path))
    ids = journaled(live, 1)
    assert live._journal is not None
    edit_line(live._journal.path, 0, b'"accept"', b'"cancel"')
    with SqliteAuditSink(db, readonly=True, checkpoint=anchor(tmp_path)) as reader:
        assert list(reader.iter_records()) == []
    live.close()
    assert [rid for _, rid in rows(db)] == ids
    with SqliteAuditSink(db, readonly=True, checkpoint=anchor(tmp_path)) as reader:
        assert [r["action"] for r in reader.iter_records()] == ["accept"]
        assert reader.verify().ok


@given(st.binary(max_size=300).filter(lambda b: b"\n" not in b))
def test_a_signed_line_reads_back_as_the_line_it_signs(line: bytes) -> None:
    checkpoint = Checkpoint("unused", KEY)
    refused: list[bytes] = []
    assert checkpoint.signed_lines([checkpoint.sign_line(line + b"\n")], refused) == [line + b"\n"]
    assert checkpoint.signed_lines([checkpoint.sign_line(line + b"\n")[:-1]], refused) == [line]
    assert refused == []


@given(st.binary(min_size=1, max_size=200).filter(lambda b: b"\n" not in b), st.data())
def test_any_change_to_a_signed_line_gets_it_refused(line: bytes, data: st.DataObject) -> None:
    checkpoint = Checkpoint("unused", KEY)
    signed = bytearray(checkpoint.sign_line(line))
    at = data.draw(st.integers(0, len(signed) - 1))
    signed[at] = data.draw(st.integers(0, 255).filter(lambda b: b != signed[at]))
    refused: list[bytes] = []
    assert checkpoint.signed_lines([bytes(signed)], refused) == []
    assert refused == [bytes(signed)]


def test_what_keeps_a_journal_from_being_merged_is_said_once_per_sink(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path)) as writer:
        writer.append_many([make_event(0)])  # committed: the checkpoint file exists
    _, path = keyed_crash(db, anchor(tmp_path), 1)
    caplog.set_level(logging.WARNING, logger="mcp_elicit.audit")
    with SqliteAuditSink(db, readonly=True, checkpoint=anchor(tmp_path, OTHER_KEY)) as reader:
        for _ in range(3):  # opening, then three reads: each looks at the journal again
            list(reader.iter_records())
    with SqliteAuditSink(db, readonly=True) as unkeyed:
        for _ in range(3):
            list(unkeyed.iter_records())
    about = [r for r in caplog.records if str(path) in r.getMessage()]
    assert [r.levelno for r in about] == [logging.ERROR, logging.WARNING]


def test_a_writer_whose_key_is_not_the_checkpoints_fails_its_first_answer_closed_instead_of_journaling_it(
    tmp_path: Path,
) -> None:
    """A journaled record is acknowledged before its merge: under a wrong key the merge would find
    the checkpoint unwritable only after the answer went on, and the key's owner would refuse
    the line, so the trail would never hold the record of an answer that was given."""
    db = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path)) as writer:
        writer.append_many([make_event(0)])
    with SqliteAuditSink(db, checkpoint=anchor(tmp_path, OTHER_KEY)) as wrong:
        with pytest.raises(AuditWriteError) as caught:
            wrong.append_now([make_event(1)])
        assert caught.value.sink == "checkpoint"
        assert wrong._journal is None
    assert jr.journals_of(db) == []
    assert rejected(db) == b""

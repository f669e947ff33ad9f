"""Refused journal lines kept beside a SQLite trail (``<db>.journal-rejected``): `verify` counts as
never chained only the lines whose record the chain does not hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_elicit.audit.checkpoint import CHECKPOINT_KEY_ENV, Checkpoint
from mcp_elicit.audit.rejected import KeptLines, kept_lines, line_record_id, rejected_path
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.cli import main

from .test_journal import crash, edit_line, journaled

KEY = "ab" * 32


def trail_with_kept_lines(tmp_path: Path) -> tuple[Path, Path, list[str], list[str]]:
    """A keyed trail whose refused lines are two copies of chained records (a live process's
    journal edited before its merge) and one record never chained (a dead process's signed line
    edited): the trail, its checkpoint, the chained ids and the never chained one."""
    trail, anchor = tmp_path / "trail.sqlite3", tmp_path / "trail.checkpoint"
    with SqliteAuditSink(trail, checkpoint=Checkpoint(anchor, bytes.fromhex(KEY))) as live:
        chained = journaled(live, 2)
        assert live._journal is not None
        edit_line(live._journal.path, 1, b'"accept"', b'"cancel"')
        live.maintain()  # chains what it wrote, keeps what the file held (both lines)
    dead = SqliteAuditSink(trail, checkpoint=Checkpoint(anchor, bytes.fromhex(KEY)))
    lost = journaled(dead, 1, start=5)
    assert dead._journal is not None
    path = dead._journal.path
    crash(dead)
    edit_line(path, 0, b'"accept"', b'"cancel"')  # its signature no longer matches: refused
    with SqliteAuditSink(trail, readonly=True, checkpoint=Checkpoint(anchor, bytes.fromhex(KEY))) as reader:
        assert [r["id"] for r in reader.iter_records()] == chained
    return trail, anchor, chained, lost


def test_kept_lines_counts_as_unchained_only_the_lines_whose_record_the_chain_lacks(tmp_path: Path) -> None:
    trail, _, chained, lost = trail_with_kept_lines(tmp_path)
    lines = [line for line in rejected_path(trail).read_bytes().splitlines() if not line.startswith(b"# ")]
    assert sorted(map(line_record_id, lines)) == sorted([*chained, *lost])
    assert kept_lines(trail, chained.__contains__) == KeptLines(kept=3, unchained=1)


def test_a_refused_line_without_a_readable_id_counts_as_unchained(tmp_path: Path) -> None:
    trail = tmp_path / "trail.sqlite3"
    rejected_path(trail).write_bytes(b'# from x\n12 5 9 {"action":"acc\n~' + b"0" * 64 + b' {"id":"r1"}\n')
    assert line_record_id(b"torn") is None
    assert kept_lines(trail, lambda _: True) == KeptLines(kept=2, unchained=1)


def test_verify_reports_as_never_chained_only_the_refused_lines_the_chain_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trail, anchor, _, _ = trail_with_kept_lines(tmp_path)
    monkeypatch.setenv(CHECKPOINT_KEY_ENV, KEY)
    result = CliRunner().invoke(main, ["audit", "verify", "--db", str(trail), "--checkpoint", str(anchor)])
    assert result.exit_code == 0
    assert str(rejected_path(trail)) in result.stderr
    counts = re.findall(r"\b\d+\b", result.stderr.replace(str(trail), ""))
    assert counts == ["1", "2"]  # never chained, copies of chained records

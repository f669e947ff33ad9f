"""The JSON Lines sink: canonical lines, tamper evidence by editing the file, torn lines, processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.core.consent import canonical_json
from mcp_elicit.errors import AuditWriteError

from .conftest import make_event


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "audit.jsonl"
    with JsonlAuditSink(path) as sink:
        sink.append_many([make_event(i) for i in range(5)])
    return path


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def breaks(path: Path, expected_head: str | None = None) -> list[tuple[int, str]]:
    with JsonlAuditSink(path) as sink:
        return [(b.index, b.kind) for b in sink.verify(expected_head).breaks]


def test_each_record_is_one_canonical_json_line(log: Path) -> None:
    for line in lines(log):
        assert canonical_json(json.loads(line)).decode() == line


def test_an_edited_line_is_a_hash_mismatch(log: Path) -> None:
    text = lines(log)
    text[1] = text[1].replace('"accept"', '"decline"')
    log.write_text("\n".join(text) + "\n", encoding="utf-8")
    assert breaks(log) == [(1, "hash_mismatch")]


def test_a_deleted_line_is_reported_after_the_gap(log: Path) -> None:
    text = lines(log)
    del text[2]
    log.write_text("\n".join(text) + "\n", encoding="utf-8")
    assert breaks(log) == [(2, "deleted")]


def test_a_copied_line_is_a_duplicate_and_out_of_order(log: Path) -> None:
    text = lines(log)
    text.insert(3, text[0])
    log.write_text("\n".join(text) + "\n", encoding="utf-8")
    found = breaks(log)
    assert (3, "inserted") in found
    assert (3, "duplicate_id") in found


def test_a_torn_last_line_is_skipped_by_the_next_append_and_reported_once(log: Path) -> None:
    good_head = json.loads(lines(log)[-1])["hash"]
    with log.open("ab") as f:
        f.write(b'{"v":1,"seq":6,"id":"torn')  # a crash mid-write
    with JsonlAuditSink(log) as sink:
        record = sink.append(make_event(6))
    assert record["prev_hash"] == good_head
    assert record["seq"] == 6
    assert lines(log)[-2].startswith('{"v":1,"seq":6,"id":"torn')
    assert breaks(log) == [(5, "malformed")]


def test_a_file_with_no_intact_record_at_its_end_fails_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcp_elicit.audit.jsonl as module

    monkeypatch.setattr(module, "MAX_TAIL_SCAN_BYTES", 1024)
    path = tmp_path / "junk.jsonl"
    path.write_text("not json\n" * 500, encoding="utf-8")
    with JsonlAuditSink(path) as sink, pytest.raises(AuditWriteError) as info:
        sink.append(make_event(0))
    assert (info.value.sink, info.value.target) == ("jsonl", str(path))


def test_the_tail_is_found_across_read_blocks(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    with JsonlAuditSink(path, level="request") as sink:
        sink.append_many([make_event(i, message="m" * 30_000) for i in range(4)])
        assert sink.append(make_event(9))["seq"] == 5
        assert sink.verify().ok


def test_a_folder_in_the_way_fails_at_open(tmp_path: Path) -> None:
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(AuditWriteError):
        JsonlAuditSink(tmp_path / "dir.jsonl")


def test_fsync_mode_writes_the_same_records(tmp_path: Path) -> None:
    with JsonlAuditSink(tmp_path / "s.jsonl", fsync=True) as sink:
        sink.append(make_event(0))
        assert sink.verify().ok


WRITER = """
import sys
from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.core.consent import ConsentEvent
sink = JsonlAuditSink(sys.argv[1])
for i in range(int(sys.argv[2])):
    sink.append(ConsentEvent(time=1.0 * i, side="server", mode="url", action="cancel", decided_by="timeout"))
sink.close()
"""


def test_writers_in_several_processes_never_fork_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), "40"]) for _ in range(3)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    with JsonlAuditSink(path) as sink:
        report = sink.verify()
    assert report.ok
    assert report.count == 120

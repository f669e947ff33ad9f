"""The SQLite trail's journal: a record is journaled before the answer goes on, merged into the
chain later; a crash loses nothing, a merge never stores a record twice, several processes share
one chain, a journal that cannot be written fails closed, an edited line is refused or, in a
live process's journal, changes nothing and is kept aside."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_elicit.audit import journal as jr
from mcp_elicit.audit.checkpoint import Checkpoint
from mcp_elicit.audit.sqlite import TABLE, SqliteAuditSink
from mcp_elicit.audit.writer import GroupWriter
from mcp_elicit.errors import AuditWriteError

from .conftest import make_event

pytestmark = pytest.mark.anyio
BOUND_SECONDS = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def rows(db: Path) -> list[tuple[int, str]]:
    """(seq, id) of every stored row, read by a connection of its own (as another process)."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"SELECT seq, id FROM {TABLE} ORDER BY seq").fetchall()
    finally:
        conn.close()


def journal_files(db: Path) -> list[Path]:
    return jr.journals_of(db)


def journaled(sink: SqliteAuditSink, n: int, start: int = 0) -> list[str]:
    """Journal `n` records through the sink's answer path; their ids."""
    ids = []
    for i in range(start, start + n):
        records = sink.append_now([make_event(i)])
        assert records is not None
        assert "seq" not in records[0]  # journaled, not committed
        ids.append(records[0]["id"])
    return ids


def crash(sink: SqliteAuditSink) -> None:
    """What a killed process leaves: its journal file, unlocked, nothing merged at exit."""
    assert sink._journal is not None
    sink._journal.release()
    sink._journal = None
    sink._conn.close()


def crashed(db: Path, n: int) -> tuple[list[str], Path]:
    """A process journals `n` records into the trail `db` and dies: their ids, its journal."""
    sink = SqliteAuditSink(db)
    ids = journaled(sink, n)
    assert sink._journal is not None
    path = sink._journal.path
    crash(sink)
    return ids, path


def edit_line(path: Path, index: int, old: bytes, new: bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[index] = lines[index].replace(old, new)
    path.write_bytes(b"\n".join(lines))


async def test_a_record_is_in_the_journal_before_the_answer_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    sink = SqliteAuditSink(db)
    record = await GroupWriter(sink).append(make_event(1))
    assert record is not None
    (journal,) = journal_files(db)
    assert record["id"].encode() in journal.read_bytes()
    assert journal.stat().st_mode & 0o777 == 0o600
    sink.close()
    assert [rid for _, rid in rows(db)] == [record["id"]]
    assert journal_files(db) == []


def test_a_process_reads_its_own_journaled_records(tmp_path: Path) -> None:
    with SqliteAuditSink(tmp_path / "audit.sqlite3") as sink:
        ids = journaled(sink, 3)
        assert [r["id"] for r in sink.iter_records()] == ids
        assert [r["seq"] for r in sink.iter_records()] == [1, 2, 3]
        assert sink.get(ids[1])["seq"] == 2  # type: ignore[index]
        assert sink.verify().count == 3


def test_journaled_and_committed_records_keep_the_order_they_were_appended_in(tmp_path: Path) -> None:
    with SqliteAuditSink(tmp_path / "audit.sqlite3") as sink:
        first = journaled(sink, 2)
        committed = sink.append(make_event(9))
        assert committed is not None
        assert committed["seq"] == 3  # what was journaled before is chained first
        assert [r["id"] for r in sink.iter_records()] == [*first, committed["id"]]


KILLED = """
import os, signal, sys
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.core.consent import ConsentEvent
sink = SqliteAuditSink(sys.argv[1])
n, merged_first = int(sys.argv[2]), int(sys.argv[3])
def event(i):
    return ConsentEvent(time=1.0 * i, side="server", mode="form", action="accept", decided_by="person")
for i in range(n):
    if i == merged_first:
        sink.maintain()  # merge what is journaled so far: the journal still holds it
    record = sink.append_now([event(i)])
    assert record and "seq" not in record[0]
    print(record[0]["id"], flush=True)
if merged_first == n:
    sink.maintain()  # all merged, then killed before the journal is removed
os.kill(os.getpid(), signal.SIGKILL)
"""


def run_killed(db: Path, n: int, merged_first: int) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(db), str(n), str(merged_first)],
        capture_output=True,
        text=True,
        timeout=BOUND_SECONDS,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return proc.stdout.split()


@pytest.mark.parametrize("opener", ["writer", "reader"])
def test_a_killed_process_loses_no_record_and_the_next_opening_chains_them(
    tmp_path: Path, opener: str
) -> None:
    db = tmp_path / "audit.sqlite3"
    ids = run_killed(db, 20, merged_first=-1)  # nothing merged before the kill
    assert len(ids) == 20
    assert rows(db) == []
    assert len(journal_files(db)) == 1
    with SqliteAuditSink(db, readonly=opener == "reader") as sink:
        report = sink.verify()
        assert [r["id"] for r in sink.iter_records()] == ids  # in the order they were journaled
    assert report.ok
    assert report.count == 20
    assert journal_files(db) == []


@pytest.mark.parametrize("merged_first", [8, 20])
def test_a_merge_interrupted_before_the_journal_goes_stores_no_record_twice(
    tmp_path: Path, merged_first: int
) -> None:
    db = tmp_path / "audit.sqlite3"
    ids = run_killed(db, 20, merged_first)
    assert len(rows(db)) == merged_first  # committed, and still in the journal
    with SqliteAuditSink(db) as sink:
        report = sink.verify()
    assert report.ok
    assert [rid for _, rid in rows(db)] == ids
    assert [seq for seq, _ in rows(db)] == list(range(1, 21))


def test_a_journal_merged_again_after_its_removal_failed_adds_nothing(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    sink = SqliteAuditSink(db)
    journaled(sink, 5)
    assert sink._journal is not None
    copy = sink._journal.path.read_bytes()
    name = sink._journal.path.name
    sink.close()  # merged and removed
    (tmp_path / name).write_bytes(copy)  # as if the removal had not happened
    with SqliteAuditSink(db) as again:
        assert again.verify().count == 5
    assert journal_files(db) == []


SHARING = """
import sys
import anyio
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.audit.writer import GroupWriter
from mcp_elicit.core.consent import ConsentEvent
async def main() -> None:
    sink = SqliteAuditSink(sys.argv[1])
    writer = GroupWriter(sink)
    for i in range(int(sys.argv[2])):
        record = await writer.append(
            ConsentEvent(time=1.0 * i, side="server", mode="form", action="accept", decided_by="person")
        )
        print(record["id"], flush=True)
        if i % 10 == 0:
            sink.verify()  # a reader in the middle: merges first
    sink.close()
anyio.run(main)
"""


def test_two_processes_journaling_into_one_trail_make_one_chain_with_every_record(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite3"
    SqliteAuditSink(db).close()
    procs = [
        subprocess.Popen([sys.executable, "-c", SHARING, str(db), "60"], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    ids = []
    for p in procs:
        out, _ = p.communicate(timeout=BOUND_SECONDS)
        assert p.returncode == 0
        ids += out.split()
    with SqliteAuditSink(db, readonly=True) as sink:
        report = sink.verify()
        stored = [r["id"] for r in sink.iter_records()]
    assert report.ok
    assert sorted(stored) == sorted(ids)
    assert len(ids) == 120
    assert [seq for seq, _ in rows(db)] == list(range(1, 121))
    assert journal_files(db) == []


def test_lines_a_reader_merged_after_the_writers_own_merge_are_not_stored_twice(tmp_path: Path) -> None:
    # The writer skips looking its lines up in the trail only while the trail ends where its own
    # last commit left it; a reader's merge moves that end, so the lookup is made again.
    db = tmp_path / "audit.sqlite3"
    live = SqliteAuditSink(db)
    first = journaled(live, 2)
    live.merge_journal()  # the trail now ends at the writer's own commit
    more = journaled(live, 2, start=2)
    with SqliteAuditSink(db) as reader:  # another process's sink reads: it merges `more`
        assert reader.verify().count == 4
    assert len(rows(db)) == 4
    later = journaled(live, 1, start=4)
    live.merge_journal()
    assert [rid for _, rid in rows(db)] == [*first, *more, *later]
    live.close()
    with SqliteAuditSink(db, readonly=True) as reader:
        assert reader.verify().ok


def test_a_reader_sees_what_another_live_process_journaled_and_leaves_it_its_journal(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    live = SqliteAuditSink(db)
    ids = journaled(live, 2)
    with SqliteAuditSink(db, readonly=True) as reader:  # another process's reader
        assert [r["id"] for r in reader.iter_records()] == ids
        more = journaled(live, 1, start=2)
        assert reader.verify().count == 3  # read again: merged up to the live journal's end
    assert len(journal_files(db)) == 1  # still its process's
    live.close()  # merges what it journaled: what a reader merged is not stored twice
    assert [rid for _, rid in rows(db)] == [*ids, *more]
    assert journal_files(db) == []
    with SqliteAuditSink(db, readonly=True) as reader:
        assert reader.verify().ok


async def test_a_journal_that_cannot_be_written_fails_the_append_closed(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    sink = SqliteAuditSink(db)
    writer = GroupWriter(sink)
    await writer.append(make_event(0))
    sink.maintain()
    journal = sink._journal
    assert journal is not None
    full = os.open("/dev/full", os.O_RDWR)  # every write: ENOSPC
    os.dup2(full, journal.fd)
    os.close(full)
    writer._cost = 0.0  # on this thread, as a lone append is
    with pytest.raises(AuditWriteError) as info:
        await writer.append(make_event(1))
    assert info.value.sink == "sqlite"
    assert info.value.target == str(journal.path)
    assert journal.broken  # the failed line could not be cut off: no more lines go there
    record = await writer.append(make_event(2))  # committed directly instead
    assert record is not None
    assert record["seq"] == 2
    assert len(rows(db)) == 2


def test_a_journal_that_cannot_be_created_fails_the_append_closed(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    sink = SqliteAuditSink(db)
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    sink.path = blocker / "audit.sqlite3"  # where its journal would go: a folder that is gone
    blocker.rmdir()
    with pytest.raises(AuditWriteError):
        sink.append_now([make_event(1)])
    sink.path = db
    sink.close()


def test_once_a_merge_cannot_write_the_checkpoint_records_commit_directly_and_fail_closed(
    tmp_path: Path,
) -> None:
    db, blocker = tmp_path / "audit.sqlite3", tmp_path / "not-a-folder"
    blocker.write_text("")
    anchor = Checkpoint(blocker / "trail.checkpoint", b"k" * 32)  # its folder cannot be made
    with SqliteAuditSink(db, checkpoint=anchor) as sink:
        ids = journaled(sink, 1)  # on the answer's path: the checkpoint is written at the merge
        sink.maintain()  # the merge commits, then the checkpoint fails (logged)
        with pytest.raises(AuditWriteError) as caught:
            sink.append_now([make_event(1)])
        assert caught.value.sink == "checkpoint"
        assert [r["id"] for r in sink.iter_records()][:1] == ids
        blocker.unlink()
        blocker.mkdir()  # the checkpoint can be written again: journaling resumes
        sink.append_now([make_event(2)])
        journaled_again = sink.append_now([make_event(3)])
        assert journaled_again is not None
        assert "seq" not in journaled_again[0]  # journaled, not committed


def test_an_edited_journal_line_is_refused_and_kept_aside(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    ids, path = crashed(db, 3)
    edit_line(path, 1, b'"accept"', b'"accepted"')  # the offsets no longer fit
    with SqliteAuditSink(db) as again:
        report = again.verify()
        stored = [r["id"] for r in again.iter_records()]
    assert report.ok
    assert stored == [ids[0], ids[2]]
    rejected = db.with_name(db.name + ".journal-rejected").read_bytes()
    assert ids[1].encode() in rejected
    assert journal_files(db) == []


def test_a_torn_last_line_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    ids, path = crashed(db, 2)
    with path.open("ab") as f:
        f.write(b'17 30 40 {"action":')  # a write cut short by a crash
    with SqliteAuditSink(db) as again:
        assert [r["id"] for r in again.iter_records()] == ids
        assert again.verify().ok
    assert b'{"action":' in db.with_name(db.name + ".journal-rejected").read_bytes()


def test_without_a_key_a_well_formed_edit_of_a_dead_processs_journal_is_chained_as_edited(
    tmp_path: Path,
) -> None:
    """Read back after a crash, an unsigned journal is as trusted as the database beside it: an
    edit that keeps the line a record is not caught (docs/security.md; with a keyed checkpoint the
    lines are signed and it is refused: test_signed_journal.py)."""
    db = tmp_path / "audit.sqlite3"
    _, path = crashed(db, 1)
    edit_line(path, 0, b'"accept"', b'"cancel"')
    with SqliteAuditSink(db) as again:
        assert [r["action"] for r in again.iter_records()] == ["cancel"]
        assert again.verify().ok


def test_an_edit_of_a_live_processs_journal_changes_nothing_and_is_kept_aside(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Its process merges what it wrote, not what the file holds now, and keeps the changed text."""
    db = tmp_path / "audit.sqlite3"
    caplog.set_level(logging.ERROR, logger="mcp_elicit.audit")
    with SqliteAuditSink(db) as sink:
        ids = journaled(sink, 2)
        assert sink._journal is not None
        edit_line(sink._journal.path, 1, b'"accept"', b'"cancel"')
        sink.maintain()
        assert [r["action"] for r in sink.iter_records()] == ["accept", "accept"]
        assert [r["id"] for r in sink.iter_records()] == ids
        assert sink.verify().ok
    rejected = db.with_name(db.name + ".journal-rejected").read_bytes()
    assert ids[1].encode() in rejected
    assert b'"cancel"' in rejected
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert not any(i in errors[0] for i in ids)  # nobody merged the changed text: no record to check


def test_an_edit_a_reader_merged_first_is_still_reported_by_the_journals_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The report names the records the reader merged from the file: the trail may hold them as changed."""
    db = tmp_path / "audit.sqlite3"
    caplog.set_level(logging.ERROR, logger="mcp_elicit.audit")
    live = SqliteAuditSink(db)
    ids = journaled(live, 1)
    assert live._journal is not None
    edit_line(live._journal.path, 0, b'"accept"', b'"cancel"')
    with SqliteAuditSink(db, readonly=True) as reader:  # another process's reader, first
        assert [r["action"] for r in reader.iter_records()] == ["cancel"]
    live.close()
    assert [rid for _, rid in rows(db)] == ids
    assert b'"cancel"' in db.with_name(db.name + ".journal-rejected").read_bytes()
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert ids[0] in errors[0]


def test_a_full_journal_is_replaced_and_removed_once_merged(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(db) as sink:
        ids = []
        while sink._journal is None or sink._journal.end < jr.JOURNAL_ROTATE_BYTES:
            ids += journaled(sink, 100, start=len(ids))
        full = sink._journal
        first = full.path
        assert sink.maintenance_after() == 0.0
        sink.maintain()
        assert not first.exists()
        assert full.append(b"late\n") is False  # a journal rotated out takes no more lines
        ids += journaled(sink, 1, start=len(ids))
        assert sink._journal.path != first
        assert [r["id"] for r in sink.iter_records()] == ids
        assert sink.verify().ok


def test_a_journaled_record_asks_for_a_merge_within_the_bound(tmp_path: Path) -> None:
    with SqliteAuditSink(tmp_path / "audit.sqlite3") as sink:
        assert sink.maintenance_after() is None
        journaled(sink, 1)
        after = sink.maintenance_after()
        assert after is not None
        assert 0.0 < after <= jr.JOURNAL_MERGE_SECONDS
        journaled(sink, jr.JOURNAL_MERGE_RECORDS - 1, start=1)
        assert sink.maintenance_after() == 0.0
        sink.maintain()
        assert sink.maintenance_after() is None


class Merging(SqliteAuditSink):
    """The real sink, telling when its writer thread merged."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.merged = threading.Event()
        self.maintained_on: list[int] = []

    def maintain(self) -> None:
        super().maintain()
        self.maintained_on.append(threading.get_ident())
        if self._journal is not None and self._journal.merged == self._journal.end:
            self.merged.set()


async def test_the_writer_thread_merges_the_journal_off_the_callers_thread(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    sink = Merging(db)
    writer = GroupWriter(sink)
    for i in range(jr.JOURNAL_MERGE_RECORDS):
        writer._cost = 0.0  # appends one after another here: keep them on this thread
        await writer.append(make_event(i))
    assert await anyio.to_thread.run_sync(sink.merged.wait, BOUND_SECONDS)
    assert threading.get_ident() not in sink.maintained_on
    assert len(rows(db)) == jr.JOURNAL_MERGE_RECORDS
    sink.close()


async def test_at_power_loss_durability_nothing_is_journaled(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    sink = SqliteAuditSink(db, durability="power_loss")
    record = await GroupWriter(sink).append(make_event(1))
    assert record is not None
    assert record["seq"] == 1
    assert journal_files(db) == []
    sink.close()


def test_a_record_with_an_id_of_its_own_is_committed_not_journaled(tmp_path: Path) -> None:
    with SqliteAuditSink(tmp_path / "audit.sqlite3") as sink:
        records = sink.append_now([make_event(1, record_id="mine")])
        assert records is not None
        assert records[0]["seq"] == 1
        assert sink._journal is None


SHORT = """
import resource, signal, sys
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.core.consent import ConsentEvent
from mcp_elicit.errors import AuditWriteError
event = ConsentEvent(time=1.0, side="server", mode="form", action="accept", decided_by="person")
sink = SqliteAuditSink(sys.argv[1])
sink.append_now([event])
journal = sink._journal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (journal.end + 40, resource.RLIM_INFINITY))
try:
    sink.append_now([event])
except AuditWriteError as exc:
    print("failed", exc.target == str(journal.path), journal.broken, journal.end, flush=True)
"""


def test_a_line_written_only_in_part_fails_closed_and_is_cut_off(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    proc = subprocess.run(
        [sys.executable, "-c", SHORT, str(db)],
        capture_output=True,
        text=True,
        timeout=BOUND_SECONDS,
        check=False,
    )
    failed, on_journal, broken, end = proc.stdout.split()
    assert (failed, on_journal, broken) == ("failed", "True", "False")
    (journal,) = journal_files(db)
    assert journal.stat().st_size == int(end)  # the partial line is gone: the journal stays whole
    with SqliteAuditSink(db) as sink:
        assert sink.verify().count == 1
    assert not db.with_name(db.name + ".journal-rejected").exists()


def test_a_line_edited_into_what_is_not_json_is_chained_and_caught_by_verify(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    ids, path = crashed(db, 2)
    edit_line(path, 0, b'"mode":"form"', b'"mode":{form}')  # same length: offsets still fit
    with SqliteAuditSink(db) as again:
        report = again.verify()
    assert [(b.record_id, b.kind) for b in report.breaks] == [("", "malformed")]
    assert [rid for _, rid in rows(db)] == ids


def test_an_append_after_close_fails_closed_and_leaves_no_journal(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    sink = SqliteAuditSink(db)
    journaled(sink, 1)
    sink.close()
    with pytest.raises(AuditWriteError):
        sink.append_now([make_event(2)])
    assert journal_files(db) == []
    assert len(rows(db)) == 1


FORKED = """
import os, sys
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.core.consent import ConsentEvent
sink = SqliteAuditSink(sys.argv[1])
event = ConsentEvent(time=1.0, side="server", mode="form", action="accept", decided_by="person")
for i in range(300):  # enough to ask for a merge at once
    sink.append_now([event])
assert sink.maintenance_after() == 0.0
pid = os.fork()
if pid == 0:  # the child: its parent's journal is not its own
    os._exit(0 if sink.maintenance_after() is None and not sink._journal.usable() else 1)
_, status = os.waitpid(pid, 0)
sink.close()
print(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_leaves_its_parents_journal_alone(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    command = [sys.executable, "-c", FORKED, str(db)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=BOUND_SECONDS, check=False)
    assert proc.stdout.split() == ["0"], proc.stderr
    assert len(rows(db)) == 300


OUTLIVED = """
import os, signal, sys
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.core.consent import ConsentEvent
sink = SqliteAuditSink(sys.argv[1])
event = ConsentEvent(time=1.0, side="server", mode="form", action="accept", decided_by="person")
for _ in range(3):
    print(sink.append_now([event])[0]["id"], flush=True)
ready, told = os.pipe()
if os.fork() == 0:  # the child (its fork handlers have run) lives on until the test closes stdin
    os.write(told, b"x")
    sys.stdin.read()
    os._exit(0)
os.read(ready, 1)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_journal_whose_process_died_is_recovered_while_a_forked_child_lives_on(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    command = [sys.executable, "-c", OUTLIVED, str(db)]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ids = [proc.stdout.readline().strip() for _ in range(3)]
        assert proc.wait(timeout=BOUND_SECONDS) == -signal.SIGKILL  # the parent; its child lives
        with SqliteAuditSink(db, readonly=True) as reader:
            assert [r["id"] for r in reader.iter_records()] == ids
        assert journal_files(db) == []  # taken for a dead process's: merged and removed
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the child reads end of file and exits


EXITS = """
import sys
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.core.consent import ConsentEvent
sink = SqliteAuditSink(sys.argv[1])  # never closed, as a server that just returns leaves it
event = ConsentEvent(time=1.0, side="server", mode="form", action="accept", decided_by="person")
for _ in range(3):
    print(sink.append_now([event])[0]["id"], flush=True)
"""


def test_a_process_that_exits_without_closing_its_sink_leaves_its_records_in_the_database(
    tmp_path: Path,
) -> None:
    db = tmp_path / "audit.sqlite3"
    command = [sys.executable, "-c", EXITS, str(db)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=BOUND_SECONDS, check=False)
    assert proc.returncode == 0, proc.stderr
    assert [rid for _, rid in rows(db)] == proc.stdout.split()  # plain sqlite3 sees them
    assert journal_files(db) == []  # merged, so removed: nothing left for the next opening


def test_a_journal_replaced_while_in_use_is_left_for_a_fresh_one_and_nothing_is_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(db) as sink:
        ids = journaled(sink, 2)
        assert sink._journal is not None
        first = sink._journal.path
        copy = first.with_name("copy")
        copy.write_bytes(first.read_bytes())
        os.replace(copy, first)  # what an editor's "save" does: a new file under the name
        with caplog.at_level("ERROR", logger="mcp_elicit.audit"):
            sink.maintain()
        assert [r.levelname for r in caplog.records] == ["ERROR"]
        assert sink._journal.path != first  # new lines go where a crash cannot lose them
        ids += journaled(sink, 1, start=2)
        assert [r["id"] for r in sink.iter_records()] == ids
    assert journal_files(db) == []  # the copy was taken for a dead process's journal: merged, removed
    assert [rid for _, rid in rows(db)] == ids  # its lines were merged before: nothing twice


def test_a_temporary_journal_left_by_a_dead_process_is_removed_on_opening_once_old(tmp_path: Path) -> None:
    db = tmp_path / "trail.db"
    SqliteAuditSink(db).close()
    old = tmp_path / f".{db.name}.journal-4242-{'a' * 16}.new"
    fresh = tmp_path / f".{db.name}.journal-4243-{'b' * 16}.new"
    old.touch()
    fresh.touch()
    aged = old.stat().st_mtime - jr.STALE_NEW_JOURNAL_SECONDS - 1
    os.utime(old, (aged, aged))
    SqliteAuditSink(db).close()
    assert not old.exists()
    assert fresh.exists()  # it may belong to a process between creating and renaming it now


def test_a_temporary_journal_whose_lock_is_held_is_never_removed(tmp_path: Path) -> None:
    import fcntl

    db = tmp_path / "trail.db"
    held = tmp_path / f".{db.name}.journal-4244-{'c' * 16}.new"
    fd = os.open(held, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        now = held.stat().st_mtime + jr.STALE_NEW_JOURNAL_SECONDS + 1
        assert jr.remove_stale_new(db, now) == []
        assert held.exists()
    finally:
        os.close(fd)
    assert jr.remove_stale_new(db, now) == [held]

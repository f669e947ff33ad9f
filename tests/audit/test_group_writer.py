"""Group commit: concurrent appends share transactions, each waiter gets its own record or error."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_elicit.audit.sqlite import CHECKPOINT_EVERY_COMMITS, SqliteAuditSink
from mcp_elicit.audit.writer import GroupWriter, writer_for
from mcp_elicit.errors import AuditWriteError, InvalidArgument
from mcp_elicit.testing import MemoryAuditSink

from .conftest import make_event

pytestmark = pytest.mark.anyio
CONCURRENT = 200
BOUND_SECONDS = 30.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Counting(SqliteAuditSink):
    """The real SQLite sink, counting its transactions."""

    transactions = 0

    def append_many(self, events: Any) -> list[dict[str, Any]]:
        self.transactions += 1
        return super().append_many(events)


async def test_concurrent_appends_share_commits_and_each_gets_its_own_record(tmp_path: Path) -> None:
    sink = Counting(tmp_path / "audit.sqlite3")
    writer = GroupWriter(sink)
    got: dict[int, dict[str, Any] | None] = {}

    async def one(i: int) -> None:
        got[i] = await writer.append(make_event(i, record_id=f"r{i}"))

    with anyio.fail_after(BOUND_SECONDS):
        async with anyio.create_task_group() as tg:
            for i in range(CONCURRENT):
                tg.start_soon(one, i)
    assert all(got[i] is not None and got[i]["id"] == f"r{i}" for i in range(CONCURRENT))  # type: ignore[index]
    assert sink.transactions < CONCURRENT  # commits were shared
    report = sink.verify()
    assert report.ok
    assert report.count == CONCURRENT
    sink.close()


async def test_a_sink_that_cannot_write_fails_every_waiter_of_the_group() -> None:
    sink = MemoryAuditSink()
    sink.fail_writes = True
    writer = writer_for(sink)
    failures: list[BaseException] = []

    async def one(i: int) -> None:
        try:
            await writer.append(make_event(i))
        except AuditWriteError as exc:
            failures.append(exc)

    with anyio.fail_after(BOUND_SECONDS):
        async with anyio.create_task_group() as tg:
            for i in range(10):
                tg.start_soon(one, i)
    assert len(failures) == 10
    assert sink.records == []


async def test_the_writer_is_one_per_sink() -> None:
    sink = MemoryAuditSink()
    assert writer_for(sink) is writer_for(sink)
    assert writer_for(sink) is not writer_for(MemoryAuditSink())


class Threads(SqliteAuditSink):
    """The real SQLite sink, noting which thread committed each record and when it checkpointed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.committed_on: list[int] = []
        self.maintained_on: list[int] = []
        self.maintained = threading.Event()

    def _write(self, events: Any) -> Any:
        sealed = super()._write(events)
        self.committed_on.extend(threading.get_ident() for _ in sealed)
        return sealed

    def maintain(self) -> None:
        super().maintain()
        self.maintained_on.append(threading.get_ident())
        self.maintained.set()


async def test_a_lone_append_commits_on_the_callers_thread_without_a_writer_thread(tmp_path: Path) -> None:
    sink = Threads(tmp_path / "audit.sqlite3")
    writer = GroupWriter(sink)
    record = await writer.append(make_event(1, record_id="r1"))
    assert record is not None
    assert record["id"] == "r1"
    assert sink.committed_on == [threading.get_ident()]
    assert writer._thread is None
    assert sink.verify().ok
    sink.close()


async def test_at_power_loss_durability_every_record_goes_through_the_writer_thread(tmp_path: Path) -> None:
    sink = Threads(tmp_path / "audit.sqlite3", durability="power_loss")
    writer = GroupWriter(sink)
    with anyio.fail_after(BOUND_SECONDS):
        for i in range(3):
            await writer.append(make_event(i))
    assert len(sink.committed_on) == 3
    assert threading.get_ident() not in sink.committed_on
    assert sink.verify().count == 3
    sink.close()


async def test_a_database_locked_elsewhere_sends_the_append_to_the_writer_thread(tmp_path: Path) -> None:
    sink = Threads(tmp_path / "audit.sqlite3")
    other = sqlite3.connect(tmp_path / "audit.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the database's write lock
    writer = GroupWriter(sink)
    got: list[dict[str, Any] | None] = []

    async def one() -> None:
        got.append(await writer.append(make_event(1, record_id="waited")))

    with anyio.fail_after(BOUND_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            await anyio.wait_all_tasks_blocked()
            assert got == []  # not committed, and the event loop is not blocked
            other.execute("COMMIT")
    assert got[0] is not None
    assert got[0]["id"] == "waited"
    assert sink.committed_on != [threading.get_ident()]
    other.close()
    sink.close()


async def test_the_wal_is_checkpointed_on_the_writer_thread_after_enough_commits(tmp_path: Path) -> None:
    sink = Threads(tmp_path / "audit.sqlite3")
    writer = GroupWriter(sink)
    for i in range(CHECKPOINT_EVERY_COMMITS):
        writer._cost = 0.0  # appends one after another here: keep them all on this thread
        await writer.append(make_event(i, record_id=f"r{i}"))  # an id of its own: not journaled
    assert await anyio.to_thread.run_sync(sink.maintained.wait, BOUND_SECONDS)
    assert sink.maintained_on
    assert threading.get_ident() not in sink.maintained_on
    assert threading.get_ident() in sink.committed_on
    assert sink.verify().count == CHECKPOINT_EVERY_COMMITS
    sink.close()


def test_a_sink_used_without_a_writer_still_checkpoints_its_wal(tmp_path: Path) -> None:
    sink = Threads(tmp_path / "audit.sqlite3")
    for i in range(CHECKPOINT_EVERY_COMMITS):
        sink.append(make_event(i))
    assert sink.maintained_on == [threading.get_ident()]
    assert sink.verify().count == CHECKPOINT_EVERY_COMMITS
    sink.close()


def test_an_unknown_durability_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument) as caught:
        SqliteAuditSink(tmp_path / "audit.sqlite3", durability="eventually")  # type: ignore[arg-type]
    assert caught.value.name == "durability"

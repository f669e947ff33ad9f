"""Group commit: concurrent appends share transactions, each waiter gets its own record or error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.audit.writer import GroupWriter, writer_for
from mcp_elicit.errors import AuditWriteError
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

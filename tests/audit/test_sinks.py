"""What every audit sink promises (memory, SQLite, JSON Lines, PostgreSQL): one contract, run on each."""

from __future__ import annotations

import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_elicit.audit.base import AuditSink
from mcp_elicit.core.consent import GENESIS_HASH, record_hash
from mcp_elicit.errors import AuditWriteError, InvalidArgument

from .conftest import make_event


def test_every_sink_satisfies_the_protocol(sink_factory: Any) -> None:
    assert isinstance(sink_factory(), AuditSink)


def test_appended_records_chain_from_genesis_and_read_back_unchanged(sink_factory: Any) -> None:
    sink = sink_factory()
    first = sink.append(make_event(0))
    second = sink.append(make_event(1))
    assert (first["seq"], first["prev_hash"]) == (1, GENESIS_HASH)
    assert (second["seq"], second["prev_hash"]) == (2, first["hash"])
    assert second["hash"] == record_hash(second)
    assert list(sink.iter_records()) == [first, second]
    assert sink.get(second["id"]) == second
    assert sink.get("no-such-id") is None


def test_a_batch_continues_the_chain_in_one_go(sink_factory: Any) -> None:
    sink = sink_factory()
    sink.append(make_event(0))
    batch = sink.append_many([make_event(i) for i in range(1, 6)])
    assert [r["seq"] for r in batch] == [2, 3, 4, 5, 6]
    report = sink.verify()
    assert report.ok
    assert report.count == 6
    assert report.head_hash == batch[-1]["hash"]
    assert sink.append_many([]) == []


def test_record_ids_are_kept_when_given_and_made_when_not(sink_factory: Any) -> None:
    sink = sink_factory()
    given = sink.append(make_event(0, record_id="my-id"))
    made = sink.append(make_event(1))
    assert given["id"] == "my-id"
    assert len(made["id"]) == 32


def test_level_none_stores_nothing(sink_factory: Any) -> None:
    sink = sink_factory(level="none")
    assert sink.append(make_event(0)) is None
    assert sink.append_many([make_event(1)]) == []
    assert list(sink.iter_records()) == []


def test_the_level_of_the_sink_applies_to_every_record(sink_factory: Any) -> None:
    sink = sink_factory(level="request_response")
    record = sink.append(make_event(0))
    assert record["level"] == "request_response"
    assert record["content"] == {"target": "prod"}


def test_filters_select_by_server_action_and_time(sink_factory: Any) -> None:
    from mcp_elicit.core.consent import ServerIdentity

    sink = sink_factory()
    sink.append_many(
        [
            make_event(0),
            make_event(10, action="decline"),
            make_event(20, server=ServerIdentity("other")),
            make_event(30, action="cancel", decided_by="timeout"),
        ]
    )
    assert [r["seq"] for r in sink.iter_records(server="deployer")] == [1, 2, 4]
    assert [r["seq"] for r in sink.iter_records(action="decline")] == [2]
    assert [r["seq"] for r in sink.iter_records(since=1_800_000_010.0)] == [2, 3, 4]
    assert [r["seq"] for r in sink.iter_records(until="2027-01-15T08:00:20Z")] == [1, 2]
    assert [
        r["seq"] for r in sink.iter_records(server="deployer", since=1_800_000_005.0, until=1_800_000_030.0)
    ] == [2]


def test_an_unknown_filter_is_refused_rather_than_ignored(sink_factory: Any) -> None:
    sink = sink_factory()
    sink.append(make_event(0))
    with pytest.raises(InvalidArgument) as caught:
        list(sink.iter_records(servr="deployer"))  # type: ignore[call-arg]
    assert caught.value.name == "servr"


def test_concurrent_writers_in_one_process_never_fork_the_chain(sink_factory: Any) -> None:
    sink = sink_factory()
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for i in range(20):
                sink.append(make_event(worker * 100 + i))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    records = list(sink.iter_records())
    assert [r["seq"] for r in records] == list(range(1, 121))
    assert sink.verify().ok


def test_two_handles_on_the_same_store_share_one_chain(sink_factory: Any) -> None:
    if sink_factory.kind == "memory":
        pytest.skip("a memory sink is one handle")
    a, b = sink_factory(), sink_factory()
    a.append(make_event(0))
    b.append(make_event(1))
    a.append(make_event(2))
    report = a.verify()
    assert report.ok
    assert report.count == 3


def test_a_closed_sink_fails_closed(sink_factory: Any) -> None:
    if sink_factory.kind == "memory":
        pytest.skip("the memory sink fails on demand instead; see the next test")
    sink = sink_factory()
    sink.close()
    with pytest.raises(AuditWriteError) as info:
        sink.append(make_event(0))
    assert info.value.sink == sink_factory.kind
    assert isinstance(info.value, OSError)


def test_the_memory_sink_fails_on_demand_for_fail_closed_tests() -> None:
    from mcp_elicit.testing import MemoryAuditSink

    sink = MemoryAuditSink()
    sink.fail_writes = True
    with pytest.raises(AuditWriteError) as info:
        sink.append(make_event(0))
    assert (info.value.sink, sink.records) == ("memory", [])


def test_tampering_with_the_memory_sink_is_caught() -> None:
    from mcp_elicit.testing import MemoryAuditSink

    sink = MemoryAuditSink()
    sink.append_many([make_event(i) for i in range(3)])
    sink.records[1]["action"] = "decline"
    assert [(b.index, b.kind) for b in sink.verify().breaks] == [(1, "hash_mismatch")]


@pytest.mark.parametrize("kind", ["sqlite", "jsonl"])
def test_a_new_trail_file_and_its_folder_are_readable_by_their_owner_only(tmp_path: Path, kind: str) -> None:
    from mcp_elicit.audit.base import PRIVATE_FILE_MODE
    from mcp_elicit.audit.jsonl import JsonlAuditSink
    from mcp_elicit.audit.sqlite import SqliteAuditSink

    path = tmp_path / "new-folder" / f"trail.{kind}"
    sink = SqliteAuditSink(path) if kind == "sqlite" else JsonlAuditSink(path)
    sink.close()
    assert stat.S_IMODE(path.stat().st_mode) == PRIVATE_FILE_MODE
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0  # umask may only take away

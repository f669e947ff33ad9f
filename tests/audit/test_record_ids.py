"""Record ids: UUID version 7 hex (time first, then random bits), unique, in the order they were
made, and never shared with a forked child."""

from __future__ import annotations

import os
import time
import uuid

from mcp_elicit.audit.base import RECORD_ID_POOL, new_record_id


def test_record_ids_are_uuid7_hex_unique_across_several_pools_and_carry_the_time() -> None:
    before = time.time_ns() // 1_000_000
    ids = [new_record_id() for _ in range(RECORD_ID_POOL * 3 + 7)]
    after = time.time_ns() // 1_000_000
    assert len(set(ids)) == len(ids)
    for rid in ids[:: RECORD_ID_POOL // 4]:
        parsed = uuid.UUID(hex=rid)
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122
        assert parsed.hex == rid
        assert before <= int(rid[:12], 16) <= after  # milliseconds since the epoch, first


def test_an_id_made_in_a_later_millisecond_sorts_after_every_earlier_one() -> None:
    # Why the time comes first: the trail's unique index on ids grows at its end, as the chain
    # does, instead of taking each record on a page of its own.
    first = new_record_id()
    stamp = int(first[:12], 16)
    while time.time_ns() // 1_000_000 == stamp:  # at most a millisecond
        pass
    assert all(new_record_id() > first for _ in range(50))


def test_a_forked_child_makes_ids_the_parent_does_not() -> None:
    new_record_id()  # the pool holds bytes the child must not reuse
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        os.write(write, "".join(new_record_id() for _ in range(4)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode()
    os.waitpid(pid, 0)
    parent = [new_record_id() for _ in range(4)]
    child_ids = [child[k : k + 32] for k in range(0, len(child), 32)]
    assert len(child_ids) == 4
    assert not set(child_ids) & set(parent)

"""Record ids: random UUID4 hex, unique, and never shared with a forked child."""

from __future__ import annotations

import os
import uuid

from mcp_elicit.audit.base import RECORD_ID_POOL, new_record_id


def test_record_ids_are_uuid4_hex_and_unique_across_several_pools() -> None:
    ids = [new_record_id() for _ in range(RECORD_ID_POOL * 3 + 7)]
    assert len(set(ids)) == len(ids)
    for rid in ids[:: RECORD_ID_POOL // 4]:
        parsed = uuid.UUID(hex=rid)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert parsed.hex == rid


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

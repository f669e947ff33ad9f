"""Hand-off stores keep one contract in memory and in Redis: compare-and-swap, waiting, per-user bounds."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcp_elicit.errors import TooManyHandoffs
from mcp_elicit.server.stores import (
    DONE,
    MAX_OPEN_HANDOFFS_PER_USER,
    OPENED,
    PENDING,
    HandoffRecord,
    MemoryHandoffStore,
    RedisHandoffStore,
)
from tests.server.handoff_support import ALICE, BOB, redis_client, redis_url

pytestmark = pytest.mark.anyio

NOW = 1_800_000_000.0
WAIT_BOUND = 5.0


def record(hid: str, user: str = ALICE.key, **changes: Any) -> HandoffRecord:
    base = HandoffRecord(
        id=hid,
        user=user,
        client_id="c",
        flow="api_key:github",
        message="m",
        url=f"http://127.0.0.1/elicit/start/{hid}",
        base="http://127.0.0.1/elicit",
        created_at=NOW,
        expires_at=NOW + 600,
    )
    return dataclasses.replace(base, **changes)


@asynccontextmanager
async def open_store(kind: str) -> AsyncIterator[Any]:
    if kind == "memory":
        yield MemoryHandoffStore()
        return
    async with redis_client() as (redis, prefix):
        yield RedisHandoffStore(redis, prefix)


KINDS = ["memory", pytest.param("redis", marks=pytest.mark.redis)]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_status_changes_only_from_the_status_the_writer_saw(kind: str) -> None:
    async with open_store(kind) as store:
        await store.create(record("h1"), NOW)
        assert (await store.get("h1")).status == PENDING
        assert await store.swap(record("h1", status=OPENED, marker="m"), expect=PENDING)
        assert not await store.swap(record("h1", status=OPENED, marker="other"), expect=PENDING)
        assert (await store.get("h1")).marker == "m"
        assert await store.get("unknown") is None
        assert not await store.swap(record("unknown", status=OPENED), expect=PENDING)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_waiter_wakes_when_the_hand_off_completes(kind: str) -> None:
    async with open_store(kind) as store:
        await store.create(record("h1"), NOW)
        got: list[Any] = []

        async def waiter() -> None:
            got.append(await store.wait("h1", WAIT_BOUND))

        with anyio.fail_after(WAIT_BOUND):
            async with anyio.create_task_group() as tg:
                tg.start_soon(waiter)
                await anyio.wait_all_tasks_blocked()
                assert await store.swap(record("h1", status=DONE), expect=PENDING)
        assert got[0].status == DONE


@pytest.mark.parametrize("kind", KINDS)
async def test_a_waiter_gives_up_after_its_timeout_with_nothing(kind: str) -> None:
    async with open_store(kind) as store:
        await store.create(record("h1"), NOW)
        assert await store.wait("h1", 0.05) is None
        assert await store.wait("missing", 0.05) is None


@pytest.mark.parametrize("kind", KINDS)
async def test_one_user_cannot_hold_more_than_the_bound_of_open_hand_offs(kind: str) -> None:
    async with open_store(kind) as store:
        for i in range(MAX_OPEN_HANDOFFS_PER_USER):
            await store.create(record(f"a{i}"), NOW)
        with pytest.raises(TooManyHandoffs) as info:
            await store.create(record("one-more"), NOW)
        assert info.value.limit == MAX_OPEN_HANDOFFS_PER_USER
        await store.create(record("b0", BOB.key), NOW)  # others are not affected
        assert await store.swap(record("a0", status=DONE), expect=PENDING)
        await store.create(record("after-one-finished"), NOW)  # a finished one frees its slot


@pytest.mark.parametrize("kind", KINDS)
async def test_a_store_lists_only_the_open_unexpired_hand_offs_of_one_user(kind: str) -> None:
    async with open_store(kind) as store:
        await store.create(record("a0"), NOW)
        await store.create(record("a1"), NOW)
        await store.create(record("b0", BOB.key), NOW)
        assert await store.swap(record("a1", status=DONE), expect=PENDING)
        assert await store.open_ids(ALICE.key, NOW) == ["a0"]
        assert await store.open_ids(ALICE.key, NOW + 601) == []


@pytest.mark.parametrize("kind", KINDS)
async def test_expired_hand_offs_stop_counting_against_the_bound(kind: str) -> None:
    async with open_store(kind) as store:
        for i in range(MAX_OPEN_HANDOFFS_PER_USER):
            await store.create(record(f"a{i}"), NOW)
        await store.create(record("later"), NOW + 601)


@pytest.mark.redis
async def test_two_redis_stores_with_one_prefix_see_each_others_changes() -> None:
    """Replicas: a completion written through one store wakes a waiter on the other."""
    async with redis_client() as (redis, prefix):
        import redis.asyncio as aioredis

        other = aioredis.Redis.from_url(redis_url())
        a, b = RedisHandoffStore(redis, prefix), RedisHandoffStore(other, prefix)
        try:
            await a.create(record("h1"), NOW)
            got: list[Any] = []

            async def waiter() -> None:
                got.append(await a.wait("h1", WAIT_BOUND))

            with anyio.fail_after(WAIT_BOUND):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(waiter)
                    await anyio.wait_all_tasks_blocked()
                    assert await b.swap(record("h1", status=DONE), expect=PENDING)
            assert got[0].status == DONE
        finally:
            await other.aclose()


class _StoreWithoutOpenIds:
    """A store written against the protocol before it had `open_ids`: every other method."""

    def __init__(self) -> None:
        self._inner = MemoryHandoffStore()

    def __getattr__(self, name: str) -> Any:
        if name == "open_ids":
            raise AttributeError(name)
        return getattr(self._inner, name)


async def test_a_store_without_open_ids_still_serves_and_a_new_link_supersedes_nothing() -> None:
    from mcp_elicit.server import ApiKeyHandoff
    from tests.server.handoff_support import make_handoffs

    store = _StoreWithoutOpenIds()
    hs = make_handoffs(store=store)
    flow = ApiKeyHandoff("acme", "Acme API key")
    await store.create(record("a0"), NOW)
    assert await hs.supersede(ALICE, flow) == 0
    assert (await store.get("a0")).status == PENDING  # type: ignore[union-attr]

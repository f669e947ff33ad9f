"""The in-memory replay guard: single use, forgets only what has expired, no sweep of the table."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.server.replay import MemoryReplayGuard

pytestmark = pytest.mark.anyio


async def test_a_nonce_is_accepted_once_and_refused_while_it_lives() -> None:
    guard = MemoryReplayGuard()
    assert await guard.consume("a", expires_at=10.0, now=0.0)
    assert not await guard.consume("a", expires_at=10.0, now=9.9)


async def test_expired_nonces_are_forgotten_as_time_passes() -> None:
    guard = MemoryReplayGuard()
    for i in range(100):
        assert await guard.consume(f"n{i}", expires_at=float(i + 1), now=0.0)
    assert len(guard) == 100
    assert await guard.consume("fresh", expires_at=500.0, now=50.5)
    assert len(guard) == 51  # n50..n99 still alive, plus "fresh"


async def test_a_nonce_seen_again_after_expiry_keeps_its_new_lifetime() -> None:
    guard = MemoryReplayGuard()
    assert await guard.consume("a", expires_at=1.0, now=0.0)
    assert await guard.consume("a", expires_at=100.0, now=2.0)
    assert await guard.consume("b", expires_at=100.0, now=3.0)  # pops nothing live
    assert not await guard.consume("a", expires_at=100.0, now=4.0)


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(1, 30)), max_size=60))
def test_the_guard_agrees_with_a_plain_model(steps: list[tuple[int, int]]) -> None:
    anyio.run(_agrees_with_model, steps)


async def _agrees_with_model(steps: list[tuple[int, int]]) -> None:
    guard = MemoryReplayGuard()
    model: dict[str, float] = {}
    now = 0.0
    for key, ttl in steps:
        now += 1.0
        nonce = f"n{key}"
        expected = not (nonce in model and model[nonce] > now)
        if expected:
            model[nonce] = now + ttl
        assert await guard.consume(nonce, expires_at=now + ttl, now=now) is expected
    assert len(guard) <= len(model)

"""Single use for `requestState` (spec M3: "single use, where needed, is enforced server-side").

Every state mcp-elicit mints carries a random nonce. The first request that presents it
consumes the nonce; a second one is a replay and is refused. Nonces are kept only until
the state would have expired anyway.
"""

from __future__ import annotations

import heapq
from typing import Any, Protocol

__all__ = ["MemoryReplayGuard", "RedisReplayGuard", "ReplayGuard"]


class ReplayGuard(Protocol):
    async def consume(self, nonce: str, expires_at: float, now: float) -> bool:
        """Record `nonce` as used; False when it was used before."""
        ...


class MemoryReplayGuard:
    """Nonces in a dict plus a min-heap ordered by expiry: right for one process.

    Each request pops only the nonces that have expired since the last one, so the cost per
    request is O(log n) in the live nonces (flat in practice), never a sweep of the whole table.
    """

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}
        self._expiry: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._seen)

    async def consume(self, nonce: str, expires_at: float, now: float) -> bool:
        heap, seen = self._expiry, self._seen
        while heap and heap[0][0] <= now:
            exp, old = heapq.heappop(heap)
            if seen.get(old) == exp:  # a nonce re-used after expiry has a newer entry: keep it
                del seen[old]
        known = seen.get(nonce)
        if known is not None and known > now:
            return False
        seen[nonce] = expires_at
        heapq.heappush(heap, (expires_at, nonce))
        return True


class RedisReplayGuard:
    """Nonces in Redis (`SET NX EX`), so replicas behind one load balancer agree."""

    def __init__(self, redis: Any, prefix: str = "mcp-elicit:nonce:") -> None:
        self._redis = redis
        self._prefix = prefix

    async def consume(self, nonce: str, expires_at: float, now: float) -> bool:
        ttl = max(1, int(expires_at - now) + 1)
        return bool(await self._redis.set(self._prefix + nonce, b"1", nx=True, ex=ttl))

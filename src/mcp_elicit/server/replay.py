"""Single use for `requestState` (spec M3: "single use, where needed, is enforced server-side").

Every state mcp-elicit mints carries a random nonce. The first request that presents it
consumes the nonce; a second one is a replay and is refused. Nonces are kept only until
the state would have expired anyway.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["PRUNE_AFTER_NONCES", "MemoryReplayGuard", "RedisReplayGuard", "ReplayGuard"]

# The in-memory guard sweeps out expired nonces once it holds this many; a sweep is O(n), so
# doing it every 1,024 insertions keeps the amortised cost per request constant.
PRUNE_AFTER_NONCES = 1024


class ReplayGuard(Protocol):
    async def consume(self, nonce: str, expires_at: float, now: float) -> bool:
        """Record `nonce` as used; False when it was used before."""
        ...


class MemoryReplayGuard:
    """Nonces in a dict, pruned of expired entries as it goes: right for one process."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}

    async def consume(self, nonce: str, expires_at: float, now: float) -> bool:
        if len(self._seen) > PRUNE_AFTER_NONCES:
            self._seen = {n: exp for n, exp in self._seen.items() if exp > now}
        if nonce in self._seen and self._seen[nonce] > now:
            return False
        self._seen[nonce] = expires_at
        return True


class RedisReplayGuard:
    """Nonces in Redis (`SET NX EX`), so replicas behind one load balancer agree."""

    def __init__(self, redis: Any, prefix: str = "mcp-elicit:nonce:") -> None:
        self._redis = redis
        self._prefix = prefix

    async def consume(self, nonce: str, expires_at: float, now: float) -> bool:
        ttl = max(1, int(expires_at - now) + 1)
        return bool(await self._redis.set(self._prefix + nonce, b"1", nx=True, ex=ttl))

"""Where open hand-offs live: in memory for one process, in Redis for several replicas.

A hand-off record is small (ids, the user's key, the flow, the status and the browser
marker's hash; never a secret). Every status change is a compare-and-swap on the status, so
two browsers, two replicas or a double-clicked form cannot both complete one hand-off.

    pending ──first visit (marker bound)──▶ opened ──form or callback──▶ working ─▶ done
       │                                      │  ▲                          │
       └──────────────── cancelled ◀──────────┘  └──── (retry: bad input) ──┘
                       (client declined,       declined (cancel on the page)   failed

`wait()` returns when a record reaches a terminal status. With Redis the replica that
completes the page publishes on a per-hand-off channel and the replica whose tool (or
session) waits wakes up, polling as a fallback in case a message is lost; so the browser can
finish on replica B while the MCP session lives on replica A.

Records outlive their expiry by RECORD_GRACE_SECONDS so that a late or replayed link is
answered "expired" or "already used" rather than "unknown".
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from mcp_elicit.errors import TooManyHandoffs

__all__ = [
    "MAX_MEMORY_HANDOFFS",
    "MAX_OPEN_HANDOFFS_PER_USER",
    "RECORD_GRACE_SECONDS",
    "REDIS_POLL_SECONDS",
    "TERMINAL",
    "HandoffRecord",
    "HandoffStore",
    "MemoryHandoffStore",
    "RedisHandoffStore",
]

# Hand-offs one user may have open (not yet done, declined, failed or expired) at once. A client
# that loops on a tool mints a new hand-off per call; 16 is far above what a person juggles and
# bounds what one looping client can make the store hold.
MAX_OPEN_HANDOFFS_PER_USER = 16
# Records the in-memory store holds in total before it refuses new ones (after pruning expired
# ones): a bound on memory for a single process, roughly 10 MB of records.
MAX_MEMORY_HANDOFFS = 10_000
# How long a record is kept after it expires, so a late or replayed link gets a clear "expired"
# or "already used" page instead of "unknown link". One hour covers a link opened the next morning
# badly enough; after that it is just unknown.
RECORD_GRACE_SECONDS = 3_600.0
# How often a Redis waiter re-reads the record while it waits for the pub/sub message: pub/sub is
# fire-and-forget (a reconnect loses messages), so the poll bounds the delay after a lost one.
REDIS_POLL_SECONDS = 1.0

PENDING, OPENED, WORKING = "pending", "opened", "working"
DONE, DECLINED, FAILED, CANCELLED = "done", "declined", "failed", "cancelled"
TERMINAL = frozenset({DONE, DECLINED, FAILED, CANCELLED})


@dataclass
class HandoffRecord:
    """One hand-off. `user` is the Principal key it is bound to; `base` the pages' base URL it was
    minted on; `marker` the SHA-256 (hex) of the browser marker set on first visit;
    `oauth_state`/`oauth_verifier` exist only during an OAuth redirect (the verifier never
    leaves the server)."""

    id: str
    user: str
    client_id: str | None
    flow: str
    message: str
    url: str
    base: str
    created_at: float
    expires_at: float
    status: str = PENDING
    marker: str | None = None
    oauth_state: str | None = None
    oauth_verifier: str | None = None

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), separators=(",", ":"), ensure_ascii=True)

    @classmethod
    def from_json(cls, raw: str | bytes) -> HandoffRecord:
        data = json.loads(raw)
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})

    def expired(self, now: float) -> bool:
        return not now < self.expires_at

    @property
    def open(self) -> bool:
        return self.status not in TERMINAL


class HandoffStore(Protocol):
    async def create(self, record: HandoffRecord, now: float) -> None:
        """Store a new record; TooManyHandoffs when its user has too many open ones."""
        ...

    async def get(self, handoff_id: str) -> HandoffRecord | None:
        """A copy of the record, or None when unknown (or long gone)."""
        ...

    async def open_ids(self, user: str, now: float) -> list[str]:
        """The ids of `user`'s open, unexpired hand-offs (the ones the per-user bound counts).
        Optional: without it, a new -32042 link does not supersede the person's unopened ones."""
        ...

    async def swap(self, record: HandoffRecord, expect: str) -> bool:
        """Write `record` only if the stored status is still `expect`; wake waiters when its
        new status is terminal. False when someone else changed it first."""
        ...

    async def wait(self, handoff_id: str, timeout: float) -> HandoffRecord | None:
        """Wait up to `timeout` seconds for a terminal status; the record then, else None."""
        ...


class MemoryHandoffStore:
    """Records in a dict, waiters on events: one process only (the default)."""

    def __init__(self, *, max_records: int = MAX_MEMORY_HANDOFFS) -> None:
        self._records: dict[str, HandoffRecord] = {}
        self._events: dict[str, anyio.Event] = {}
        self._max = max_records

    async def create(self, record: HandoffRecord, now: float) -> None:
        self._prune(now)
        open_for_user = sum(
            1 for r in self._records.values() if r.user == record.user and r.open and not r.expired(now)
        )
        if open_for_user >= MAX_OPEN_HANDOFFS_PER_USER:
            raise TooManyHandoffs(MAX_OPEN_HANDOFFS_PER_USER)
        if len(self._records) >= self._max:
            raise TooManyHandoffs(self._max)
        self._records[record.id] = dataclasses.replace(record)

    async def open_ids(self, user: str, now: float) -> list[str]:
        return [r.id for r in self._records.values() if r.user == user and r.open and not r.expired(now)]

    def _prune(self, now: float) -> None:
        gone = [k for k, r in self._records.items() if r.expires_at + RECORD_GRACE_SECONDS < now]
        for k in gone:
            del self._records[k]
            self._events.pop(k, None)

    async def get(self, handoff_id: str) -> HandoffRecord | None:
        record = self._records.get(handoff_id)
        return dataclasses.replace(record) if record is not None else None

    async def swap(self, record: HandoffRecord, expect: str) -> bool:
        current = self._records.get(record.id)
        if current is None or current.status != expect:
            return False
        self._records[record.id] = dataclasses.replace(record)
        if record.status in TERMINAL:
            event = self._events.pop(record.id, None)
            if event is not None:
                event.set()
        return True

    async def wait(self, handoff_id: str, timeout: float) -> HandoffRecord | None:
        record = await self.get(handoff_id)
        if record is None or record.status in TERMINAL:
            return record
        event = self._events.setdefault(handoff_id, anyio.Event())
        with anyio.move_on_after(timeout):
            await event.wait()
        record = await self.get(handoff_id)
        return record if record is not None and record.status in TERMINAL else None


_CREATE = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[1], 'r', ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[7], ARGV[6])
redis.call('PEXPIREAT', KEYS[2], ARGV[3])
return 1
"""

_SWAP = """
if redis.call('HGET', KEYS[1], 's') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 's', ARGV[2], 'r', ARGV[3])
if ARGV[4] == '1' then
  redis.call('ZREM', KEYS[2], ARGV[6])
  redis.call('PUBLISH', ARGV[5], ARGV[2])
end
return 1
"""


class RedisHandoffStore:
    """Records in Redis (`redis.asyncio`), shared by every replica that uses the same `prefix`.

    Keys: `<prefix>h:<id>` (a hash: status and record), `<prefix>u:<sha256(user)>` (a sorted
    set of the user's open hand-offs, for the per-user bound), channel `<prefix>c:<id>`.
    Status changes run as Lua scripts, so each is atomic on the Redis server.
    """

    def __init__(self, redis: Any, prefix: str = "mcp-elicit:handoff:") -> None:
        self._redis = redis
        self._prefix = prefix
        self._create = redis.register_script(_CREATE)
        self._swap = redis.register_script(_SWAP)

    def _key(self, handoff_id: str) -> str:
        return f"{self._prefix}h:{handoff_id}"

    def _user_key(self, user: str) -> str:
        return f"{self._prefix}u:{hashlib.sha256(user.encode()).hexdigest()}"

    def _channel(self, handoff_id: str) -> str:
        return f"{self._prefix}c:{handoff_id}"

    async def create(self, record: HandoffRecord, now: float) -> None:
        keep_until_ms = int((record.expires_at + RECORD_GRACE_SECONDS) * 1000)
        ok = await self._create(
            keys=[self._key(record.id), self._user_key(record.user)],
            args=[
                record.status,
                record.to_json(),
                keep_until_ms,
                now,
                MAX_OPEN_HANDOFFS_PER_USER,
                record.id,
                record.expires_at,
            ],
        )
        if not ok:
            raise TooManyHandoffs(MAX_OPEN_HANDOFFS_PER_USER)

    async def open_ids(self, user: str, now: float) -> list[str]:
        ids = await self._redis.zrangebyscore(self._user_key(user), f"({now}", "+inf")
        return [i.decode() if isinstance(i, bytes) else str(i) for i in ids]

    async def get(self, handoff_id: str) -> HandoffRecord | None:
        raw = await self._redis.hget(self._key(handoff_id), "r")
        return HandoffRecord.from_json(raw) if raw is not None else None

    async def swap(self, record: HandoffRecord, expect: str) -> bool:
        terminal = "1" if record.status in TERMINAL else "0"
        ok = await self._swap(
            keys=[self._key(record.id), self._user_key(record.user)],
            args=[expect, record.status, record.to_json(), terminal, self._channel(record.id), record.id],
        )
        return bool(ok)

    async def wait(self, handoff_id: str, timeout: float) -> HandoffRecord | None:
        deadline = time.monotonic() + timeout
        pubsub = self._redis.pubsub()
        await pubsub.subscribe(self._channel(handoff_id))
        try:
            while True:  # subscribed first, then read: a completion between the two is not lost
                record = await self.get(handoff_id)
                if record is None or record.status in TERMINAL:
                    return record
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                pause = min(remaining, REDIS_POLL_SECONDS)
                await pubsub.get_message(ignore_subscribe_messages=True, timeout=pause)
        finally:
            await pubsub.unsubscribe()
            await pubsub.aclose()

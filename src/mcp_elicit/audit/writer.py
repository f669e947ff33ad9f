"""Group commit: one writer thread per sink, and appends that wait at the same time share one
transaction.

The server and client trails append one record per elicitation and must not let the answer go
on before the record is committed (fail closed). Done one by one, each record costs a hop to a
worker thread and a commit of its own. Here every sink gets one writer thread: an append queues
its event and waits; the thread takes everything queued (up to `MAX_GROUP_RECORDS`), writes it
with one `append_many` (one transaction, all or none) and wakes every waiter, each with its own
record or the sink's error. Under load the commit is shared; alone, an append costs about what
a worker-thread hop did. Nothing is acknowledged before its transaction committed.

Without the hop: a sink whose commit is cheap and never waits (SQLite at its default durability,
audit/sqlite.py) offers `append_now`. When nothing is queued and such commits have taken at most
`INLINE_MAX_LOOP_SHARE` of the time between appends, the append commits right there on the
caller's thread (a hop to a thread and back costs more than that commit, and much more on a busy
machine). A burst of appends goes through the writer thread again, where it shares commits and
leaves the event loop free. A sink's upkeep (`maintain`: the SQLite sink's journal merge and WAL
checkpoint) runs on the writer thread when the sink asks for it: at once when its
`maintenance_after()` says 0, or when that many seconds have passed (the thread waits for it).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from typing import Any, Final

import anyio
import anyio.from_thread
import anyio.lowlevel

from mcp_elicit.core.consent import ConsentEvent

logger = logging.getLogger("mcp_elicit.audit")

__all__ = ["INLINE_MAX_LOOP_SHARE", "MAX_GROUP_RECORDS", "WRITER_IDLE_SECONDS", "GroupWriter", "writer_for"]

# Records written in one transaction at most: bounds how long the sink's lock is held (a few ms
# on SQLite) while still sharing a commit among that many waiting elicitations.
MAX_GROUP_RECORDS: Final = 256

# A writer thread with nothing to write for this long ends; the next append starts a new one.
WRITER_IDLE_SECONDS: Final = 30.0

# Commits run on the caller's thread only while they take at most this share of the time between
# appends (a moving average): an event loop never spends more than about a quarter of its time
# in audit commits, and a burst of appends gets group commit on the writer thread instead.
INLINE_MAX_LOOP_SHARE: Final = 0.25
_AVERAGE_WEIGHT: Final = 0.125  # weight of the newest sample in the moving averages
_MAX_GAP_SAMPLE: Final = 0.1  # a long quiet spell counts as this many seconds between appends


class _Pending:
    __slots__ = ("done", "event", "outcome", "token")

    def __init__(self, event: ConsentEvent, token: Any) -> None:
        self.event = event
        self.token = token
        self.done = anyio.Event()
        self.outcome: Any = None


class GroupWriter:
    """Appends to `sink` from async code through one writer thread, committing in groups."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self._queue: deque[_Pending] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._append_now = getattr(sink, "append_now", None)
        self._upkeep_after = getattr(sink, "maintenance_after", None)
        self._maintain = False
        self._timed = False  # the thread knows the sink's upkeep is pending and will wake for it
        self._last_append = time.perf_counter()
        self._gap = 0.0  # moving averages: seconds between appends, seconds per inline commit
        self._cost = 0.0

    async def append(self, event: ConsentEvent) -> dict[str, Any] | None:
        """The stored record (None at level "none") once committed (once journaled, only its id
        and level: audit/journal.py); the sink's error otherwise."""
        if self._append_now is not None:
            records = self._inline(event)
            if records is not None:
                return records[0] if records else None
        pending = _Pending(event, anyio.lowlevel.current_token())
        self._submit(pending)
        await pending.done.wait()
        if isinstance(pending.outcome, BaseException):
            raise pending.outcome
        return pending.outcome  # type: ignore[no-any-return]

    def _inline(self, event: ConsentEvent) -> list[dict[str, Any]] | None:
        """The records committed on this thread, or None to go through the writer thread."""
        start = time.perf_counter()
        gap, self._last_append = min(start - self._last_append, _MAX_GAP_SAMPLE), start
        self._gap += (gap - self._gap) * _AVERAGE_WEIGHT
        if self._queue or self._cost > self._gap * INLINE_MAX_LOOP_SHARE:
            self._cost *= 1 - _AVERAGE_WEIGHT  # forget slowly, so a quiet spell goes inline again
            return None
        records: list[dict[str, Any]] | None = self._append_now((event,))  # type: ignore[misc]
        if records is None:
            return None
        self._cost += (time.perf_counter() - start - self._cost) * _AVERAGE_WEIGHT
        if self._upkeep_after is not None:
            after = self._upkeep_after()
            if after == 0.0 and not self._maintain:
                self._submit(None)
            elif after is not None and not self._timed:  # wake the thread to wait for it
                self._submit(None, now=False)
        elif getattr(self.sink, "wants_maintenance", False):
            self._submit(None)
        return records

    def _submit(self, pending: _Pending | None, now: bool = True) -> None:
        """Queue `pending` (None: ask for the sink's upkeep, at once unless not `now`) and wake
        the writer thread."""
        with self._cond:
            if pending is None:
                self._maintain = self._maintain or now
                self._timed = True  # the thread looks at the sink's upkeep when it wakes
            else:
                self._queue.append(pending)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mcp-elicit-audit", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _due(self) -> float | None:
        """Seconds until the sink's upkeep is due (0: now), None when none is pending; under
        the condition's lock, so an append that journals after this wakes the thread."""
        after = None if self._upkeep_after is None else self._upkeep_after()
        self._timed = after is not None
        return after

    def _run(self) -> None:
        while True:
            with self._cond:
                due = self._due()
                if not self._queue and not self._maintain and due != 0.0:
                    self._cond.wait(WRITER_IDLE_SECONDS if due is None else due)
                    due = self._due()
                maintain, self._maintain = self._maintain or due == 0.0, False
                if not self._queue and not maintain:
                    if due is not None:
                        continue  # woken before the upkeep is due: wait for it again
                    self._thread = None  # idle: end; append starts another under this lock
                    return
                batch = [self._queue.popleft() for _ in range(min(len(self._queue), MAX_GROUP_RECORDS))]
            if maintain or getattr(self.sink, "wants_maintenance", False):
                try:
                    self.sink.maintain()
                except Exception:  # upkeep only: the records are committed; never stop the writer
                    logger.exception("audit sink upkeep failed")
            if batch:
                self._commit(batch)

    def _commit(self, batch: list[_Pending]) -> None:
        try:
            records = self.sink.append_many([p.event for p in batch])
            outcomes: list[Any] = list(records) if len(records) == len(batch) else [None] * len(batch)
        except Exception as exc:  # the sink's error goes to every waiter of this group
            outcomes = [exc] * len(batch)
        for p, outcome in zip(batch, outcomes, strict=True):
            p.outcome = outcome
        by_loop: dict[int, list[_Pending]] = {}
        for p in batch:  # one hop into each waiting event loop per group, not one per record
            by_loop.setdefault(id(getattr(p.token, "native_token", p.token)), []).append(p)
        for group in by_loop.values():
            with contextlib.suppress(RuntimeError):  # that loop has ended: nobody waits any more
                loop = getattr(group[0].token, "native_token", None)
                if hasattr(loop, "call_soon_threadsafe"):  # asyncio: wake without waiting for it
                    loop.call_soon_threadsafe(_wake, group)  # type: ignore[union-attr]
                else:
                    anyio.from_thread.run_sync(_wake, group, token=group[0].token)


def _wake(group: list[_Pending]) -> None:
    for p in group:
        p.done.set()


_writers_lock = threading.Lock()


def writer_for(sink: Any) -> GroupWriter:
    """The one writer of `sink`, kept on the sink itself (made on first use)."""
    writer = getattr(sink, "_mcp_elicit_writer", None)
    if writer is not None:  # set once, never replaced: no lock needed to read it
        return writer  # type: ignore[no-any-return]
    with _writers_lock:
        writer = getattr(sink, "_mcp_elicit_writer", None)
        if writer is None:
            writer = GroupWriter(sink)
            with contextlib.suppress(AttributeError):  # a sink with __slots__: no sharing
                sink._mcp_elicit_writer = writer
        return writer

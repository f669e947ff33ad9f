"""What every audit sink offers, and the pieces they share.

A sink stores consent records (core/consent.py) in append order and chains each one onto the
last record it holds, so two writers never fork the chain: the SQLite sink reads the tail inside
``BEGIN IMMEDIATE``, the PostgreSQL sink under a transaction-scoped advisory lock, the JSON Lines
sink under an exclusive file lock, and every sink holds a thread lock in-process.

Fail closed: a sink that cannot store a record raises `AuditWriteError`; the caller then declines
the elicitation (unless configured to proceed, see config.py). Nothing is buffered past `append`:
when it returns, the record is committed.

Sinks are synchronous. Async callers (the server and client trails) go through the sink's one
writer thread (audit/writer.py), which commits appends that wait at the same time in one
transaction (group commit); `append_many` writes a batch in one transaction when throughput
matters.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Final, Protocol, Self, TypedDict, Unpack, cast, runtime_checkable
from urllib.parse import quote

from mcp_elicit.audit.checkpoint import Checkpoint
from mcp_elicit.core.chain import ChainVerifier, VerifyReport
from mcp_elicit.core.consent import (
    GENESIS_HASH,
    ConsentEvent,
    Level,
    canonical_json,
    make_sealed_record,
    time_bound,
)
from mcp_elicit.errors import AuditReadError, InvalidArgument

__all__ = [
    "COLUMNS",
    "PAGE_SIZE",
    "RECORD_ID_POOL",
    "WAL_RETRY_FIRST_PAUSE_S",
    "WAL_RETRY_MAX_PAUSE_S",
    "AuditSink",
    "Filters",
    "RecordFilters",
    "Row",
    "SinkBase",
    "SqlSinkBase",
    "chain_records",
    "chain_sealed",
    "enter_wal",
    "new_record_id",
    "open_readonly",
    "parse_body",
    "row_of",
    "verify_rows",
]

# Rows fetched per query when a sink walks its store (listing, verifying): large enough that the
# per-query cost vanishes, small enough that a huge trail never sits in memory at once.
PAGE_SIZE: Final = 1_000

TimeBound = float | datetime | str


class RecordFilters(TypedDict, total=False):
    """What `iter_records` filters on: the server's name, the action, and a time range (``since``
    inclusive, ``until`` exclusive; a datetime, epoch seconds or an ISO 8601 string)."""

    server: str | None
    action: str | None
    since: TimeBound | None
    until: TimeBound | None


@runtime_checkable
class AuditSink(Protocol):
    """A store of chained consent records."""

    level: Level

    def append(self, event: ConsentEvent) -> dict[str, Any] | None:
        """Record `event` (None at level "none"); raises AuditWriteError when it cannot."""
        ...

    def append_many(self, events: Iterable[ConsentEvent]) -> list[dict[str, Any]]:
        """Record several events in one transaction: all or none."""
        ...

    def iter_records(self, **filters: Unpack[RecordFilters]) -> Iterator[dict[str, Any]]:
        """Stored records in append order, filtered (`RecordFilters`)."""
        ...

    def get(self, record_id: str) -> dict[str, Any] | None: ...

    def verify(self, expected_head: str | None = None) -> VerifyReport: ...

    def close(self) -> None: ...


class SinkBase:
    """What every sink shares: `append` is `append_many` of one, and a sink is a context manager.
    `append_many` stores nothing at level "none", holds the thread lock around the sink's `_store`
    and rewrites the checkpoint after the commit.

    A sink given a keyed `checkpoint` (audit/checkpoint.py) rewrites it after every commit, and
    its `verify` requires the record it names to be there unchanged, and the file to be there
    once the trail holds records.
    """

    checkpoint: Checkpoint | None = None
    level: Level

    def __init__(self, level: Level, checkpoint: Checkpoint | None) -> None:
        self.level = level
        self.checkpoint = checkpoint
        self._lock = threading.Lock()  # one operation at a time on this sink, in-process

    def _checkpointed(self, records: list[tuple[dict[str, Any], str]]) -> None:
        if self.checkpoint is not None and records:
            last = records[-1][0]
            self.checkpoint.write(last["seq"], last["hash"], first=records[0][0]["seq"])

    def _key_fits(self) -> bool:
        """Whether this sink's key may write its checkpoint file (always, when it has none): a
        sink that acknowledges a record before its commit (the SQLite journal) asks first, since
        a wrong key is otherwise found only by the commit, after the answer went on."""
        return self.checkpoint is None or self.checkpoint.fits_file()

    def _anchor(self) -> tuple[int, str, bool] | None:
        return None if self.checkpoint is None else self.checkpoint.anchor()

    def append_many(self, events: Iterable[ConsentEvent]) -> list[dict[str, Any]]:
        events = list(events)
        if self.level == "none" or not events:
            return []
        with self._lock:
            sealed = self._store(events)
        self._checkpointed(sealed)
        return [r for r, _ in sealed]

    def _store(self, events: list[ConsentEvent]) -> list[tuple[dict[str, Any], str]]:
        """One transaction, under the thread lock: read the stored tail, chain `events` onto it
        (`chain_sealed`) and store them; each record with its body. AuditWriteError when it cannot."""
        raise NotImplementedError

    def _records(self, filters: Filters) -> Iterator[dict[str, Any]]:
        """The stored records that match `filters`, in append order."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def iter_records(self, **filters: Unpack[RecordFilters]) -> Iterator[dict[str, Any]]:
        return self._records(Filters.of(**filters))

    def newest(self, limit: int, **filters: Unpack[RecordFilters]) -> list[dict[str, Any]]:
        """The newest `limit` records `iter_records(**filters)` gives, oldest first (a store that
        can reads only those)."""
        return list(collections.deque(self.iter_records(**filters), maxlen=limit))

    def stamp(self) -> tuple[Any, ...] | None:
        """A cheap stamp of what the store holds: equal stamps, the same trail as far as the store
        can tell without reading it (a reader keeps its verification between equal stamps); None
        when the store cannot tell."""
        return None

    def append(self, event: ConsentEvent) -> dict[str, Any] | None:
        records = self.append_many((event,))
        return records[0] if records else None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# A trail names servers, tools and people: only its owner reads it (like the OAuth token file).
PRIVATE_FILE_MODE: Final = 0o600
PRIVATE_DIR_MODE: Final = 0o700

# Pauses between tries of a switch to WAL mode that met another connection's (see `enter_wal`):
# short at first (the other switch takes a millisecond or so), never long enough to notice.
WAL_RETRY_FIRST_PAUSE_S: Final = 0.001
WAL_RETRY_MAX_PAUSE_S: Final = 0.05


def create_private(path: Path) -> None:
    """Create the trail's folder and file for the owner alone; an existing file keeps its mode.

    A trail is a file: SQLite's ``:memory:`` name is refused (InvalidArgument), not created."""
    if str(path) == ":memory:":
        raise InvalidArgument("path", "a consent trail must be a file, not ':memory:'")
    path.parent.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))


def open_readonly(path: Path, table: str, busy_s: float) -> tuple[sqlite3.Connection, bool]:
    """A read-only connection to the SQLite trail `path` (never created), and whether it holds
    the trail's table yet. A missing or broken file is an AuditReadError, and so is a database
    that holds other tables but not the trail's: it is not a consent trail (a wrong path), and
    reading it as an empty one would verify it as intact. (A writer makes the table when it
    opens the file, so a trail without it holds nothing at all.)"""
    if not path.is_file():
        raise AuditReadError("sqlite", str(path), "no such file")
    try:
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=busy_s)
        names = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise AuditReadError("sqlite", str(path), str(exc)) from exc
    if names and table not in names:
        conn.close()
        raise AuditReadError("sqlite", str(path), f"not a consent trail: it has no table {table}")
    return conn, table in names


def enter_wal(conn: sqlite3.Connection, bound_s: float) -> None:
    """Put a SQLite database in WAL mode, waiting up to `bound_s` for other connections.

    SQLite answers a switch that meets another connection's (two processes opening one new file
    at once) with SQLITE_BUSY at once: its busy handler does not wait for that lock. So the switch
    is tried again, with growing pauses, until the bound; then the error is the caller's."""
    deadline = time.monotonic() + bound_s
    pause = WAL_RETRY_FIRST_PAUSE_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, WAL_RETRY_MAX_PAUSE_S)


def new_record_id() -> str:
    """A record id: a UUID version 7 (RFC 9562) as 32 hex digits: the current Unix time in
    milliseconds, then 74 random bits, from random bytes read `RECORD_ID_POOL` ids at a time (a
    read of the system's random source per record was a system call on every elicitation).

    Time first, so each new id sorts after the ones before it: the trail's unique index on ids
    then grows at its end like the chain does, and a commit rewrites a page or two of it. Random
    ids (UUID4) landed all over that index, so each record dirtied a page of its own, and the
    write-ahead log per record grew with the trail (3.3 KB per record at 8,000 records, 5.7 KB at
    40,000, against a flat 1.9 KB now: docs/benchmarks.md)."""
    with _pool_lock:
        data, at = _pool
        if at >= len(data):
            data, at = os.urandom(_RANDOM_BYTES * RECORD_ID_POOL), 0
            _pool[0] = data
        _pool[1] = at + _RANDOM_BYTES
    raw = bytearray((time.time_ns() // 1_000_000).to_bytes(6, "big") + data[at : at + _RANDOM_BYTES])
    raw[6] = (raw[6] & 0x0F) | 0x70  # version 7
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 9562 variant
    return raw.hex()


_RANDOM_BYTES: Final = 10  # of which 74 bits stay random (4 + 2 go to the version and variant)
# Record ids made from one read of the system's random source.
RECORD_ID_POOL: Final = 256
_pool: list[Any] = [b"", 0]  # the random bytes read, where the next id starts in them
_pool_lock = threading.Lock()


def _fresh_pool_after_fork() -> None:
    """A forked child reads its own random bytes: ids the parent makes too would collide."""
    global _pool_lock
    _pool[:] = [b"", 0]
    _pool_lock = threading.Lock()  # the parent may have held it while forking


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=_fresh_pool_after_fork)


def chain_records(
    events: Iterable[ConsentEvent], level: Level, tail_seq: int, tail_hash: str
) -> list[dict[str, Any]]:
    """Records for `events`, chained after the tail (seq 0 and GENESIS_HASH for an empty store)."""
    return [record for record, _ in chain_sealed(events, level, tail_seq, tail_hash)]


def chain_sealed(
    events: Iterable[ConsentEvent], level: Level, tail_seq: int, tail_hash: str
) -> list[tuple[dict[str, Any], str]]:
    """Like `chain_records`, each record with its canonical JSON text (what the sinks store)."""
    sealed = []
    seq, prev = tail_seq, tail_hash or GENESIS_HASH
    for event in events:
        pair = make_sealed_record(
            event, level, prev, seq=seq + 1, record_id=event.record_id or new_record_id()
        )
        if pair is None:
            continue
        sealed.append(pair)
        seq, prev = pair[0]["seq"], pair[0]["hash"]
    return sealed


@dataclass(frozen=True, slots=True)
class Filters:
    """Record filters in stored form: server name, action, time bounds as record time strings."""

    server: str | None = None
    action: str | None = None
    since: str | None = None
    until: str | None = None

    @classmethod
    def of(cls, **filters: Unpack[RecordFilters]) -> Filters:
        unknown = sorted(set(filters) - set(RecordFilters.__annotations__))
        if unknown:  # a misspelt filter must not widen a listing silently
            raise InvalidArgument(", ".join(unknown), "not a record filter (server, action, since, until)")
        since, until = filters.get("since"), filters.get("until")
        return cls(
            server=filters.get("server"),
            action=filters.get("action"),
            since=None if since is None else time_bound(since),
            until=None if until is None else time_bound(until),
        )

    def sql(self, placeholder: str) -> tuple[str, list[str]]:
        """These filters as conditions on the SQL sinks' indexed columns (" AND server = ?" ...),
        with their parameters; `placeholder` is the driver's parameter mark."""
        where, params = "", []
        for column, op, value in (
            ("server", "=", self.server),
            ("action", "=", self.action),
            ("time", ">=", self.since),
            ("time", "<", self.until),
        ):
            if value is not None:
                where += f" AND {column} {op} {placeholder}"
                params.append(value)
        return where, params

    def matches(self, record: Mapping[str, Any]) -> bool:
        server = record.get("server")
        name = server.get("name") if isinstance(server, Mapping) else None
        time = record.get("time")
        return (
            (self.server is None or name == self.server)
            and (self.action is None or record.get("action") == self.action)
            and (self.since is None or (isinstance(time, str) and time >= self.since))
            and (self.until is None or (isinstance(time, str) and time < self.until))
        )


# A stored row of the SQL sinks: the indexed columns, then the canonical JSON body.
Row = tuple[int, str, str, str, str, str, str, str]  # seq, id, time, server, action, prev_hash, hash, body

COLUMNS: Final = ("seq", "id", "time", "server", "action", "prev_hash", "hash", "body")


class SqlSinkBase(SinkBase):
    """The read side both SQL sinks share: rows in seq order, `page_size` at a time so writers are
    never blocked for long, filtered in SQL on the indexed columns. A sink supplies `_page`."""

    placeholder: ClassVar[str] = "?"
    page_size: ClassVar[int] = PAGE_SIZE

    def _page(
        self, after: int, where: str, params: list[Any], columns: str, limit: int, newest: bool = False
    ) -> list[tuple[Any, ...]]:
        """Up to `limit` rows (seq, then `columns`) past seq `after` that meet `where` (SQL
        conditions, each starting with " AND "), in seq order (`newest`: the last ones, newest
        first); raises AuditReadError."""
        raise NotImplementedError

    def _count(self) -> int:
        """How many rows the table holds; raises AuditReadError."""
        raise NotImplementedError

    def newest(self, limit: int, **filters: Unpack[RecordFilters]) -> list[dict[str, Any]]:
        where, params = Filters.of(**filters).sql(self.placeholder)
        rows = self._page(0, where, params, "body", limit, newest=True)
        return [r for _, body in reversed(rows) if isinstance(r := parse_body(body), dict)]

    def stamp(self) -> tuple[Any, ...] | None:
        """(rows, head seq, head hash): an edit inside the chain that keeps both is not seen."""
        head = self._page(0, "", [], "hash", 1, newest=True)
        return (self._count(), *(head[0] if head else (0, "")))

    def _pages(self, where: str, params: list[Any], columns: str) -> Iterator[tuple[Any, ...]]:
        after = 0
        while True:
            rows = self._page(after, where, params, columns, self.page_size)
            yield from rows
            if len(rows) < self.page_size:
                return
            after = rows[-1][0]

    def _records(self, filters: Filters) -> Iterator[dict[str, Any]]:
        where, params = filters.sql(self.placeholder)
        for _, body in self._pages(where, params, "body"):
            record = parse_body(body)
            if isinstance(record, dict):
                yield record

    def get(self, record_id: str) -> dict[str, Any] | None:
        rows = self._page(0, f" AND id = {self.placeholder}", [record_id], "body", 1)
        record = parse_body(rows[0][1]) if rows else None
        return record if isinstance(record, dict) else None

    def verify(self, expected_head: str | None = None) -> VerifyReport:
        rows = (cast(Row, row) for row in self._pages("", [], ", ".join(COLUMNS[1:])))
        return verify_rows(rows, expected_head, self._anchor(), keyed=self.checkpoint is not None)


def row_of(record: Mapping[str, Any], body: str | None = None) -> Row:
    """The SQL row for a record; the body is its canonical JSON text (computed when not given)."""
    return (
        record["seq"],
        record["id"],
        record["time"],
        record["server"]["name"],
        record["action"],
        record["prev_hash"],
        record["hash"],
        canonical_json(record).decode("utf-8") if body is None else body,
    )


def parse_body(body: str) -> Any:
    """The record in a stored body, or the raw text when it is not JSON (verify calls it malformed).

    A body nested deeper than the parser goes (an edit, ``[[[[…``) is not JSON here either, so
    no reader stops at it with a RecursionError."""
    try:
        return json.loads(body)
    except (TypeError, ValueError, RecursionError):
        return body


def verify_rows(
    rows: Iterable[Row],
    expected_head: str | None = None,
    anchor: tuple[int, str, bool] | None = None,
    keyed: bool = False,
) -> VerifyReport:
    """Verify SQL rows: the chain in their bodies, and that each indexed column agrees with its
    body; `anchor` and `keyed` as `ChainVerifier` takes them."""
    verifier = ChainVerifier(anchor, keyed)
    for index, row in enumerate(rows):
        record = verifier.feed_text(row[7])
        if not isinstance(record, dict):
            continue
        server = record.get("server")
        body_values = (
            record.get("seq"),
            record.get("id"),
            record.get("time"),
            server.get("name") if isinstance(server, dict) else None,
            record.get("action"),
            record.get("prev_hash"),
            record.get("hash"),
        )
        for column, stored, hashed in zip(COLUMNS[:7], row[:7], body_values, strict=True):
            if stored != hashed:
                verifier.note(
                    index,
                    str(row[1]),
                    row[0],
                    "column_mismatch",
                    f"column {column} is {stored!r}, the record says {hashed!r}",
                )
    return verifier.finish(expected_head)

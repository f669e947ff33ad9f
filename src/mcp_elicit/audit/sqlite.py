"""The default audit sink: one SQLite file in WAL mode.

Each append is one transaction that starts with ``BEGIN IMMEDIATE`` (taking the write lock before
reading), reads the tail's seq and hash, inserts the chained record and commits, so writers in
other threads and other processes never fork the chain. `append_many` does the same for a batch.

Durability: ``synchronous=NORMAL`` by default (``durability="process_crash"``). In WAL mode that
survives a crash of the process (the commit is in the operating system's hands before the answer
goes on) but a power cut or kernel crash can lose the last transactions; ``durability="power_loss"``
(``synchronous=FULL``) fsyncs every commit.

Committing on the caller's thread: at ``process_crash`` a commit is a few tens of µs with no fsync,
so the writer (audit/writer.py) may call `append_now` on the event loop's thread instead of hopping
to its writer thread. `append_now` never waits: when the connection or the database's write lock
is busy it returns None and the caller queues for the writer thread. The WAL is then not
checkpointed on commit (that fsyncs and can take milliseconds); `maintain`, run on the writer
thread every `CHECKPOINT_EVERY_COMMITS` commits, does it there.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import quote

from mcp_elicit.audit.base import SqlSinkBase, chain_sealed, create_private, row_of
from mcp_elicit.audit.checkpoint import Checkpoint
from mcp_elicit.core.consent import DEFAULT_LEVEL, GENESIS_HASH, ConsentEvent, Level
from mcp_elicit.errors import AuditReadError, AuditWriteError, InvalidArgument

logger = logging.getLogger("mcp_elicit.audit")

__all__ = [
    "BUSY_TIMEOUT_S",
    "CHECKPOINT_EVERY_COMMITS",
    "DURABILITY",
    "TABLE",
    "Durability",
    "SqliteAuditSink",
]

TABLE: Final = "consent_records"

# How long a writer waits for another process's write lock before giving up (and failing closed).
# Each write transaction takes well under a millisecond; 5 s only runs out when something is stuck.
BUSY_TIMEOUT_S: Final = 5.0

# Commits between two WAL checkpoints run on the writer thread when commits happen on the caller's
# thread (SQLite's own default is a checkpoint per 1,000 pages; one record writes about 4 pages).
CHECKPOINT_EVERY_COMMITS: Final = 250

# What a committed record survives: "process_crash" (synchronous=NORMAL, the default) or
# "power_loss" (synchronous=FULL: an fsync per commit, always on the writer thread).
Durability = Literal["process_crash", "power_loss"]
DURABILITY: Final[tuple[str, ...]] = ("process_crash", "power_loss")
_SYNCHRONOUS: Final = {"process_crash": "NORMAL", "power_loss": "FULL"}

_SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    time TEXT NOT NULL,
    server TEXT NOT NULL,
    action TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS {TABLE}_time ON {TABLE} (time);
CREATE INDEX IF NOT EXISTS {TABLE}_server_time ON {TABLE} (server, time);
"""


class _Busy(Exception):
    """The database's write lock is held elsewhere and this attempt must not wait for it."""


class SqliteAuditSink(SqlSinkBase):
    """Consent records in a SQLite file (created with its folder when missing, unless read-only)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        level: Level = DEFAULT_LEVEL,
        durability: Durability = "process_crash",
        readonly: bool = False,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        if durability not in DURABILITY:
            raise InvalidArgument("durability", f"expected one of {', '.join(DURABILITY)}")
        super().__init__(level, checkpoint)
        self.path = Path(path)
        self.durability: Durability = durability
        # Commits may run on the caller's thread only when they do not fsync (see the module doc).
        self._inline = durability == "process_crash"
        self._busy_ms = int(BUSY_TIMEOUT_S * 1000)
        self._since_checkpoint = 0
        if readonly:
            self._open_readonly()
            return
        try:
            create_private(self.path)  # SQLite gives its -wal and -shm files the same mode
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={_SYNCHRONOUS[durability]}")
            if self._inline:
                self._conn.execute("PRAGMA wal_autocheckpoint=0")  # maintain() does it, off the loop
            self._conn.executescript(_SCHEMA)
            self._has_table = True
        except (sqlite3.Error, OSError) as exc:
            raise AuditWriteError("sqlite", str(self.path), str(exc)) from exc

    def _open_readonly(self) -> None:
        """Open for reading only: never creates the file; a missing or broken file is an OSError."""
        if not self.path.is_file():
            raise AuditReadError("sqlite", str(self.path), "no such file")
        try:
            uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
            self._conn = sqlite3.connect(
                uri, uri=True, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
            )
            found = self._conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone()
        except sqlite3.Error as exc:
            raise AuditReadError("sqlite", str(self.path), str(exc)) from exc
        self._has_table = found is not None

    def append_many(self, events: Iterable[ConsentEvent]) -> list[dict[str, Any]]:
        events = list(events)
        if self.level == "none" or not events:
            return []
        with self._lock:
            self._busy(int(BUSY_TIMEOUT_S * 1000))
            sealed = self._write(events)
        self._checkpointed(sealed)
        if self.wants_maintenance:  # a caller that never goes through a writer checkpoints here
            self.maintain()
        return [r for r, _ in sealed]

    def append_now(self, events: Iterable[ConsentEvent]) -> list[dict[str, Any]] | None:
        """`append_many` without waiting: None when it would have to wait (the connection is in
        use, another writer holds the database, or every commit fsyncs); errors as `append_many`."""
        if not self._inline or not self._lock.acquire(blocking=False):
            return None
        try:
            events = list(events)
            if self.level == "none" or not events:
                return []
            self._busy(0)
            try:
                sealed = self._write(events)
            except _Busy:
                return None
        finally:
            self._lock.release()
        self._checkpointed(sealed)
        return [r for r, _ in sealed]

    @property
    def wants_maintenance(self) -> bool:
        return self._inline and self._since_checkpoint >= CHECKPOINT_EVERY_COMMITS

    def maintain(self) -> None:
        """Checkpoint the WAL into the database file (on the writer thread); PASSIVE: never waits
        for readers, and the next maintenance picks up what this one could not copy."""
        with self._lock:
            self._since_checkpoint = 0
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:  # the records are committed; the next run tries again
                logger.warning("audit WAL checkpoint of %s failed: %s", self.path, exc)

    def _busy(self, ms: int) -> None:
        if ms != self._busy_ms:
            self._conn.execute(f"PRAGMA busy_timeout={ms}")
            self._busy_ms = ms

    def _begin(self) -> None:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if self._busy_ms == 0 and exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
                raise _Busy from exc
            raise

    def _write(self, events: list[ConsentEvent]) -> list[tuple[dict[str, Any], str]]:
        """One transaction: take the write lock, read the tail, insert the chained records."""
        try:
            self._begin()
            try:
                tail = self._conn.execute(
                    f"SELECT seq, hash FROM {TABLE} ORDER BY seq DESC LIMIT 1"  # noqa: S608
                ).fetchone()
                seq, prev = tail if tail else (0, GENESIS_HASH)
                sealed = chain_sealed(events, self.level, seq, prev)
                self._conn.executemany(
                    f"INSERT INTO {TABLE} (seq, id, time, server, action, prev_hash, hash, body)"  # noqa: S608
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [row_of(r, body) for r, body in sealed],
                )
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise AuditWriteError("sqlite", str(self.path), str(exc)) from exc
        self._since_checkpoint += 1
        return sealed

    def _page(
        self, after: int, where: str, params: list[Any], columns: str, limit: int
    ) -> list[tuple[Any, ...]]:
        if not self._has_table:
            return []
        with self._lock:
            try:
                return self._conn.execute(
                    f"SELECT seq, {columns} FROM {TABLE} WHERE seq > ?{where} ORDER BY seq LIMIT ?",  # noqa: S608
                    [after, *params, limit],
                ).fetchall()
            except sqlite3.Error as exc:
                raise AuditReadError("sqlite", str(self.path), str(exc)) from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()

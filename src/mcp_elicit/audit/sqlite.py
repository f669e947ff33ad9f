"""The default audit sink: one SQLite file in WAL mode.

Each append is one transaction that starts with ``BEGIN IMMEDIATE`` (taking the write lock before
reading), reads the tail's seq and hash, inserts the chained record and commits, so writers in
other threads and other processes never fork the chain. `append_many` does the same for a batch.

Durability: ``synchronous=NORMAL`` by default. In WAL mode that survives a crash of the process
but a power cut can lose the last transactions; pass ``synchronous="FULL"`` to fsync every commit.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import quote

from mcp_elicit.audit.base import SqlSinkBase, chain_sealed, row_of
from mcp_elicit.audit.checkpoint import Checkpoint
from mcp_elicit.core.consent import DEFAULT_LEVEL, GENESIS_HASH, ConsentEvent, Level
from mcp_elicit.errors import AuditReadError, AuditWriteError

__all__ = ["BUSY_TIMEOUT_S", "TABLE", "SqliteAuditSink"]

TABLE: Final = "consent_records"

# How long a writer waits for another process's write lock before giving up (and failing closed).
# Each write transaction takes well under a millisecond; 5 s only runs out when something is stuck.
BUSY_TIMEOUT_S: Final = 5.0

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


class SqliteAuditSink(SqlSinkBase):
    """Consent records in a SQLite file (created with its folder when missing, unless read-only)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        level: Level = DEFAULT_LEVEL,
        synchronous: Literal["OFF", "NORMAL", "FULL"] = "NORMAL",
        readonly: bool = False,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self.path = Path(path)
        self.checkpoint = checkpoint
        self.level: Level = level
        self._lock = threading.Lock()
        if readonly:
            self._open_readonly()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA synchronous={synchronous}")
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
            try:
                self._conn.execute("BEGIN IMMEDIATE")
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
        self._checkpointed(sealed)
        return [r for r, _ in sealed]

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

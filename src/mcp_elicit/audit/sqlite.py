"""The default audit sink: one SQLite file in WAL mode.

Each append is one transaction that starts with ``BEGIN IMMEDIATE`` (taking the write lock before
reading), reads the tail's seq and hash, inserts the chained record and commits, so writers in other
threads and other processes never fork the chain. `append_many` does the same for a batch.

Durability: ``synchronous=NORMAL`` by default (``durability="process_crash"``). In WAL mode that survives
a crash of the process (the commit is in the operating system's hands before the answer goes on) but a
power cut or kernel crash can lose the last transactions; ``durability="power_loss"``
(``synchronous=FULL``) fsyncs every commit.

Committing on the caller's thread: at ``process_crash`` a commit is a few tens of µs with no fsync, so the
writer (audit/writer.py) may call `append_now` on the event loop's thread instead of hopping to its writer
thread. `append_now` never waits: when the connection or the database's write lock is busy it returns None
and the caller queues for the writer thread. The WAL is then not checkpointed on commit (that fsyncs and
can take milliseconds); `maintain`, run on the writer thread every `CHECKPOINT_EVERY_COMMITS` commits,
does it there.

The journal (audit/journal.py): at ``process_crash`` a lone record on the caller's thread is not committed
at all but written to this sink's journal file (one ``write``, as durable as the commit it replaces);
`maintain` merges the journal into the database in batches on the writer thread, and every transaction of
this sink (`append_many`, a read, `close`) merges what waits first, so a process's records are chained in
the order they were journaled. Opening the trail (also read-only) and every read (listing, `get`,
`verify`) first merge the other journals beside it: those of processes that are gone whole (then removed),
those of live ones up to their last whole line, so a reader in any process sees every journaled record.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final, Literal

from mcp_elicit.audit import journal as jr
from mcp_elicit.audit.base import (
    Filters,
    SqlSinkBase,
    chain_sealed,
    create_private,
    enter_wal,
    new_record_id,
    open_readonly,
)
from mcp_elicit.audit.checkpoint import Checkpoint
from mcp_elicit.audit.peers import PeerJournals
from mcp_elicit.audit.rejected import reject
from mcp_elicit.core.chain import VerifyReport
from mcp_elicit.core.consent import DEFAULT_LEVEL, ConsentEvent, Level
from mcp_elicit.core.unchained import make_unchained_record
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
        self._readonly = readonly
        # Commits may run on the caller's thread only when they do not fsync (see the module doc).
        self._inline = durability == "process_crash"
        self._journaling = self._inline and not readonly and jr.HAVE_FLOCK
        self._journal: jr.Journal | None = None
        self._retired: list[jr.Journal] = []  # rotated out, merged and removed by `maintain`
        self._journal_start = threading.Lock()
        self._merge_failed = False  # the last merge failed: records commit directly until one works
        self._peers = PeerJournals(self.path, TABLE)  # the other processes' journals
        self._busy_ms = int(BUSY_TIMEOUT_S * 1000)
        self._since_checkpoint = 0
        # (seq, hash) where this sink's own last commit left the trail: while the trail still ends
        # there, nobody else has written (no reader merged a journal line), so a merge need not
        # look its lines' ids up in the trail.
        self._own_tail: tuple[int, str] | None = None
        if readonly:
            self._open_readonly()
            self._recover_readonly()
            return
        try:
            create_private(self.path)  # SQLite gives its -wal and -shm files the same mode
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
            )
            enter_wal(self._conn, BUSY_TIMEOUT_S)
            self._conn.execute(f"PRAGMA synchronous={_SYNCHRONOUS[durability]}")
            if self._inline:
                self._conn.execute("PRAGMA wal_autocheckpoint=0")  # maintain() does it, off the loop
            self._conn.executescript(_SCHEMA)
            self._has_table = True
        except (sqlite3.Error, OSError) as exc:
            raise AuditWriteError("sqlite", str(self.path), str(exc)) from exc
        self._recover(self._conn)
        jr.remove_stale_new(self.path, time.time())

    def _open_readonly(self) -> None:
        """Open for reading only: never creates the file (audit/base.py, `open_readonly`)."""
        self._conn, self._has_table = open_readonly(self.path, TABLE, BUSY_TIMEOUT_S)

    def _recover_readonly(self) -> None:
        """A reader merges the journals of processes that are gone, as a writer would, through a
        connection of its own (SQLite's readers likewise roll back a crashed writer's journal)."""
        if not jr.journals_of(self.path):
            return
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as exc:
            logger.warning("cannot merge the journals beside %s: %s", self.path, exc)
            return
        try:
            conn.executescript(_SCHEMA)
            self._has_table = True
            self._recover(conn)
        except sqlite3.Error as exc:
            logger.warning("cannot merge the journals beside %s: %s", self.path, exc)
        finally:
            conn.close()

    def _recover(self, conn: sqlite3.Connection) -> None:
        """Merge the other processes' journals beside the trail (audit/peers.py)."""
        own = {j.path for j in (self._journal, *self._retired) if j is not None}
        self._peers.merge(conn, self.checkpoint, own, self._checkpointed)

    def append_many(self, events: Iterable[ConsentEvent]) -> list[dict[str, Any]]:
        events = list(events)
        if self.level == "none" or not events:
            return []
        with self._lock:
            self._busy(int(BUSY_TIMEOUT_S * 1000))
            sealed = self._write(events)
        self._anchored(sealed)
        if self.wants_maintenance:  # a caller that never goes through a writer maintains here
            self.maintain()
        return [r for r, _ in sealed[-len(events) :]]

    def append_now(self, events: Iterable[ConsentEvent]) -> list[dict[str, Any]] | None:
        """`append_many` without waiting: None when it would have to wait (the connection is in
        use, another writer holds the database, or every commit fsyncs); errors as `append_many`.

        A lone event without a record id of its own is journaled instead (audit/journal.py): what
        is returned for it is then its id and level (the record is stored when merged)."""
        if not self._inline:
            return None
        events = list(events)
        if self.level == "none" or not events:
            return []
        if self._journaling and len(events) == 1 and not events[0].record_id and not self._merge_failed:
            journaled = self._journal_append(events[0])
            if journaled is not None:
                return journaled
        if not self._lock.acquire(blocking=False):
            return None
        try:
            self._busy(0)
            try:
                sealed = self._write(events)
            except _Busy:
                return None
        finally:
            self._lock.release()
        self._anchored(sealed)
        return [r for r, _ in sealed[-len(events) :]]

    def _anchored(self, sealed: list[tuple[dict[str, Any], str]]) -> None:
        """Write the keyed checkpoint after a commit. When that fails, records commit directly
        until one succeeds (`_merge_failed`): a journaled record would go on before its merge
        found the checkpoint unwritable, so the answer would not fail closed."""
        try:
            self._checkpointed(sealed)
        except AuditWriteError:
            self._merge_failed = True
            raise

    def _journal_append(self, event: ConsentEvent) -> list[dict[str, Any]] | None:
        """The record, once its line is in the journal; None to commit it directly instead."""
        record_id = new_record_id()
        line = make_unchained_record(event, self.level, record_id)
        if line is None:
            return []
        if self.checkpoint is not None:  # signed: an edit before the merge is refused there
            line = self.checkpoint.sign_line(line)
        if len(line) > jr.MAX_JOURNAL_LINE_BYTES:
            return None
        for _ in range(2):  # a journal rotated out meanwhile takes no lines: once more, the new one
            journal = self._journal or self._start_journal()
            if journal is None or not journal.usable():
                return None  # a forked child, or too much waits: commit directly
            if journal.append(line):
                return [{"id": record_id, "level": self.level}]
        return None

    def _start_journal(self) -> jr.Journal | None:
        """This sink's journal, made on first use; None once the sink is closing, or while the
        checkpoint file is under another key (the record then commits directly and fails closed)."""
        with self._journal_start:
            if self._journal is None and self._journaling and self._key_fits():
                self._journal = jr.Journal(self.path)
                jr.merge_at_exit(self)
            return self._journal

    def _own(self) -> list[jr.Journal]:
        """This process's journals with lines waiting, oldest first."""
        journals = [*self._retired, *([self._journal] if self._journal is not None else [])]
        return [j for j in journals if j.mine() and (j.merged < j.end or j.closed)]

    def maintenance_after(self) -> float | None:
        """Seconds until `maintain` should run (0: now), None when nothing waits for it."""
        if self._inline and self._since_checkpoint >= CHECKPOINT_EVERY_COMMITS:
            return 0.0
        if self._merge_failed:  # the next direct commit merges; no retrying in a loop here
            return None
        if self._retired and any(j.mine() for j in self._retired):
            return 0.0
        journal = self._journal
        if journal is None or journal.pending_since is None or not journal.mine():
            return None  # (a forked child leaves its parent's journal alone)
        since = journal.pending_since
        if (
            journal.written - journal.merged_lines >= jr.JOURNAL_MERGE_RECORDS
            or journal.end - journal.merged >= jr.MERGE_READ_BYTES
            or journal.end >= jr.JOURNAL_ROTATE_BYTES
        ):
            return 0.0
        return max(0.0, since + jr.JOURNAL_MERGE_SECONDS - time.monotonic())

    @property
    def wants_maintenance(self) -> bool:
        return self.maintenance_after() == 0.0

    def maintain(self) -> None:
        """Merge the journal (on the writer thread), rotate it when full, and checkpoint the WAL
        into the database file every `CHECKPOINT_EVERY_COMMITS` commits; PASSIVE: never waits
        for readers, and the next maintenance picks up what this one could not copy."""
        with self._lock:
            journal = self._journal if self._journal is not None and self._journal.mine() else None
            replaced = journal is not None and journal.replaced()
            if replaced:  # an editor saved a copy over it, or it was removed: lines would be lost
                logger.error("the audit journal of %s was replaced or removed while in use", self.path)
            if journal is not None and (replaced or journal.end >= jr.JOURNAL_ROTATE_BYTES):
                try:
                    self._journal = jr.Journal(self.path)
                    journal.retire()
                    self._retired.append(journal)
                except AuditWriteError as exc:
                    logger.warning("audit journal %s not rotated: %s", journal.path, exc)
            try:
                self._flush()
            except AuditWriteError as exc:  # records stay journaled; appends commit directly now
                logger.warning("audit journal of %s not merged: %s", self.path, exc)
            if not self._inline or self._since_checkpoint < CHECKPOINT_EVERY_COMMITS:
                return
            self._since_checkpoint = 0
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.Error as exc:  # the records are committed; the next run tries again
                logger.warning("audit WAL checkpoint of %s failed: %s", self.path, exc)

    def _flush(self) -> None:
        """Merge every line this process journaled so far (the sink's lock held); remove journals
        that were rotated out once merged. Raises AuditWriteError."""
        targets = [(j, j.end) for j in self._own()]
        for journal, end in targets:
            while journal.merged < end:
                before = journal.merged
                self._busy(int(BUSY_TIMEOUT_S * 1000))
                self._anchored(self._write([]))
                if journal.merged == before:
                    break
        for journal in list(self._retired):
            if journal.merged >= journal.end:
                journal.remove()
                self._retired.remove(journal)

    def _busy(self, ms: int) -> None:
        if ms != self._busy_ms:
            try:
                self._conn.execute(f"PRAGMA busy_timeout={ms}")
            except sqlite3.Error as exc:  # a closed sink, say: fail closed like a failed commit
                raise AuditWriteError("sqlite", str(self.path), str(exc)) from exc
            self._busy_ms = ms

    def _begin(self) -> None:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if self._busy_ms == 0 and exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
                raise _Busy from exc
            raise

    def _write(self, events: list[ConsentEvent]) -> list[tuple[dict[str, Any], str]]:
        """One transaction: take the write lock, read the tail, chain what this process journaled
        (up to `MERGE_READ_BYTES` of each journal) and then `events`, insert them all. Returns
        every record stored, the journaled ones first."""
        merged: list[tuple[jr.Journal, int, int, float]] = []
        refused: list[tuple[jr.Journal, list[bytes], list[str] | None]] = []
        try:
            self._begin()
            try:
                seq, prev = tail = jr.tail_of(self._conn, TABLE)
                untouched = tail == self._own_tail
                self._own_tail = None  # known again once this transaction commits
                sealed: list[tuple[dict[str, Any], str]] = []
                for journal in self._own():
                    since = time.monotonic()
                    lines, start, upto = journal.unmerged(jr.MERGE_READ_BYTES)
                    changed = journal.on_disk_matches(lines, start, upto)
                    bad: list[bytes] = []  # none unless a bug: the lines this process wrote
                    plain = lines if self.checkpoint is None else self.checkpoint.signed_lines(lines, bad)
                    chained = jr.chain_lines(
                        self._conn, TABLE, plain, bad, seq, prev, maybe_merged=not untouched
                    )
                    sealed += chained
                    if sealed:
                        seq, prev = sealed[-1][0]["seq"], sealed[-1][0]["hash"]
                    merged.append((journal, upto, len(lines), since))
                    if changed is not None:  # lines not chained here: a reader merged them from the file
                        refused.append((journal, [changed], jr.ids_not_in(plain, chained)))
                    refused.append((journal, bad, None))
                sealed += chain_sealed(events, self.level, seq, prev)
                jr.insert_rows(self._conn, TABLE, sealed)
                self._conn.execute("COMMIT")
                self._own_tail = (sealed[-1][0]["seq"], sealed[-1][0]["hash"]) if sealed else tail
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        except (sqlite3.Error, OSError) as exc:
            if merged:
                self._merge_failed = True
            raise AuditWriteError("sqlite", str(self.path), str(exc)) from exc
        self._merge_failed = False
        for journal, upto, lines_merged, since in merged:
            journal.merged_upto(upto, lines_merged, since)
        for journal, pieces, merged_elsewhere in refused:
            reject(self.path, pieces, journal.path, merged_elsewhere=merged_elsewhere)
        self._since_checkpoint += 1
        return sealed

    def merge_journal(self, *, final: bool = False) -> None:
        """Merge what this process journaled into the trail now (before a read). `final`, at exit
        with the sink open: its journals are also retired, so that once merged they are removed
        (no file is left behind); an append after that starts a new journal."""
        if self._journaling and (final or self._own()):
            with self._lock:
                if final:
                    self._retire_own()
                try:
                    self._flush()
                except AuditWriteError as exc:
                    logger.warning("audit journal of %s not merged: %s", self.path, exc)

    def _retire_own(self) -> None:
        """This process's journals take no more lines; `_flush` removes them once merged."""
        own = [j for j in (*self._retired, self._journal) if j is not None and j.mine()]
        for journal in own:
            journal.retire()
        self._retired, self._journal = own, None

    def _catch_up(self) -> None:
        """Before reading: merge what this process journaled (it reads its own records) and
        what the journals of other processes hold (`_recover`)."""
        self.merge_journal()
        own = {j.path for j in (self._journal, *self._retired) if j is not None}
        if any(path not in own for path in jr.journals_of(self.path)):
            if self._readonly:
                self._recover_readonly()
            else:
                with self._lock:
                    self._recover(self._conn)

    def _records(self, filters: Filters) -> Iterator[dict[str, Any]]:
        self._catch_up()
        return super()._records(filters)

    def get(self, record_id: str) -> dict[str, Any] | None:
        self._catch_up()
        return super().get(record_id)

    def verify(self, expected_head: str | None = None) -> VerifyReport:
        """Verify the chain, after merging every journal beside it (`_catch_up`)."""
        self._catch_up()
        return super().verify(expected_head)

    def newest(self, limit: int, **filters: Any) -> list[dict[str, Any]]:
        self._catch_up()
        return super().newest(limit, **filters)

    def stamp(self) -> tuple[Any, ...] | None:
        """The rows and head (after merging the journals), and the database and WAL files' size
        and modification time, so an edit inside the chain changes it too."""
        self._catch_up()
        files: list[tuple[int, int, int] | None] = []
        for path in (self.path, Path(f"{self.path}-wal")):
            try:
                st = path.stat()
                files.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                files.append(None)
        return (*(super().stamp() or ()), *files)

    def _count(self) -> int:
        rows = self._page(0, "", [], f"(SELECT count(*) FROM {TABLE})", 1)  # noqa: S608
        return int(rows[0][1]) if rows else 0

    def _page(
        self, after: int, where: str, params: list[Any], columns: str, limit: int, newest: bool = False
    ) -> list[tuple[Any, ...]]:
        if not self._has_table:
            return []
        order = "DESC" if newest else ""
        with self._lock:
            try:
                return self._conn.execute(
                    f"SELECT seq, {columns} FROM {TABLE} WHERE seq > ?{where} ORDER BY seq {order} LIMIT ?",  # noqa: S608
                    [after, *params, limit],
                ).fetchall()
            except sqlite3.Error as exc:
                raise AuditReadError("sqlite", str(self.path), str(exc)) from exc

    def close(self) -> None:
        """Merge what this process journaled and remove its journal; a journal that cannot be
        merged stays for the next opening of the trail."""
        with self._lock:
            with self._journal_start:
                self._journaling = False  # appends from now on commit (and fail: it is closed)
            self._retire_own()
            try:
                self._flush()
            except AuditWriteError as exc:
                logger.error(
                    "audit journal of %s not merged at close (kept for the next open): %s", self.path, exc
                )
            for journal in self._retired:
                journal.release()
            self._retired = []
            self._conn.close()

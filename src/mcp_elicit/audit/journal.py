"""The SQLite trail's journal: where a record goes on the answer's path before it is chained.

Committing a record to SQLite costs a transaction per elicitation (file locks, WAL frames). At
durability "process_crash" the SQLite sink (audit/sqlite.py) instead writes the record, redacted
at its level but not yet chained (no seq, prev_hash or hash), as one line of canonical JSON to a
journal file of its own beside the database: one ``write`` on a file opened ``O_APPEND``. Once
that returns, the record is in the operating system's hands, which is what a WAL commit at
``synchronous=NORMAL`` promises too: it survives the process crashing, not a power cut. A write
that fails (or writes only part of the line) fails the elicitation closed, as a failed commit
does. The sink's writer thread then merges the journal into the database in batches, giving each
record its seq and hash there, so the stored rows are exactly what a direct commit stores.

Files: ``<db>.journal-<pid>-<16 hex>``, made for the owner alone, one per sink that journals,
held with an exclusive ``flock`` while it lives (created under a temporary name, locked, then
renamed, so nobody ever sees it unlocked and empty). The process that writes a journal merges
from what it keeps in memory, and checks that the file still holds exactly the lines it wrote
(an edit is logged and kept in ``<db>.journal-rejected``; the trail holds what was written). A
journal whose lock is free belongs to a process that is gone: whoever opens the trail next (a
writer, or a reader) merges it from the file, in order, and removes it; every read also merges
the journals of live processes up to their last whole line (left to them), so readers anywhere
see every journaled record. Merging is idempotent: a line whose record id is already in the
trail was merged before (by a reader, or the merge committed and then the process died before
the file went), so it is skipped. A line read from a file that is not one a sink wrote (its
offsets off the chain keys, no id, action, time or server name where they belong, a torn last
line: core/unchained.py) is refused: kept in ``<db>.journal-rejected`` and logged, never
chained; what else was rewritten is chained as it stands and `verify` reports it.

Bounds: the writer thread merges a record at most `JOURNAL_MERGE_SECONDS` after it was journaled, or at
once when `JOURNAL_MERGE_RECORDS` wait (bounding how late a direct reader of the database sees it). A
journal is replaced by a fresh one once it holds `JOURNAL_ROTATE_BYTES` (and removed when merged); while
more than `JOURNAL_MAX_PENDING_BYTES` wait (the database cannot be written), records bypass the journal
and commit directly, failing closed.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Final

from mcp_elicit.audit.base import PRIVATE_FILE_MODE, row_of
from mcp_elicit.audit.checkpoint import SIGNED_LINE_MARK, Checkpoint
from mcp_elicit.audit.rejected import reject
from mcp_elicit.core.consent import GENESIS_HASH
from mcp_elicit.core.unchained import seal_split, split_line
from mcp_elicit.errors import AuditWriteError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no journal, every record commits directly
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("mcp_elicit.audit")

HAVE_FLOCK: Final = fcntl is not None  # without it (Windows) nothing is journaled

# This process's id, kept current across fork: a journal belongs to the process that made it
# (one look-up per record instead of a getpid call).
_PID = [os.getpid()]
# Every journal open in this process. A forked child closes its copies of their files: the lock
# is the open file's, shared with the child, so a child outliving its parent would otherwise make
# the parent's journal look alive, and nobody would recover it until the child ended.
_OPEN: weakref.WeakSet[Journal] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    _PID[0] = os.getpid()
    for journal in list(_OPEN):
        journal.lock = threading.Lock()  # another thread of the parent may have held it
        journal.closed = True
        with contextlib.suppress(OSError):
            os.close(journal.fd)
    _OPEN.clear()


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)

__all__ = [
    "HAVE_FLOCK",
    "JOURNAL_MAX_PENDING_BYTES",
    "JOURNAL_MERGE_RECORDS",
    "JOURNAL_MERGE_SECONDS",
    "JOURNAL_ROTATE_BYTES",
    "MAX_JOURNAL_LINE_BYTES",
    "MERGE_READ_BYTES",
    "STALE_NEW_JOURNAL_SECONDS",
    "Journal",
    "chain_lines",
    "ids_not_in",
    "insert_rows",
    "is_signed",
    "journals_of",
    "lock_orphan",
    "merge_at_exit",
    "merge_file",
    "remove_stale_new",
    "split_lines",
    "tail_of",
]

# Longest a journaled record waits before the writer thread merges it into the database (the
# sink's readers merge before they read; this bounds what reads the database directly). Each
# merge has a fixed cost (a transaction, waking the thread); a second makes it vanish per record.
JOURNAL_MERGE_SECONDS: Final = 1.0

# Records waiting in the journal that make the writer thread merge at once.
JOURNAL_MERGE_RECORDS: Final = 256

# A journal holding this much is replaced by a fresh one (the full one is removed once merged).
JOURNAL_ROTATE_BYTES: Final = 1_048_576  # 1 MiB

# Unmerged bytes beyond which records bypass the journal and commit directly (a database that
# cannot be written then fails elicitations closed instead of a journal growing without end).
JOURNAL_MAX_PENDING_BYTES: Final = 4_194_304  # 4 MiB

# Largest record line the journal takes; a larger record (request levels, a huge schema) commits
# directly. Records are a few hundred bytes at "metadata".
MAX_JOURNAL_LINE_BYTES: Final = 262_144  # 256 KiB

# Journal bytes read into one merge transaction at most (bounds the write lock's hold and memory).
MERGE_READ_BYTES: Final = 1_048_576  # 1 MiB

# Seconds after which a journal's temporary file (".<journal>.new") whose lock is free is taken for
# what a process left when it died between creating and renaming it, and removed on opening the
# trail. It holds no record (nothing is written before the rename); the wait keeps a process that
# is between those two steps right now from losing its file.
STALE_NEW_JOURNAL_SECONDS: Final = 60.0

_IDS_PER_QUERY: Final = 500  # well under SQLite's limit on parameters per statement


# Sinks that journaled in this process: at a normal exit what they hold is merged, so a server
# that never closes its sink still leaves every record in the database, not only in its journal.
_MERGE_AT_EXIT: weakref.WeakSet[Any] = weakref.WeakSet()


def merge_at_exit(sink: Any) -> None:
    """Have `sink.merge_journal()` run at a normal interpreter exit, while the sink lives."""
    _MERGE_AT_EXIT.add(sink)


@atexit.register
def _merge_at_exit() -> None:
    for sink in list(_MERGE_AT_EXIT):
        try:
            sink.merge_journal(final=True)
        except Exception:  # at exit: the journal stays for the next opening
            logger.warning("audit journal of %s left for the next opening", sink.path)


def _pattern(db: Path) -> re.Pattern[str]:
    return re.compile(re.escape(db.name) + r"\.journal-\d+-[0-9a-f]{16}")


def journals_of(db: Path) -> list[Path]:
    """The journal files beside the database `db`, oldest first."""
    pattern = _pattern(db)
    try:
        names = [e for e in os.scandir(db.parent) if pattern.fullmatch(e.name)]
    except OSError:
        return []
    found = []
    for entry in names:
        with contextlib.suppress(OSError):  # gone meanwhile: merged by someone else
            found.append((entry.stat().st_mtime_ns, entry.name))
    return [db.parent / name for _, name in sorted(found)]


def remove_stale_new(db: Path, now: float) -> list[Path]:
    """Remove the temporary journal files beside `db` older than `STALE_NEW_JOURNAL_SECONDS` at
    `now` (Unix seconds) whose lock is free; return those removed."""
    pattern = re.compile(r"\." + _pattern(db).pattern + r"\.new")
    removed = []
    try:
        entries = [e for e in os.scandir(db.parent) if pattern.fullmatch(e.name)]
    except OSError:
        return []
    for entry in entries:
        with contextlib.suppress(OSError):  # gone meanwhile, or not ours to remove
            if now - entry.stat().st_mtime < STALE_NEW_JOURNAL_SECONDS:
                continue
            fd = lock_orphan(Path(entry.path))
            if fd is None:
                continue
            try:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
            finally:
                os.close(fd)
    return removed


class Journal:
    """This sink's journal: appends on the answer's path, read back by the merge."""

    def __init__(self, db: Path) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            raise AuditWriteError("sqlite", str(db), "no journal without flock")
        self.pid = os.getpid()
        name = f"{db.name}.journal-{self.pid}-{os.urandom(8).hex()}"
        self.path = db.parent / name
        tmp = db.parent / f".{name}.new"  # never matches journals_of: nobody merges it unlocked
        try:
            self.fd = os.open(tmp, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
        except OSError as exc:
            raise AuditWriteError("sqlite", str(self.path), str(exc)) from exc
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(tmp, self.path)
        except OSError as exc:
            os.close(self.fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise AuditWriteError("sqlite", str(self.path), str(exc)) from exc
        self.lock = threading.Lock()
        # The lines this process wrote and has not merged, in order. The merge chains these, not
        # what the file holds now: an edit of the file before the merge changes nothing and is
        # caught (`on_disk_matches`); the file is read back only when the process is gone. Bytes
        # are never scanned by the garbage collector, so keeping them until the merge is cheap.
        self.entries: list[bytes] = []
        self.end = 0  # bytes written (all complete lines)
        self.written = 0  # lines written
        self.merged = 0  # bytes merged into the database
        self.merged_lines = 0
        self.pending_since: float | None = None  # monotonic time of the oldest unmerged line
        self.broken = False  # a failed write could not be undone: take no more lines
        self.closed = False
        _OPEN.add(self)

    def usable(self) -> bool:
        """Whether this process may append here: it made the journal (not a forked child), the
        journal took every line whole and is open, and not too much waits unmerged."""
        return (
            self.pid == _PID[0]
            and not self.broken
            and not self.closed
            and self.end - self.merged < JOURNAL_MAX_PENDING_BYTES
        )

    def mine(self) -> bool:
        """Whether this process made the journal (a forked child leaves its parent's alone)."""
        return self.pid == _PID[0]

    def append(self, line: bytes) -> bool:
        """Write one record line (core/unchained.py); False when this journal is closed (use the
        current one). Raises AuditWriteError when the line is not written whole (fail closed)."""
        with self.lock:
            if self.closed:
                return False
            try:
                done = os.write(self.fd, line)
            except OSError as exc:
                self._undo()
                raise AuditWriteError("sqlite", str(self.path), str(exc)) from exc
            if done != len(line):
                self._undo()
                raise AuditWriteError("sqlite", str(self.path), f"wrote {done} of {len(line)} bytes")
            self.end += done
            self.written += 1
            self.entries.append(line)
            if self.pending_since is None:
                self.pending_since = time.monotonic()
        return True

    def _undo(self) -> None:
        """Cut a partly written line off, or stop using this journal if that fails too."""
        try:
            os.ftruncate(self.fd, self.end)
        except OSError:
            self.broken = True  # the torn line stays last; whoever merges this journal refuses it

    def unmerged(self, most_bytes: int) -> tuple[list[bytes], int, int]:
        """(the oldest lines not merged, at least one and up to `most_bytes` of them, the offset
        where they start in the file, the offset after them)."""
        with self.lock:
            taken: list[bytes] = []
            size = 0
            for line in self.entries:
                if taken and size + len(line) > most_bytes:
                    break
                taken.append(line)
                size += len(line)
            return taken, self.merged, self.merged + size

    def on_disk_matches(self, lines: list[bytes], start: int, end: int) -> bytes | None:
        """None when the file holds `lines` between `start` and `end` as they were written; else
        what it holds there (changed since: to be kept aside)."""
        try:
            held = os.pread(self.fd, end - start, start)
        except OSError as exc:  # the merge goes on from memory; nothing to compare with
            logger.warning("cannot read the audit journal %s back: %s", self.path, exc)
            return None
        return None if held == b"".join(lines) else held

    def merged_upto(self, offset: int, lines: int, since: float) -> None:
        """Note that the merge committed everything up to `offset` (the first `lines` entries);
        `since` is when it read."""
        with self.lock:
            self.merged, self.merged_lines = offset, self.merged_lines + lines
            del self.entries[:lines]
            self.pending_since = None if self.merged_lines >= self.written else since

    def retire(self) -> None:
        """Take no more lines (an append in flight finishes first); what it holds is merged with
        an unterminated last piece refused, then it is removed."""
        with self.lock:
            self.closed = True

    def replaced(self) -> bool:
        """Whether the file at this journal's path is no longer the one it writes (an editor
        saved a copy over it, someone removed it): new lines there would be in no file anyone
        can find after a crash."""
        try:
            return os.stat(self.path).st_ino != os.fstat(self.fd).st_ino
        except OSError:
            return True

    def remove(self) -> None:
        """Delete the (fully merged) file and release it; a file put in its place stays."""
        if not self.replaced():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        self.release()

    def release(self) -> None:
        """Close the file, keeping it: whoever opens the trail next merges what it holds."""
        with self.lock:
            self.closed = True
            _OPEN.discard(self)  # its descriptor number may be reused: a forked child must not close it
            with contextlib.suppress(OSError):
                os.close(self.fd)


def lock_orphan(path: Path) -> int | None:
    """An open descriptor on `path` with its lock held, if nobody holds it (its process is gone)
    and it is still that file; None otherwise."""
    if fcntl is None:  # pragma: no cover - Windows
        return None
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_ino == os.stat(path).st_ino:  # not merged and removed meanwhile
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def split_lines(fd: int, start: int, end: int, final: bool) -> tuple[list[bytes], list[bytes], int]:
    """(complete lines, refused pieces, offset after them) of the journal between `start` and
    `end`, reading at most `MERGE_READ_BYTES`. When `final` (nobody writes there any more), an
    unterminated last piece is a torn line: refused."""
    data = os.pread(fd, min(end - start, MERGE_READ_BYTES), start)
    cut = data.rfind(b"\n") + 1
    refused: list[bytes] = []
    if cut == 0 and len(data) == MERGE_READ_BYTES:
        return [], [data], start + len(data)  # no line ends in a whole read: not our lines
    if final and start + len(data) == end and cut < len(data):
        refused.append(data[cut:])
        cut = len(data)
    return data[:cut].split(b"\n")[:-1], refused, start + cut


def chain_lines(
    conn: sqlite3.Connection,
    table: str,
    lines: list[bytes],
    refused: list[bytes],
    seq: int,
    prev: str,
    *,
    maybe_merged: bool = True,
) -> list[tuple[dict[str, Any], str]]:
    """Journal lines chained after (seq, prev), each as its indexed values and stored text:
    refused (added to `refused`) when a line is not one the sink journaled, skipped when its id
    is already in the trail (merged before, by this process or a reader). `maybe_merged=False`:
    the caller knows none of them can be (the trail ends where its own last commit left it, so
    no reader has merged anything since), and the trail is not searched for their ids."""
    split = [split_line(line) for line in lines]
    wanted = [parts[4] for parts in split if parts is not None] if maybe_merged else []
    known: set[str] = set()
    for k in range(0, len(wanted), _IDS_PER_QUERY):
        part = wanted[k : k + _IDS_PER_QUERY]
        query = f"SELECT id FROM {table} WHERE id IN ({','.join('?' * len(part))})"  # noqa: S608
        known.update(i for (i,) in conn.execute(query, part))
    sealed = []
    for line, parts in zip(lines, split, strict=True):
        if parts is not None and parts[4] in known:
            continue  # merged before this journal could be removed: idempotent
        pair = None if parts is None else seal_split(parts, seq + 1, prev)
        if pair is None:
            refused.append(line)
            continue
        known.add(pair[0]["id"])
        sealed.append(pair)
        seq, prev = seq + 1, pair[0]["hash"]
    return sealed


def tail_of(conn: sqlite3.Connection, table: str) -> tuple[int, str]:
    """(seq, hash) of the last record in `table` (0 and GENESIS_HASH when there is none)."""
    row = conn.execute(f"SELECT seq, hash FROM {table} ORDER BY seq DESC LIMIT 1").fetchone()  # noqa: S608
    return (row[0], row[1]) if row else (0, GENESIS_HASH)


def insert_rows(conn: sqlite3.Connection, table: str, sealed: list[tuple[dict[str, Any], str]]) -> None:
    conn.executemany(
        f"INSERT INTO {table} (seq, id, time, server, action, prev_hash, hash, body)"  # noqa: S608
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [row_of(r, body) for r, body in sealed],
    )


def merge_file(
    conn: sqlite3.Connection,
    table: str,
    db: Path,
    path: Path,
    fd: int,
    start: int,
    final: bool,
    checkpoint: Checkpoint | None,
) -> tuple[int, list[tuple[dict[str, Any], str]]]:
    """Merge another process's journal (at `fd`) from `start` into the chain, a transaction per
    `MERGE_READ_BYTES`: (the offset after the last whole line merged, the records stored). `final`: its
    process is gone (a torn last line is refused). `checkpoint`: only lines signed under its key."""
    if checkpoint is not None:
        checkpoint.require_key_of_file()  # another key would refuse the writer's lines, every one
    offset, size, stored = start, os.fstat(fd).st_size, []
    while offset < size:
        conn.execute("BEGIN IMMEDIATE")
        try:
            lines, refused, upto = split_lines(fd, offset, size, final)
            if checkpoint is not None:
                lines = checkpoint.signed_lines(lines, refused)
            sealed = chain_lines(conn, table, lines, refused, *tail_of(conn, table))
            insert_rows(conn, table, sealed)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        reject(db, refused, path)
        stored += sealed
        if upto == offset:
            break  # a line still being written: its process merges it, or the next reader
        offset = upto
    return offset, stored


def is_signed(fd: int) -> bool:
    """Whether a journal's lines are signed (written by a sink with a keyed checkpoint)."""
    return os.pread(fd, 1, 0) == SIGNED_LINE_MARK


def ids_not_in(lines: list[bytes], chained: list[tuple[dict[str, Any], str]]) -> list[str]:
    """The record ids of `lines` that are not among `chained` (already in the trail)."""
    done = {pair[0]["id"] for pair in chained}
    return [parts[4] for parts in map(split_line, lines) if parts is not None and parts[4] not in done]

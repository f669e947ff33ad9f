"""An audit sink that appends one canonical JSON record per line to a file.

Good for shipping to a log pipeline and for reading with standard tools. Each append takes an
exclusive ``flock`` on the file (POSIX; a thread lock only elsewhere), re-reads the last record
(another process may have appended), writes and flushes, so concurrent writers never fork the
chain. A torn last line (a crash mid-write) is left in place, reported by `verify` as
``malformed``, and the next record chains onto the last good one.

Filtering reads the whole file: use the SQLite or PostgreSQL sink for large trails.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Final

from mcp_elicit.audit.base import Filters, SinkBase, chain_sealed, create_private, parse_body
from mcp_elicit.audit.checkpoint import Checkpoint
from mcp_elicit.core.chain import ChainVerifier, VerifyReport
from mcp_elicit.core.consent import (
    DEFAULT_LEVEL,
    GENESIS_HASH,
    ConsentEvent,
    Level,
)
from mcp_elicit.errors import AuditReadError, AuditWriteError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["MAX_TAIL_SCAN_BYTES", "JsonlAuditSink"]

# How far back from the end of the file to look for the last intact record. Records are a few
# hundred bytes (request levels: up to ~100 KiB with a large schema); 4 MiB of torn or foreign
# lines at the end means the file is not ours to extend, so appends fail closed.
MAX_TAIL_SCAN_BYTES: Final = 4_194_304  # 4 MiB

_BLOCK: Final = 64 * 1024


class JsonlAuditSink(SinkBase):
    """Consent records as JSON Lines in `path` (created with its folder when missing)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        level: Level = DEFAULT_LEVEL,
        fsync: bool = False,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        super().__init__(level, checkpoint)
        self.path = Path(path)
        self.fsync = fsync
        try:
            create_private(self.path)
            self._file: IO[bytes] = open(self.path, "a+b")  # noqa: SIM115 - closed in close()
        except OSError as exc:
            raise AuditWriteError("jsonl", str(self.path), str(exc)) from exc

    def _store(self, events: list[ConsentEvent]) -> list[tuple[dict[str, Any], str]]:
        try:
            with self._flocked():
                seq, prev, ends_with_newline = self._tail()
                sealed = chain_sealed(events, self.level, seq, prev)
                data = "".join(body + "\n" for _, body in sealed).encode("utf-8")
                if not ends_with_newline:
                    data = b"\n" + data
                self._file.write(data)
                self._file.flush()
                if self.fsync:
                    os.fsync(self._file.fileno())
        except (OSError, ValueError) as exc:
            raise AuditWriteError("jsonl", str(self.path), str(exc)) from exc
        return sealed

    @contextlib.contextmanager
    def _flocked(self) -> Iterator[None]:
        if fcntl is None:  # pragma: no cover - Windows
            yield
            return
        fcntl.flock(self._file.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)

    def _tail(self) -> tuple[int, str, bool]:
        """(seq, hash) of the last intact record, and whether the file ends with a newline."""
        size = self._file.seek(0, os.SEEK_END)
        if size == 0:
            return 0, GENESIS_HASH, True
        start = max(0, size - MAX_TAIL_SCAN_BYTES)
        pos, chunk = size, b""
        while pos > start:
            step = min(_BLOCK, pos - start)
            pos -= step
            self._file.seek(pos)
            chunk = self._file.read(step) + chunk
            lines = chunk.split(b"\n")
            # the first piece may be a partial line unless we reached the start of the file
            complete = lines if pos == 0 else lines[1:]
            for line in reversed(complete):
                record = parse_body(line.decode("utf-8", "replace")) if line.strip() else None
                if isinstance(record, dict) and isinstance(record.get("seq"), int) and "hash" in record:
                    self._file.seek(0, os.SEEK_END)
                    return record["seq"], str(record["hash"]), chunk.endswith(b"\n")
        self._file.seek(0, os.SEEK_END)
        raise AuditReadError(
            "jsonl", str(self.path), f"no intact record in the last {MAX_TAIL_SCAN_BYTES} bytes"
        )

    def _lines(self) -> Iterator[str]:
        with open(self.path, encoding="utf-8", errors="replace", newline="\n") as reader:
            for line in reader:
                yield line.rstrip("\n")

    def _records(self, filters: Filters) -> Iterator[dict[str, Any]]:
        for line in self._lines():
            record = parse_body(line)
            if isinstance(record, dict) and filters.matches(record):
                yield record

    def get(self, record_id: str) -> dict[str, Any] | None:
        for record in self.iter_records():
            if record.get("id") == record_id:
                return record
        return None

    def stamp(self) -> tuple[Any, ...] | None:
        """The file's identity, size and modification time."""
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def verify(self, expected_head: str | None = None) -> VerifyReport:
        verifier = ChainVerifier(self._anchor(), keyed=self.checkpoint is not None)
        for line in self._lines():
            verifier.feed_text(line)
        return verifier.finish(expected_head)

    def close(self) -> None:
        with self._lock:
            self._file.close()

"""The journals other processes keep beside a SQLite trail, as one sink merges them.

Whoever opens or reads the trail merges them into the chain in order (audit/journal.py): one whose
lock is free belongs to a process that is gone (merged whole, then removed); a live process's is
merged up to its last whole line and left to it (which skips what is merged already), so a reader
sees every journaled record. What keeps a journal from being merged (a signed journal and no key,
a key that is not the writers', a database that cannot be written) is logged once per sink and
journal; the lines stay for the next opening.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_elicit.audit import journal as jr
from mcp_elicit.audit.checkpoint import Checkpoint
from mcp_elicit.errors import AuditWriteError

__all__ = ["PeerJournals"]

logger = logging.getLogger("mcp_elicit.audit")

Stored = list[tuple[dict[str, Any], str]]


class PeerJournals:
    """One sink's view of the other journals beside its trail `db` (table `table`): how far each
    live one is merged (by path and inode), and what was said about each."""

    def __init__(self, db: Path, table: str) -> None:
        self.db, self.table = db, table
        self._merged: dict[str, tuple[int, int]] = {}  # live journals: (inode, bytes merged)
        self._said: set[tuple[Path, str]] = set()

    def merge(
        self,
        conn: sqlite3.Connection,
        checkpoint: Checkpoint | None,
        own: set[Path],
        checkpointed: Callable[[Stored], None],
    ) -> None:
        """Merge every journal beside the trail but `own` through `conn`; `checkpointed` is told
        what each merge stored. Failures are logged (once), never raised."""
        journals = jr.journals_of(self.db)
        self._merged = {k: v for k, v in self._merged.items() if Path(k) in journals}  # gone: forget
        for path in journals:
            if path in own:
                continue
            fd = jr.lock_orphan(path)
            final = fd is not None
            try:
                if fd is None:
                    fd = os.open(path, os.O_RDONLY)
                if checkpoint is None and jr.is_signed(fd):  # left to an opener with the key
                    self._say_once(
                        logging.WARNING, path, "is signed: its records wait for the checkpoint key"
                    )
                    continue
                key, ino = str(path), os.fstat(fd).st_ino
                seen = self._merged.get(key)
                start = seen[1] if seen is not None and seen[0] == ino else 0
                offset, stored = jr.merge_file(conn, self.table, self.db, path, fd, start, final, checkpoint)
                checkpointed(stored)
                self._merged[key] = (ino, offset)
                if final:
                    os.unlink(path)
                    self._merged.pop(key, None)
            except (sqlite3.Error, OSError, AuditWriteError) as exc:
                self._say_once(logging.ERROR, path, f"could not be merged into {self.db}: {exc}")
            finally:
                if fd is not None:
                    os.close(fd)

    def _say_once(self, level: int, path: Path, what: str) -> None:
        if (path, what) not in self._said:
            self._said.add((path, what))
            logger.log(level, "the audit journal %s %s", path, what)

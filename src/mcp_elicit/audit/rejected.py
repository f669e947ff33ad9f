"""Journal lines a merge refused (audit/journal.py): never chained, kept aside and logged.

Refused are lines that are not a record as the sink wrote it (an edit that broke its offsets, a
torn last line), lines whose signature does not match a keyed trail's key, and what a live
process's journal file held in place of the lines that process wrote. They go to
``<db>.journal-rejected`` (mode 0600), each batch after a line naming the journal it came from, so
that an edit of a journal is evidence kept, not data lost.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Final

from mcp_elicit.audit.base import PRIVATE_FILE_MODE

__all__ = ["REJECTED_SUFFIX", "reject", "rejected_path"]

logger = logging.getLogger("mcp_elicit.audit")

REJECTED_SUFFIX: Final = ".journal-rejected"


def rejected_path(db: Path) -> Path:
    """Where the refused lines of the trail `db` are kept."""
    return db.with_name(db.name + REJECTED_SUFFIX)


def reject(db: Path, pieces: list[bytes], source: Path, merged_elsewhere: list[str] | None = None) -> None:
    """Keep refused journal pieces in ``<db>.journal-rejected`` (never chained) and log them.
    `merged_elsewhere` not None: the pieces are what the file held in place of lines this process
    wrote and chained, but for these record ids, which a reader had merged from the file first."""
    if not pieces:
        return
    target = rejected_path(db)
    if merged_elsewhere:
        logger.error(
            "the audit journal %s was changed after its lines were written, the changed text is kept"
            " in %s; a reader in another process merged records %s from the file first: the trail"
            " may hold them as changed (the rest as written)",
            source.name,
            target,
            ", ".join(merged_elsewhere),
        )
    elif merged_elsewhere is not None:
        logger.error(
            "the audit journal %s was changed after its lines were written; the trail holds them as"
            " written, the changed text is kept in %s",
            source.name,
            target,
        )
    else:
        logger.error(
            "%d journal line(s) of %s refused (edited or unsigned?): kept in %s", len(pieces), source, target
        )
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE_MODE)
        try:
            header = f"# from {source.name}\n".encode()
            os.write(fd, header + b"".join(p if p.endswith(b"\n") else p + b"\n" for p in pieces))
        finally:
            os.close(fd)
    except OSError as exc:
        logger.error("could not keep refused journal lines in %s: %s", target, exc)

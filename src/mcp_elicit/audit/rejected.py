"""Journal lines a merge refused (audit/journal.py): never chained, kept aside and logged.

Refused are lines that are not a record as the sink wrote it (an edit that broke its offsets, a
torn last line), lines whose signature does not match a keyed trail's key, and what a live
process's journal file held in place of the lines that process wrote. They go to
``<db>.journal-rejected`` (mode 0600), each batch after a line naming the journal it came from, so
that an edit of a journal is evidence kept, not data lost.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from mcp_elicit.audit.base import PRIVATE_FILE_MODE
from mcp_elicit.audit.checkpoint import unsigned_line
from mcp_elicit.core.unchained import unchained_id

__all__ = ["REJECTED_SUFFIX", "KeptLines", "kept_lines", "line_record_id", "reject", "rejected_path"]

logger = logging.getLogger("mcp_elicit.audit")

REJECTED_SUFFIX: Final = ".journal-rejected"
_HEADER: Final = b"# from "  # the line in front of each batch, naming the journal it came from


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
            header = _HEADER + f"{source.name}\n".encode()
            os.write(fd, header + b"".join(p if p.endswith(b"\n") else p + b"\n" for p in pieces))
        finally:
            os.close(fd)
    except OSError as exc:
        logger.error("could not keep refused journal lines in %s: %s", target, exc)


@dataclass(frozen=True, slots=True)
class KeptLines:
    """What ``<db>.journal-rejected`` holds: `kept` refused lines, `unchained` of them lines whose
    record the chain does not hold (none with their id, or no id could be read from them). The
    others are copies of chained records, such as the changed text a live process found in its
    journal in place of lines it had chained as written."""

    kept: int
    unchained: int


def line_record_id(line: bytes) -> str | None:
    """The record id in a refused journal line (signed or not), None when none can be read: a
    line as the sink journals it, else its JSON object's top-level ``id`` (an edit that broke the
    offsets in front of it)."""
    line = unsigned_line(line)
    found = unchained_id(line)
    if found is not None:
        return found
    start = line.find(b"{")
    try:
        record = json.loads(line[start:]) if start >= 0 else None
    except (ValueError, RecursionError):
        return None
    record_id = record.get("id") if isinstance(record, dict) else None
    return record_id if isinstance(record_id, str) and record_id else None


def kept_lines(db: Path, chained: Callable[[str], bool]) -> KeptLines:
    """Count the refused lines kept beside the trail `db`; `chained(record_id)` says whether the
    chain holds a record of that id. Raises OSError when the file cannot be read (FileNotFoundError:
    nothing was ever refused)."""
    lines = [line for line in rejected_path(db).read_bytes().splitlines() if not line.startswith(_HEADER)]
    ids = [line_record_id(line) for line in lines]
    known = {i: chained(i) for i in set(ids) if i is not None}
    return KeptLines(len(lines), sum(1 for i in ids if i is None or not known[i]))

"""Opening a consent trail for reading, and reading a time bound, for every reader (the
`mcp-elicit audit` commands and the browser view of the trail)."""

from __future__ import annotations

import collections
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from mcp_elicit.audit.base import Filters
from mcp_elicit.core.chain import ChainBreak
from mcp_elicit.core.consent import format_time, time_bound
from mcp_elicit.errors import AuditReadError, ConfigError, InvalidArgument

__all__ = [
    "CHECKPOINT_BREAKS",
    "CheckedRead",
    "break_place",
    "find_record",
    "open_reader",
    "parse_time",
]

# Breaks of the trail as a whole, found against the keyed checkpoint (its seq is the one it names).
CHECKPOINT_BREAKS: Final = frozenset({"truncated", "rewritten", "bad_checkpoint", "no_checkpoint"})

_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_time(value: str | None, option: str = "since") -> str | None:
    """An ISO 8601 date/time, or an age such as 90s, 30m, 12h, 7d meaning that long ago, as the
    trail's own time format; InvalidArgument(option) for anything else."""
    if value is None:
        return None
    age = _AGE.fullmatch(value.strip())
    try:
        if age:
            return format_time(time.time() - float(age.group(1)) * _UNIT_SECONDS[age.group(2)])
        return time_bound(value)
    except (OverflowError, OSError) as exc:  # out of the calendar, or of the platform's time_t
        raise InvalidArgument(option, f"{value!r} is outside the dates a trail can hold") from exc
    except ValueError as exc:
        if age:
            raise InvalidArgument(option, f"{value!r} is outside the dates a trail can hold") from exc
        raise InvalidArgument(option, f"{value!r} is neither an ISO date/time nor an age like 7d") from exc


def open_reader(
    db: str | None, postgres: str | None, table: str, jsonl: str | None, checkpoint: Any = None
) -> Any:
    """Open the chosen store for reading (at most one of `db`, `postgres`, `jsonl`; SQLite at its
    default path when none is given); never creates a SQLite file. A SQLite trail given its keyed
    `checkpoint` also merges the signed journals of processes that wrote with that key."""
    if sum(x is not None for x in (db, postgres, jsonl)) > 1:
        raise ConfigError("store", "choose one of --db, --postgres, --jsonl")
    if postgres is not None:
        from mcp_elicit.audit.postgres import PostgresAuditSink

        return PostgresAuditSink(postgres, table=table, create=False)
    if jsonl is not None:
        from mcp_elicit.audit.jsonl import JsonlAuditSink

        if not Path(jsonl).is_file():
            raise AuditReadError("jsonl", jsonl, "no such file")
        return JsonlAuditSink(jsonl)
    from mcp_elicit.audit.sqlite import SqliteAuditSink
    from mcp_elicit.config import default_audit_db_path

    return SqliteAuditSink(
        db if db is not None else default_audit_db_path(), readonly=True, checkpoint=checkpoint
    )


def find_record(
    sink: Any, key: str, *, by_id: bool = False, namesakes: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The records `key` names in `sink`. ``#N`` or a bare number ``N`` (all digits): the record
    of sequence number N, as `mcp-elicit audit list` shows it. Anything else, or any key with
    `by_id`: the record with that id, else every record whose id starts with `key`. One record
    when the key is unambiguous, none when nothing matches, several otherwise.

    When a bare number is read as a seq and `namesakes` is given, the records whose id starts
    with those digits are appended to it (found in the same pass), so a reader can say how to
    name them instead. Raises AuditReadError."""
    key = key.strip()
    digits = key[1:] if key.startswith("#") and not by_id else key if key.isdigit() and not by_id else None
    if digits is not None:
        if not digits.isdigit():
            return []
        seq, found = int(digits), list[dict[str, Any]]()
        also = None if key.startswith("#") else namesakes  # only a bare number is also an id start
        for r in sink.iter_records():
            if r.get("seq") == seq and not found:
                found.append(r)
            elif also is not None and str(r.get("id", "")).startswith(digits):
                also.append(r)
        return found
    found_one = sink.get(key) if key else None
    if found_one is not None:
        return [found_one]
    if not key:
        return []
    return [r for r in sink.iter_records() if str(r.get("id", "")).startswith(key)]


def break_place(b: ChainBreak) -> str:
    """Where a break is, as every reader names it: ``#SEQ (id ID)`` for a record, as `list` and
    `show` name records; ``- (position N)`` (1-based, in stored order) for a record with no
    readable seq, such as a torn line; ``#SEQ (head)`` for `expected_head`; ``#SEQ (checkpoint)``
    for a break found against the keyed checkpoint (SEQ: the record it names); ``-`` for no seq."""
    seq = "-" if b.seq is None else f"#{b.seq}"
    if b.kind in CHECKPOINT_BREAKS:
        return f"{seq} (checkpoint)"
    if b.kind == "head_mismatch":
        return f"{seq} (head)"
    named = f"id {b.record_id}" if b.record_id else ""
    if b.seq is None:
        return f"- (position {b.index + 1}{', ' + named if named else ''})"
    return f"{seq} ({named})" if named else seq


class CheckedRead:
    """The records a sink's filters select, each checked against its hashed body.

    The SQL sinks select rows by their indexed columns (copies of the body kept for filtering,
    not hashed). A row whose column says it matches while its body says otherwise (a hand-edited
    column) is left out, and its seq kept in `mislabelled` for the reader to report. A record whose
    column was edited so that a filter no longer selects it is not seen here: `verify` reports it
    (`column_mismatch`)."""

    def __init__(self, sink: Any, *, newest: int | None = None, **filters: Any) -> None:
        self._sink, self._newest, self._filters = sink, newest, filters
        self._check = Filters.of(**filters)
        self.mislabelled: list[Any] = []

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The records, oldest first; with `newest`, only the last that many the filters select
        (a SQL store reads only those)."""
        if self._newest is None:
            records = self._sink.iter_records(**self._filters)
        elif hasattr(self._sink, "newest"):  # the package's sinks; any AuditSink is read through
            records = iter(self._sink.newest(self._newest, **self._filters))
        else:
            records = iter(collections.deque(self._sink.iter_records(**self._filters), maxlen=self._newest))
        for record in records:
            if self._check.matches(record):
                yield record
            else:
                self.mislabelled.append(record.get("seq"))

    def mislabelled_note(self) -> str | None:
        """One sentence naming the records left out (None: none)."""
        if not self.mislabelled:
            return None
        named = ", ".join(f"#{seq}" for seq in self.mislabelled)
        return (
            f"left out {named}: an indexed column says it matches the filter, its hashed record does"
            " not (the column was edited; `mcp-elicit audit verify` reports it)"
        )

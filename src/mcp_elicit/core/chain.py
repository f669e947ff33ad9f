"""Verifying a hash-chained consent trail: walk its records, report every break where it is.

The records and their hashing are `core.consent`'s; this module only reads them. A break is an
edited, inserted, deleted or forged record, or stored text that is not the canonical text of what
was hashed; the sinks add checks of their own (keyed checkpoints, indexed columns) by kind.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp_elicit.core.consent import GENESIS_HASH, canonical_json, record_hash

__all__ = ["BREAK_KINDS", "ChainBreak", "ChainVerifier", "VerifyReport", "verify_chain"]

# Kinds of chain break `verify_chain` and the sinks report.
BREAK_KINDS: Final[dict[str, str]] = {
    "malformed": "not a record (unparseable, or a required key is missing or of the wrong type)",
    "non_canonical": "the stored text is not the canonical JSON of a record (a duplicated key, other "
    "key order or spacing): readers may see values other than the hashed ones",
    "hash_mismatch": "the stored hash does not match the record's content: the record was edited",
    "deleted": "sequence numbers skip and the link is broken: records before this one were deleted",
    "inserted": "sequence number not after the previous one: a record was inserted or reordered",
    "broken_link": "prev_hash is not the previous record's hash: a record was replaced or forged",
    "duplicate_id": "the record id was seen before",
    "column_mismatch": "an indexed column of the store disagrees with the hashed record",
    "head_mismatch": "the last hash is not the expected head: the tail was cut off or rewritten",
    "truncated": "the record a keyed checkpoint names is missing: the tail was cut off",
    "rewritten": "the record a keyed checkpoint names has another hash: the tail was re-chained",
    "bad_checkpoint": "the checkpoint's MAC does not match the key: it was forged or the key is wrong",
    "no_checkpoint": "a keyed trail that holds records has no checkpoint: the file was deleted or is "
    "elsewhere, so a cut or re-chained tail could not be looked for",
}


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """One break: where (position in the walk, record id and seq when known), which kind, detail."""

    index: int
    record_id: str
    seq: int | None
    kind: str  # a key of BREAK_KINDS
    detail: str


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """The outcome of a walk: how many records, the last hash (the head) and every break found."""

    count: int
    head_hash: str
    breaks: tuple[ChainBreak, ...]

    @property
    def ok(self) -> bool:
        return not self.breaks

    @property
    def first_break(self) -> ChainBreak | None:
        return self.breaks[0] if self.breaks else None


class ChainVerifier:
    """Walks records one at a time (so sinks can stream) and collects breaks; `finish` reports.

    After a break the walk continues from the record as stored, so one edit is one break, not a
    cascade through every later record; after a malformed record the next good one is taken as
    the new baseline without a link check.
    """

    def __init__(self, anchor: tuple[int, str, bool] | None = None, keyed: bool = False) -> None:
        # (seq, hash, genuine) from a keyed checkpoint (audit/checkpoint.py): that record must exist.
        # `keyed`: the trail has a checkpoint file, so its absence (`anchor` None) is a break too.
        self._anchor = anchor
        self._keyed = keyed
        self._anchor_seen: str | None = None
        self._count = 0
        self._prev_hash = GENESIS_HASH
        self._prev_seq: int | None = None
        self._ids: set[str] = set()
        self._breaks: list[ChainBreak] = []
        self._resync = False  # after a malformed record, take the next good one as the new baseline

    def note(self, index: int, record_id: str, seq: int | None, kind: str, detail: str) -> None:
        """Add a break found outside the chain walk (for example a store's column mismatch)."""
        self._breaks.append(ChainBreak(index, record_id, seq, kind, detail))

    def feed_text(self, text: str) -> Any:
        """Feed a record as stored; a text that is not exactly its canonical JSON is a break.

        The hash covers the parsed values, so without this check a body rewritten into JSON that
        parses differently for other readers (a key given twice, the last one winning) could pass.
        Returns the parsed record (or the raw text when it is not JSON).
        """
        try:
            record = json.loads(text)
        except (TypeError, ValueError, RecursionError):  # nested past the parser's depth: not a record
            record = text
        index, known = self._count, len(self._breaks)
        self.feed(record)
        # one edit, one break: a record already reported (e.g. hash_mismatch) is not reported twice
        if (
            len(self._breaks) == known
            and isinstance(record, dict)
            and _well_formed(record)
            and canonical_json(record).decode("utf-8") != text
        ):
            self.note(
                index,
                record["id"],
                record["seq"],
                "non_canonical",
                "the stored text differs from the canonical JSON of its parsed record",
            )
        return record

    def feed(self, record: Any) -> None:
        index = self._count
        self._count += 1
        if not _well_formed(record):
            self.note(
                index, _id_of(record), None, "malformed", "not a record with seq, id, prev_hash and hash"
            )
            self._resync = True
            return
        rid, seq, prev, stored = record["id"], record["seq"], record["prev_hash"], record["hash"]
        try:
            computed = record_hash(record)
        except (TypeError, ValueError, UnicodeError, RecursionError) as exc:
            self.note(index, rid, seq, "malformed", f"cannot be encoded canonically: {exc}")
            self._resync = True
            return
        if computed != stored:
            self.note(
                index, rid, seq, "hash_mismatch", f"stored {stored[:12]}…, content hashes to {computed[:12]}…"
            )
        expected_seq = 1 if self._prev_seq is None else self._prev_seq + 1
        if self._resync:
            self._resync = False  # the malformed record already marks this spot
        elif prev != self._prev_hash:
            if seq > expected_seq:
                kind, detail = "deleted", f"seq {expected_seq}..{seq - 1} missing before seq {seq}"
            elif seq < expected_seq:
                kind, detail = "inserted", f"seq {seq} follows seq {self._prev_seq}"
            else:
                kind, detail = "broken_link", f"prev_hash {prev[:12]}… is not {self._prev_hash[:12]}…"
            self.note(index, rid, seq, kind, detail)
        elif seq != expected_seq:
            kind = "deleted" if seq > expected_seq else "inserted"
            self.note(index, rid, seq, kind, f"seq {seq} where {expected_seq} was expected")
        if rid in self._ids:
            self.note(index, rid, seq, "duplicate_id", f"id {rid} appears more than once")
        self._ids.add(rid)
        if self._anchor is not None and seq == self._anchor[0]:
            self._anchor_seen = stored
        self._prev_hash, self._prev_seq = stored, seq

    def finish(self, expected_head: str | None = None) -> VerifyReport:
        breaks = sorted(self._breaks, key=lambda b: b.index)
        if self._anchor is not None:
            breaks.extend(self._anchor_breaks(*self._anchor))
        elif self._keyed and self._count:
            detail = f"no checkpoint, though the trail holds records up to seq {self._prev_seq or 0}"
            breaks.append(ChainBreak(self._count, "", None, "no_checkpoint", detail))
        if expected_head is not None and expected_head != self._prev_hash:
            breaks.append(
                ChainBreak(
                    self._count,
                    "",
                    self._prev_seq,
                    "head_mismatch",
                    f"head is {self._prev_hash}, not {expected_head}",
                )
            )
        return VerifyReport(count=self._count, head_hash=self._prev_hash, breaks=tuple(breaks))

    def _anchor_breaks(self, seq: int, digest: str, genuine: bool) -> list[ChainBreak]:
        if not genuine and not seq:  # a file that is not a checkpoint (audit/checkpoint.py)
            detail = "the checkpoint file is not a checkpoint (edited, emptied or replaced)"
            return [ChainBreak(self._count, "", None, "bad_checkpoint", detail)]
        if not genuine:
            return [ChainBreak(self._count, "", seq, "bad_checkpoint", "the checkpoint's MAC does not match")]
        if self._anchor_seen is None:
            detail = f"the checkpoint names seq {seq}; the trail ends at seq {self._prev_seq or 0}"
            return [ChainBreak(self._count, "", seq, "truncated", detail)]
        if self._anchor_seen != digest:
            detail = f"seq {seq} hashes to {self._anchor_seen[:12]}…, the checkpoint says {digest[:12]}…"
            return [ChainBreak(self._count, "", seq, "rewritten", detail)]
        return []


def _well_formed(record: Any) -> bool:
    if not isinstance(record, Mapping):
        return False
    seq = record.get("seq")
    return (
        isinstance(seq, int)
        and not isinstance(seq, bool)
        and isinstance(record.get("id"), str)
        and isinstance(record.get("prev_hash"), str)
        and isinstance(record.get("hash"), str)
    )


def _id_of(record: Any) -> str:
    rid = record.get("id") if isinstance(record, Mapping) else None
    return rid if isinstance(rid, str) else ""


def verify_chain(records: Iterable[Any], expected_head: str | None = None) -> VerifyReport:
    """Walk `records` in stored order and report every break (see `BREAK_KINDS`)."""
    verifier = ChainVerifier()
    for record in records:
        verifier.feed(record)
    return verifier.finish(expected_head)

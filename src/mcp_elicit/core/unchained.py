"""A consent record journaled before it has a place in the chain, and sealed into it later.

The SQLite trail (audit/journal.py) writes a record on the answer's path without its seq,
prev_hash and hash, as one line, and gives it its place when it merges the journal into the
chain. The line carries where the chain keys go, so sealing it hashes the text as it stands
(no parsing, no encoding again): the sealed text is the one `make_sealed_record` makes for the
same event, seq and previous hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Final

from mcp_elicit.core.consent import ConsentEvent, Level, unchained_texts

__all__ = ["Split", "make_unchained_record", "seal_split", "seal_unchained", "split_line", "unchained_id"]


def make_unchained_record(event: ConsentEvent, level: Level, record_id: str) -> bytes | None:
    """The line a journal keeps for the record of `event` at `level` (id `record_id`) before it
    has a place in a chain; None at level ``none``.

    The line is ``B P S {json}`` and a newline: the record's canonical JSON without ``seq``,
    ``prev_hash`` and ``hash``, after three offsets that say where `seal_unchained` splices them
    in (the end of the keys before "hash", then, in the text of the keys after it, where
    "protocol" and where "server" start), so that sealing it hashes without encoding again."""
    texts = unchained_texts(event, level, record_id)
    if texts is None:
        return None
    before, after = texts[0].encode("utf-8"), texts[1].encode("utf-8")
    # Only scalars precede "protocol" among the keys after "hash", and only strings and the url
    # object (no "server" key) follow "server": the first and the last match are the keys.
    at_protocol, at_server = after.find(b',"protocol":'), after.rfind(b',"server":')
    return b"%d %d %d {%b,%b}\n" % (len(before), at_protocol, at_server, before, after)


def unchained_id(line: bytes) -> str | None:
    """The record id in a journal line (`make_unchained_record`), None when it has no usable one."""
    parts = split_line(line)
    return None if parts is None else parts[4]


def seal_unchained(line: bytes, seq: int, prev_hash: str) -> tuple[dict[str, Any], str] | None:
    """The record of a journal line (`make_unchained_record`) placed at `seq` after `prev_hash`:
    its indexed values (seq, id, time, server name, action, prev_hash, hash, as `row_of` reads
    them) and its canonical text, the text `make_sealed_record` makes; None when the line is not
    such a line (its offsets do not fall on those keys, a value is not where it belongs).

    Nothing is parsed or encoded again: the chain keys are spliced in and the text hashed as the
    line spells it. A line rewritten into other JSON (other key order, spacing, not JSON at all)
    is stored so, and `verify` reports it (``non_canonical``, ``malformed``, ``column_mismatch``)."""
    parts = split_line(line)
    return None if parts is None else seal_split(parts, seq, prev_hash)


def seal_split(parts: Split, seq: int, prev_hash: str) -> tuple[dict[str, Any], str] | None:
    """`seal_unchained` of a line already split (`split_line`)."""
    before, keys, middle, tail, record_id = parts
    rest = b'%b,"prev_hash":"%b"%b,"seq":%d%b' % (keys, prev_hash.encode("ascii"), middle, seq, tail)
    digest = hashlib.sha256(b"{%b,%b}" % (before, rest)).hexdigest()
    at_time = tail.find(b',"time":"') + 9
    try:
        text = (b'{%b,"hash":"%s",%b}' % (before, digest.encode("ascii"), rest)).decode("utf-8")
        server, _ = _scanstring(tail.decode("utf-8"), len(_SERVER_NAME))
    except ValueError:  # not UTF-8, or no JSON string where the server's name belongs
        return None
    action, when = before[10 : before.find(b'"', 10)], tail[at_time : tail.find(b'"', at_time)]
    if not (before.startswith(b'"action":"') and tail.startswith(_SERVER_NAME) and at_time > 9):
        return None
    if not action or not when or b"\\" in action + when:
        return None
    values = {
        "seq": seq,
        "id": record_id,
        "time": when.decode("ascii", "replace"),
        "server": {"name": server},
        "action": action.decode("ascii", "replace"),
        "prev_hash": prev_hash,
        "hash": digest,
    }
    return values, text


_SERVER_NAME: Final = b',"server":{"name":"'
# The JSON string reader json.loads uses (C): the text of a string starting at an index.
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


# A journal line's parts: keys before "hash", keys from "id" to "protocol", from "protocol" to
# "server", from "server" on (texts), and the record id.
Split = tuple[bytes, bytes, bytes, bytes, str]


def split_line(line: bytes) -> Split | None:
    """(keys before "hash", keys from "id" to "protocol", from "protocol" to "server", from
    "server" on, the record id) of a journal line; None when it is not one."""
    try:
        head, at_protocol, at_server, body = line.rstrip(b"\n").split(b" ", 3)
        cut, p, q = int(head), int(at_protocol), int(at_server)
    except ValueError:
        return None
    if not (body[:1] == b"{" and body[-1:] == b"}" and 0 < cut < len(body) - 2 and 0 < p < q):
        return None
    before, after = body[1 : cut + 1], body[cut + 2 : -1]
    if not (
        body[cut + 1 : cut + 2] == b","
        and after.startswith(b'"id":"')
        and after[p:].startswith(b',"protocol":')
        and after[q:].startswith(b',"server":')
    ):
        return None
    end = after.find(b'"', 6)
    record_id = after[6:end]
    if end < 0 or not record_id or b"\\" in record_id:
        return None
    return before, after[:p], after[p:q], after[q:], record_id.decode("utf-8", "replace")

"""A consent record journaled before it has a place in the chain, and sealed into it later.

The SQLite trail (audit/journal.py) writes a record on the answer's path without its seq,
prev_hash and hash, as one line, and gives it its place when it merges the journal into the
chain. The line carries where the chain keys go, so sealing it hashes the text as it stands
(no parsing, no encoding again): the sealed text is the one `make_sealed_record` makes for the
same event, seq and previous hash.

The line is made on every audited elicitation's path, so at level "metadata" (the default) its
text is built without dicts (`unchained_texts`), the parts a session's records share (the
client, the server, a form's fields) encoded once; property-tested to give exactly the text the
record's dicts encode to.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from mcp_elicit.core.consent import (
    _ENCODE_HALF,
    _FIELDS_CACHE_SIZE,
    RECORD_VERSION,
    ClientIdentity,
    ConsentEvent,
    Level,
    ServerIdentity,
    _fields_of,
    _halves,
    _jsonable,
    _text,
    _url_part,
    format_time,
)
from mcp_elicit.core.redact import redact_where
from mcp_elicit.core.sensitive import classify_schema

__all__ = [
    "Split",
    "make_unchained_record",
    "seal_split",
    "seal_unchained",
    "split_line",
    "unchained_id",
    "unchained_texts",
]


def unchained_texts(event: ConsentEvent, level: Level, record_id: str) -> tuple[str, str] | None:
    """The text of the record's keys before "hash" and of those after it, without seq and
    prev_hash: what encoding the record's two halves (`core.consent`) gives, built directly at level
    "metadata" (what trails record by default; no dicts, one call per value), through the dicts
    at the other levels. None at level "none"."""
    if level != "metadata":
        halves = _halves(event, level, record_id, None, None)
        return None if halves is None else (_ENCODE_HALF(halves[0])[1:-1], _ENCODE_HALF(halves[1])[1:-1])
    fields_text = _fields_text(_event_fields(event))
    call, parties = event.call, _parties_text(event.client, event.server)
    call_text = "null"
    if call is not None:
        method, name = _STR(_text(call.method)), _STR(_text(call.name))
        call_text = (
            f'{{"method":{method},"name":{name},"request_id":{_ENCODE_HALF(_jsonable(call.request_id))}}}'
        )
    details = "" if event.details is None else f',"details":{_ENCODE_HALF(_jsonable(event.details))}'
    low = (
        f'"action":{_value(event.action)},"call":{call_text},{parties[2]},'
        f'"decided_by":{_value(event.decided_by)}{details},"fields":{fields_text}'
    )
    latency = round(event.latency_ms) if math.isfinite(event.latency_ms) else -1
    digest = hashlib.sha256(_text(event.message).encode("utf-8")).hexdigest()
    url = _ENCODE_HALF(_url_part(event, level)) if event.mode == "url" or event.url is not None else "null"
    high = (
        f'"id":{_STR(_text(record_id))},"latency_ms":{_ENCODE_HALF(latency)},"level":"metadata",'
        f'"message_sha256":"{digest}","mode":{_value(event.mode)},"person":{_STR(_text(event.person))},'
        f'"protocol":{_STR(_text(event.protocol_revision))},"reason":{_STR(_text(event.reason))},'
        f'{parties[3]},"side":{_value(event.side)},"time":"{format_time(event.time)}",'
        f'"url":{url},"v":{RECORD_VERSION}'
    )
    return low, high


# The string encoder of the record's encoder (ensure_ascii off), for values known to be strings.
_STR: Final[Callable[[str], str]] = json.encoder.encode_basestring
# The encoded "fields" list of a form, remembered per field list object (`_fields_of` keeps them).
_fields_texts: dict[int, tuple[Any, str]] = {}
# The encoded "client" and "server" members, remembered per pair of identity objects (a session's
# records share them; each entry holds its objects, so an id is never reused while it is here).
_parties_texts: dict[tuple[int, int], tuple[ClientIdentity, ServerIdentity, str, str]] = {}


def _event_fields(event: ConsentEvent) -> tuple[dict[str, str], ...]:
    """The record's "fields" entries for `event` (`_fields_of`, remembered per form)."""
    schema = event.requested_schema if isinstance(event.requested_schema, Mapping) else None
    verdict = None
    if event.mode != "url" and schema is not None:
        verdict = event.form_verdict or classify_schema(schema, None)
    properties = schema.get("properties") if schema is not None else None
    return _fields_of(properties if isinstance(properties, Mapping) else {}, verdict)[1]


def _fields_text(fields: tuple[dict[str, str], ...]) -> str:
    """The encoded "fields" list, remembered per field list object."""
    known = _fields_texts.get(id(fields))
    if known is None or known[0] is not fields:
        if len(_fields_texts) >= _FIELDS_CACHE_SIZE:
            _fields_texts.clear()
        known = _fields_texts[id(fields)] = (fields, _ENCODE_HALF(list(fields)))
    return known[1]


def _parties_text(client: ClientIdentity, server: ServerIdentity) -> tuple[Any, Any, str, str]:
    """(client, server, their "client" member's text, their "server" member's text), remembered."""
    known = _parties_texts.get((id(client), id(server)))
    if known is not None and known[0] is client and known[1] is server:
        return known
    client_text = f'"client":{{"name":{_STR(_text(client.name))},"version":{_STR(_text(client.version))}}}'
    name, version, where = (
        _STR(_text(v)) for v in (server.name, server.version, redact_where(_text(server.where)))
    )
    server_text = f'"server":{{"name":{name},"version":{version},"where":{where}}}'
    if len(_parties_texts) >= _FIELDS_CACHE_SIZE:
        _parties_texts.clear()
    return _parties_texts.setdefault((id(client), id(server)), (client, server, client_text, server_text))


def _value(value: Any) -> str:
    """A value the event holds as given (its action, mode, ...), encoded as the encoder would."""
    return _STR(value) if type(value) is str else _ENCODE_HALF(value)


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

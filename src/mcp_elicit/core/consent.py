"""The consent record: one per elicitation, redacted by level, hash-chained (spec rules C4, U9).

A `ConsentEvent` holds the facts of one elicitation as the pipeline saw them. `make_record` turns
it into a plain dict at a redaction level modelled on the Kubernetes audit policy levels:

- ``none``: nothing is recorded (`make_record` returns None).
- ``metadata`` (default): who asked whom (where a server runs with its credentials redacted at
  every level, core/redact.py), when, in which mode, the outcome and who decided it; a
  SHA-256 digest of the message (not its text), field names and types (never values), and for URL
  mode the host, the registrable domain and the URL verdict (not the path or query, which may
  carry tokens).
- ``request``: adds the message text, the requested schema and the full URL.
- ``request_response``: adds the answer values.

Fields that `sensitive.classify_schema` judges ``block`` or ``warn`` never have their values
stored at any level: not in ``content`` and not as a ``default`` in the stored schema. Answer keys
that are not in the schema are treated the same way (their sensitivity is unknown).

Chain: records carry ``seq`` (1, 2, 3, … in append order), ``prev_hash`` (the previous record's
``hash``, or ``GENESIS_HASH`` for the first) and ``hash`` = SHA-256 over `canonical_json` of the
record without ``hash``. `core.chain.verify_chain` walks records in order and reports every break with its
index, record id and kind (``BREAK_KINDS``). A chain cannot by itself catch a forger who rewrites
every record after an edit, nor a cut-off tail: compare the head hash `verify_chain` returns with
one kept elsewhere (``expected_head``).

Pure: time comes in on the event, ids are made by the caller, nothing here does I/O.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal, TypeAlias
from urllib.parse import urlsplit

from mcp_elicit.core.redact import redact_where
from mcp_elicit.core.sensitive import FormVerdict, classify_schema
from mcp_elicit.errors import InvalidArgument

__all__ = [
    "DEFAULT_LEVEL",
    "GENESIS_HASH",
    "LEVELS",
    "RECORD_VERSION",
    "CallRef",
    "ClientIdentity",
    "ConsentEvent",
    "Level",
    "ServerIdentity",
    "canonical_json",
    "format_time",
    "make_record",
    "make_sealed_record",
    "record_hash",
    "time_bound",
]

Level: TypeAlias = Literal["none", "metadata", "request", "request_response"]
# What a record says happened: the three answers, or "error" when the question failed.
RecordedAction: TypeAlias = Literal["accept", "decline", "cancel", "error"]
DecidedBy: TypeAlias = Literal[
    "person", "script", "policy", "rate_limit", "secret_guard", "timeout", "gate", "no_terminal", "error"
]

LEVELS: Final[tuple[str, ...]] = ("none", "metadata", "request", "request_response")
ACTIONS: Final[tuple[str, ...]] = ("accept", "decline", "cancel", "error")
DECIDERS: Final[tuple[str, ...]] = (
    "person",
    "script",
    "policy",
    "rate_limit",
    "secret_guard",
    "timeout",
    "gate",  # the client refused the request's shape or schema before anyone saw it
    "no_terminal",  # nobody could be asked (no terminal, no script; a gateway's client without elicitation)
    "error",
)

# Metadata by default: enough to answer "who asked me what, and what did I do" without keeping
# anything a person typed (the Kubernetes audit guidance for most resources).
DEFAULT_LEVEL: Final[Level] = "metadata"

# prev_hash of the first record: 64 zeros, the width of a SHA-256 hex digest.
GENESIS_HASH: Final = "0" * 64

# Version of the record layout; bump it when a key changes meaning.
RECORD_VERSION: Final = 1

# Characters of message text kept at the request levels. The form limits (core/limits.py) already
# cap messages at 4,000; this guards the store against a peer that ignores them.
MAX_RECORDED_MESSAGE_CHARS: Final = 16_000

# Nesting kept when a schema or answer value is copied into a record; deeper parts become a
# placeholder. Spec forms are two levels deep (a multi-select's items), so 16 never cuts honest data.
MAX_RECORDED_DEPTH: Final = 16


@dataclass(frozen=True, slots=True)
class ServerIdentity:
    """The server: its declared name and version, and where it runs (command line or URL)."""

    name: str = ""
    version: str = ""
    where: str = ""


@dataclass(frozen=True, slots=True)
class ClientIdentity:
    """The client application: its declared name and version."""

    name: str = ""
    version: str = ""


@dataclass(frozen=True, slots=True)
class CallRef:
    """The request the elicitation belongs to: method, JSON-RPC id and the tool/prompt/resource name."""

    method: str = ""
    request_id: str | int | None = None
    name: str = ""


@dataclass(frozen=True, slots=True)
class ConsentEvent:
    """The facts of one elicitation, as the pipeline saw them. Time is Unix seconds."""

    time: float
    side: Literal["client", "server"]
    # "none": nothing was shown to anyone (a decision made without asking: an application's
    # policy decision, a form the secret guard stopped before it was sent)
    mode: Literal["form", "url", "none"]
    action: RecordedAction
    decided_by: DecidedBy
    server: ServerIdentity = field(default_factory=ServerIdentity)
    client: ClientIdentity = field(default_factory=ClientIdentity)
    protocol_revision: str = ""
    person: str = ""  # who answered, as the deployment knows them (an OAuth `sub`), "" if unknown
    message: str = ""
    requested_schema: Mapping[str, Any] | None = None
    url: str | None = None
    url_host: str | None = None  # derived from `url` when None
    url_domain: str | None = None  # registrable domain, from core/urls.py
    url_verdict: str | None = None
    reason: str = ""
    latency_ms: float = 0.0
    call: CallRef | None = None
    content: Mapping[str, Any] | None = None
    record_id: str = ""
    # The secret guard's verdict on `requested_schema`, if the pipeline already has it (it runs the
    # guard before showing the form); computed here when None.
    form_verdict: FormVerdict | None = None
    # Facts an application adds to its record (the data server: query digest, estimate, columns);
    # stored as ``details`` at every level, so it must never hold what a person typed.
    details: Mapping[str, Any] | None = None


# One encoder for every record: json.dumps with options builds a new one on each call.
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def _unencodable(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _record_encoder() -> Callable[[Any], str]:
    """`_ENCODE` for the halves of a record, made once: the same text, without building an
    encoder per call or checking for cycles (a record's values are fresh, depth-limited copies)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - a Python without the C accelerator
        return _ENCODE
    encoder = make(None, _unencodable, json.encoder.encode_basestring, None, ":", ",", True, False, False)
    return lambda value: "".join(encoder(value, 0))


_ENCODE_HALF = _record_encoder()


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8, no NaN: the bytes the hash is computed over."""
    return _ENCODE(value).encode("utf-8")


def record_hash(record: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of `record` without its ``hash`` key."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def format_time(ts: float) -> str:
    """Unix seconds as fixed-width UTC ISO 8601 with microseconds; such strings sort by time."""
    if not 0 <= ts < _YEAR_10000:  # (NaN too) datetime's own range checks and errors
        # isoformat is twice as fast as strftime and gives the same text ("+00:00" becomes "Z")
        return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="microseconds")[:-6] + "Z"
    # What datetime.fromtimestamp does (microseconds rounded half to even), with the text of
    # the whole second remembered: the records of one second differ in the microseconds only.
    fraction, whole = math.modf(ts)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        micros, whole = micros - 1_000_000, whole + 1.0
    second, hit = int(whole), _last_second[0]  # one tuple: threads never see half an update
    if hit[0] != second:
        hit = _last_second[0] = (second, datetime.fromtimestamp(second, tz=UTC).isoformat()[:-6])
    return f"{hit[1]}.{micros:06d}Z"


_YEAR_10000: Final = 253_402_300_800.0  # datetime's range ends before it
_last_second: list[tuple[int, str]] = [(-1, "")]


def time_bound(value: float | datetime | str) -> str:
    """A filter bound (Unix seconds, a datetime, naive = UTC, or an ISO 8601 string) in record form."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return format_time(value)


def _text(value: str) -> str:
    """`value` with lone surrogates replaced, so it always encodes to UTF-8."""
    if value.isascii():
        return value
    return value.encode("utf-8", "replace").decode("utf-8")


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of untrusted data: strings cleaned, odd types and deep nesting stringified."""
    if depth > MAX_RECORDED_DEPTH:
        return "<too deep>"
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Mapping):
        return {_text(str(k)): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v, depth + 1) for v in value]
    return _text(repr(value))


# The field list and sensitivity map of a form, remembered per (properties, verdict) object pair:
# a pipeline records the same form many times. Entries hold their objects, so ids are not reused.
_FIELDS_CACHE_SIZE: Final = 256
_fields_cache: dict[tuple[int, int], tuple[Any, Any, dict[str, str], tuple[dict[str, str], ...]]] = {}


def _fields_of(
    properties: Mapping[str, Any], verdict: FormVerdict | None
) -> tuple[dict[str, str], tuple[dict[str, str], ...]]:
    """(field name -> secret-guard verdict, the record's "fields" entries). Treat both as read-only."""
    key = (id(properties), id(verdict))
    hit = _fields_cache.get(key)
    if hit is not None and hit[0] is properties and hit[1] is verdict:
        return hit[2], hit[3]
    sensitivity: dict[str, str] = {f.name: f.verdict for f in verdict.fields} if verdict else {}
    fields = tuple(
        {"name": _text(str(name)), "type": _field_type(spec), "sensitive": sensitivity.get(str(name), "ok")}
        for name, spec in properties.items()
    )
    if len(_fields_cache) >= _FIELDS_CACHE_SIZE:
        _fields_cache.clear()
    _fields_cache[key] = (properties, verdict, sensitivity, fields)
    return sensitivity, fields


def _field_type(schema: Any) -> str:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    return _text(kind) if isinstance(kind, str) else "unknown"


def make_record(
    event: ConsentEvent, level: Level, prev_hash: str, *, seq: int = 1, record_id: str | None = None
) -> dict[str, Any] | None:
    """The record for `event` at `level`, chained onto `prev_hash`; None at level ``none``.

    The id is `record_id` if given, else `event.record_id` (sinks make one when both are empty).
    Raises ValueError for an unknown level or a missing id: those are the caller's bugs.
    """
    sealed = make_sealed_record(event, level, prev_hash, seq=seq, record_id=record_id)
    return None if sealed is None else sealed[0]


def make_sealed_record(
    event: ConsentEvent, level: Level, prev_hash: str, *, seq: int = 1, record_id: str | None = None
) -> tuple[dict[str, Any], str] | None:
    """`make_record`, plus the record's canonical JSON text (what sinks store), encoded only once."""
    halves = _halves(event, level, record_id, seq, prev_hash)
    return None if halves is None else _seal(*halves)


def _halves(
    event: ConsentEvent, level: Level, record_id: str | None, seq: int | None, prev_hash: str | None
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The record's keys that sort before "hash" and those after it (see `_seal`); without seq
    and prev_hash when they are None (an unchained record, core/unchained.py)."""
    if level not in LEVELS:
        raise InvalidArgument("level", f"unknown audit level {level!r}; expected one of {', '.join(LEVELS)}")
    if level == "none":
        return None
    record_id = record_id or event.record_id
    if not record_id:
        raise InvalidArgument("record_id", "ConsentEvent.record_id must be set before making a record")
    schema = event.requested_schema if isinstance(event.requested_schema, Mapping) else None
    verdict = None
    if event.mode != "url" and schema is not None:
        verdict = event.form_verdict or classify_schema(schema, None)
    properties = schema.get("properties") if schema is not None else None
    if not isinstance(properties, Mapping):
        properties = {}
    sensitivity, fields = _fields_of(properties, verdict)
    # Keys sorting before "hash" go in `low`, the rest in `high`: the two halves of the canonical
    # text, so the record is encoded once (see _seal).
    low: dict[str, Any] = {
        "action": event.action,
        "call": None
        if event.call is None
        else {
            "method": _text(event.call.method),
            "request_id": _jsonable(event.call.request_id),
            "name": _text(event.call.name),
        },
        "client": {"name": _text(event.client.name), "version": _text(event.client.version)},
        "decided_by": event.decided_by,
        "fields": list(fields),
    }
    high: dict[str, Any] = {
        "v": RECORD_VERSION,
        "seq": seq,
        "id": _text(record_id),
        "time": format_time(event.time),
        "level": level,
        "side": event.side,
        "mode": event.mode,
        "protocol": _text(event.protocol_revision),
        "server": {
            "name": _text(event.server.name),
            "version": _text(event.server.version),
            "where": redact_where(_text(event.server.where)),
        },
        "person": _text(event.person),
        "message_sha256": hashlib.sha256(_text(event.message).encode("utf-8")).hexdigest(),
        "url": None,
        "reason": _text(event.reason),
        "latency_ms": round(event.latency_ms) if math.isfinite(event.latency_ms) else -1,
        "prev_hash": prev_hash,
    }
    if seq is None or prev_hash is None:
        del high["seq"], high["prev_hash"]
    if event.mode == "url" or event.url is not None:
        high["url"] = _url_part(event, level)
    if event.details is not None:  # only when given, so other records keep their exact shape
        low["details"] = _jsonable(event.details)  # sorts before "hash": the low half
    if level in ("request", "request_response"):
        message = _text(event.message)
        high["message"] = message[:MAX_RECORDED_MESSAGE_CHARS]
        if len(message) > MAX_RECORDED_MESSAGE_CHARS:
            high["message_truncated"] = True
        high["schema"] = None if schema is None else _redacted_schema(schema, sensitivity)
    if level == "request_response" and event.content is not None:
        kept, redacted = {}, []
        for key, value in event.content.items():
            name = _text(str(key))
            if name in sensitivity and sensitivity[name] == "ok":
                kept[name] = _jsonable(value)
            else:
                redacted.append(name)
        low["content"] = kept
        high["redacted"] = sorted(redacted)
    return low, high


def _seal(low: dict[str, Any], high: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The record (both halves and its ``hash``) with its canonical text, encoding it only once.

    A sorted-key JSON object is the concatenation of its members, so the text of the keys before
    "hash" (`low`) and of those after it (`high`), joined, is the hashed text, and with the hash
    member between them it is the stored text.
    """
    before = _ENCODE_HALF(low)[1:-1].encode("utf-8")
    after = _ENCODE_HALF(high)[1:-1].encode("utf-8")
    hashed = b"{" + b",".join(p for p in (before, after) if p) + b"}"
    digest = hashlib.sha256(hashed).hexdigest()
    member = b'"hash":"' + digest.encode("ascii") + b'"'
    stored = b"{" + b",".join(p for p in (before, member, after) if p) + b"}"
    record = {**low, "hash": digest, **high}
    return record, stored.decode("utf-8")


def _url_part(event: ConsentEvent, level: Level) -> dict[str, Any]:
    host = event.url_host
    if host is None and event.url:
        try:
            host = urlsplit(event.url).hostname or ""
        except ValueError:
            host = ""
    part: dict[str, Any] = {
        "host": _text(host or ""),
        "domain": _text(event.url_domain or ""),
        "verdict": _text(event.url_verdict or ""),
    }
    if level != "metadata":
        part["full"] = _text(event.url or "")
    return part


def _redacted_schema(schema: Mapping[str, Any], sensitivity: Mapping[str, str]) -> Any:
    """A JSON-safe copy of the schema without the defaults of sensitive fields."""
    copy = _jsonable(schema)
    properties = copy.get("properties") if isinstance(copy, dict) else None
    if isinstance(properties, dict):
        for name, spec in properties.items():
            if sensitivity.get(name, "ok") != "ok" and isinstance(spec, dict) and "default" in spec:
                spec["default"] = "<redacted>"
    return copy

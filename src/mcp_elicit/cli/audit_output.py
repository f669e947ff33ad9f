"""What the `mcp-elicit audit` commands print: records and CSV rows made from a trail's text.

A trail holds text servers chose (names, versions, tools, reasons); the readers show it inert.
"""

from __future__ import annotations

import csv
import json
import re
import typing as _typing
import unicodedata
from typing import Final

from mcp_elicit.core.text import clean_text

__all__ = [
    "CSV_COLUMNS",
    "FORMULA_STARTS",
    "MAX_SHOWN_CELL_CHARS",
    "csv_cell",
    "csv_row",
    "csv_writer",
    "inert",
    "inert_json",
    "shown",
]

# Characters of one value `audit list` and `verify` print on a line (a longer one ends `…⟨cut⟩`).
MAX_SHOWN_CELL_CHARS: Final = 1_024

# In JSON output, characters a terminal could act on or that reorder, hide or fake text: escaped.
_UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_BLANK_LOOKALIKES: Final = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
_NOT_PLAIN_ASCII: Final = re.compile(r"[^\x20-\x7e\n]")


def inert(value: object) -> str:
    """A value from the trail as one line a terminal shows as text (core/text.py's cleaning, as
    the prompts clean what a server wrote): escapes removed, controls and bidi marks made visible."""
    return clean_text(str(value), limit=MAX_SHOWN_CELL_CHARS, multiline=False)


def shown(record: _typing.Mapping[str, _typing.Any]) -> dict[str, _typing.Any]:
    """`record` with the text `audit list` prints made `inert`: its own strings and those of its
    `server` and `call` (a trail written before the record side cleaned names holds them raw)."""

    def clean(part: _typing.Mapping[str, _typing.Any]) -> dict[str, _typing.Any]:
        return {k: inert(v) if isinstance(v, str) else v for k, v in part.items()}

    out = clean(record)
    for key in ("server", "call"):
        if isinstance(record.get(key), _typing.Mapping):
            out[key] = clean(record[key])
    return out


def _escaped(match: re.Match[str]) -> str:
    ch = match.group()
    if unicodedata.category(ch) not in _UNSAFE_CATEGORIES and ch not in _BLANK_LOOKALIKES:
        return ch
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes a character beyond the BMP as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def inert_json(record: object, *, indent: int | None = None) -> str:
    """`record` as JSON (keys sorted) that parses to the same values, with every control, format
    (bidi, zero-width), line-separator, private-use, unassigned, surrogate and blank look-alike
    character written as a `\\uXXXX` escape: a terminal never receives one, other text stays
    readable (`ensure_ascii` would escape every accent too)."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, indent=indent)
    return _NOT_PLAIN_ASCII.sub(_escaped, text)


def inert_line(text: str) -> str:
    """JSON text with the characters `inert_json` escapes written as `\\uXXXX`: the same JSON
    (it parses to the same values, so a record's hash still checks), nothing a terminal acts on."""
    return _NOT_PLAIN_ASCII.sub(_escaped, text)


CSV_COLUMNS = (
    "seq",
    "id",
    "time",
    "side",
    "protocol",
    "server",
    "server_version",
    "server_where",
    "client",
    "client_version",
    "person",
    "mode",
    "method",
    "request_id",
    "call_name",
    "fields",
    "url_host",
    "url_domain",
    "url_verdict",
    "action",
    "decided_by",
    "reason",
    "latency_ms",
    "message_sha256",
    "prev_hash",
    "hash",
)


# What makes a spreadsheet read a CSV cell as a formula: `= + - @`, tab and CR at its start
# (OWASP's list), and the full-width forms some spreadsheets take for them.
FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def csv_cell(value: _typing.Any) -> _typing.Any:
    """A CSV cell for `value`: text that starts as a formula would gets a leading `'`, so a
    spreadsheet shows it as text instead of running it (CSV formula injection); so does text that
    starts with `'` itself, so one rule reads every cell back: a leading `'` was added. Other
    values as is."""
    if isinstance(value, str) and value.startswith((*FORMULA_STARTS, "'")):
        return "'" + value
    return value


def csv_writer(output: _typing.Any) -> _typing.Any:
    """A CSV writer for the export: lines end CRLF (RFC 4180), so a cell holding a CR or LF is
    quoted (with LF endings a bare CR in a server's text was written unquoted and split its row)."""
    return csv.writer(output, lineterminator="\r\n")


def csv_row(r: dict[str, _typing.Any]) -> list[_typing.Any]:
    """The `CSV_COLUMNS` of record `r`, every text cell made safe for spreadsheets (`csv_cell`)."""
    return [csv_cell(value) for value in _csv_values(r)]


def _csv_values(r: dict[str, _typing.Any]) -> list[_typing.Any]:
    server, client = r.get("server") or {}, r.get("client") or {}
    call, url = r.get("call") or {}, r.get("url") or {}
    fields = ";".join(f"{f.get('name')}:{f.get('type')}" for f in r.get("fields") or [])
    return [
        r.get("seq"),
        r.get("id"),
        r.get("time"),
        r.get("side"),
        r.get("protocol"),
        server.get("name"),
        server.get("version"),
        server.get("where"),
        client.get("name"),
        client.get("version"),
        r.get("person"),
        r.get("mode"),
        call.get("method"),
        call.get("request_id"),
        call.get("name"),
        fields,
        url.get("host"),
        url.get("domain"),
        url.get("verdict"),
        r.get("action"),
        r.get("decided_by"),
        r.get("reason"),
        r.get("latency_ms"),
        r.get("message_sha256"),
        r.get("prev_hash"),
        r.get("hash"),
    ]

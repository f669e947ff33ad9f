"""Validate answers (`ElicitResult.content`) against a form (F3, F7), apply defaults.

`validate_content(form, content)` returns the values, JSON-typed, in form order, with the defaults
of absent optional fields filled in; or raises `AnswerError` with one `FieldProblem` per bad field.
`Form.build` turns those values into the caller's own type afterwards.

Problem codes (`FieldProblem.code`, stable):

| code | meaning |
|---|---|
| `type` | wrong JSON type (also `null`, a boolean as a number, NaN/inf); field `""`: not an object |
| `missing` | a required field is absent |
| `unknown_field` | a key the form does not have |
| `not_integer` | a fractional number for an `integer` field |
| `too_short` | fewer code points than `minLength` |
| `too_long` | more code points than `maxLength` (or than `limits.MAX_STRING_LENGTH`) |
| `not_unicode` | a string with a lone surrogate (U+D800-U+DFFF): valid as a JSON escape, but no text |
| `below_minimum` | less than `minimum` (inclusive bound): "at least N needed" |
| `above_maximum` | greater than `maximum` (inclusive bound): "at most N allowed" |
| `format` | not an `email` / `uri` / `date` / `date-time` of the syntax below |
| `not_an_option` | a select value (or multi-select item) that is not an option |
| `duplicate` | the same item twice in a multi select |
| `too_few` | fewer multi-select items than `minItems` |
| `too_many` | more multi-select items than `maxItems` |
| `invalid` | the target type's own validation refused the values (`Form.build`) |

Decisions where the spec is silent:

- `number` takes any finite JSON number, fractional or not (F3: the generated schema's `integer` is
  an artifact). `integer` takes whole numbers; a float with no fractional part (3.0) is accepted
  and returned as the int 3, because JSON does not distinguish them (JSON Schema agrees). Booleans
  are never numbers, though Python says `bool` is an `int`. Integers beyond the range of a double
  (about 1.8e308) are refused for both kinds.
- `null` is never a value: an optional field the person left empty is omitted, not null.
- A multi select takes a JSON array (a Python list or tuple) and returns a list.
- Formats: `email` is an RFC 5322 addr-spec without quoted local parts or address literals, whose
  domain has a dot and a non-numeric last label (checked by `email-validator`, syntax only, no
  DNS; it also refuses special-use domains such as `.test` and `localhost`); `uri` is an absolute
  RFC 3986 URI (a scheme, ASCII only, fragment allowed); `date` is `YYYY-MM-DD` naming a real
  calendar day in years 1-9999; `date-time` is an RFC 3339 `date-time` with `T` and a `Z` or
  `±hh:mm` offset. Leap seconds (`:60`) are refused because no Python datetime can hold them.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import math
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from mcp_elicit.core import limits
from mcp_elicit.core.ranges import number
from mcp_elicit.core.sentinels import MISSING
from mcp_elicit.errors import AnswerError, FieldProblem

if TYPE_CHECKING:  # the model imports these checks; they only read its fields
    from mcp_elicit.core.form_model import Field, Form

__all__ = [
    "CODES",
    "check_field_value",
    "check_value",
    "is_date",
    "is_date_time",
    "is_email",
    "is_uri",
    "json_type",
    "parse_date",
    "parse_date_time",
    "validate_content",
]

CODES: Final = (
    "type",
    "missing",
    "unknown_field",
    "not_integer",
    "too_short",
    "too_long",
    "not_unicode",
    "below_minimum",
    "above_maximum",
    "format",
    "not_an_option",
    "duplicate",
    "too_few",
    "too_many",
    "invalid",
)


def validate_content(form: Form, content: Any) -> dict[str, Any]:
    """The validated values of `content` with defaults applied; AnswerError lists every bad field."""
    if not isinstance(content, Mapping):
        raise AnswerError((FieldProblem("", "type", f"content must be an object, not {_kind(content)}"),))
    problems: list[FieldProblem] = []
    values: dict[str, Any] = {}
    for f in form.fields:
        if f.name not in content:
            if f.default is not MISSING:
                values[f.name] = list(f.default) if f.kind == "multi_select" else f.default
            elif f.required:
                problems.append(FieldProblem(f.name, "missing", "a required field has no value"))
            continue
        value, problem = check_field_value(f, content[f.name])
        if problem is not None:
            problems.append(problem)
        else:
            values[f.name] = value
    names = set(form.names)
    for key in content:
        if key not in names:
            label = key if isinstance(key, str) else f"<{type(key).__name__}>"
            problems.append(FieldProblem(label, "unknown_field", "the form has no such field"))
    if problems:
        raise AnswerError(tuple(problems))
    return values


def check_value(field: Field, value: Any) -> FieldProblem | None:
    """Why `value` cannot be the answer to `field`, or None when it can (for per-field UI checks)."""
    return check_field_value(field, value)[1]


def check_field_value(f: Field, v: Any) -> tuple[Any, FieldProblem | None]:
    """(normalised value, None) or (None, problem)."""

    def bad(code: str, detail: str) -> tuple[Any, FieldProblem]:
        return None, FieldProblem(f.name, code, detail)

    if f.kind in ("string", "single_select"):
        if not isinstance(v, str):
            return bad("type", f"expected a string, got {_kind(v)}")
        v = str.__str__(v)  # a str subclass (a str-Enum member) becomes the plain string
        if f.kind == "single_select":
            return (v, None) if v in f.option_values else bad("not_an_option", "not one of the options")
        return _check_string(f, v)
    if f.kind in ("number", "integer"):
        return _check_number(f, v)
    if f.kind == "boolean":
        return (v, None) if isinstance(v, bool) else bad("type", f"expected a boolean, got {_kind(v)}")
    # multi_select
    if not isinstance(v, list | tuple):
        return bad("type", f"expected a list of strings, got {_kind(v)}")
    items: list[str] = []
    for i, item in enumerate(v):
        if not isinstance(item, str):
            return bad("type", f"item {i} is {_kind(item)}, not a string")
        items.append(str.__str__(item))
    options = set(f.option_values)
    if any(item not in options for item in items):
        return bad("not_an_option", "an item is not one of the options")
    if len(set(items)) != len(items):
        return bad("duplicate", "an item is selected twice")
    if f.min_items is not None and len(items) < f.min_items:
        return bad("too_few", f"{len(items)} items, at least {f.min_items} needed")
    if f.max_items is not None and len(items) > f.max_items:
        return bad("too_many", f"{len(items)} items, at most {f.max_items} allowed")
    return items, None


# A lone surrogate: "\ud800" parses from JSON but is no Unicode text (it cannot be encoded as
# UTF-8), so a tool would fail or corrupt whatever it writes it to.
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _chars(n: int) -> str:
    return "1 character" if n == 1 else f"{n} characters"


def _check_string(f: Field, v: str) -> tuple[Any, FieldProblem | None]:
    if not v.isascii() and _SURROGATE.search(v):
        return None, FieldProblem(f.name, "not_unicode", "a lone surrogate is not text")
    n = len(v)
    if f.min_length is not None and n < f.min_length:
        return None, FieldProblem(f.name, "too_short", f"{_chars(n)}, at least {f.min_length} needed")
    upper = limits.MAX_STRING_LENGTH if f.max_length is None else f.max_length
    if n > upper:
        return None, FieldProblem(f.name, "too_long", f"{_chars(n)}, at most {upper} allowed")
    if f.format is not None and not _FORMAT_CHECKS[f.format](v):
        if f.format == "date-time" and is_date_time(v + "Z"):
            # Only the zone is missing: say so, a bare "not valid" leaves the person guessing.
            detail = "a date-time needs a time zone: add Z for UTC or an offset such as +02:00"
            return None, FieldProblem(f.name, "format", detail)
        return None, FieldProblem(f.name, "format", f"not a valid {f.format}")
    return v, None


def _check_number(f: Field, v: Any) -> tuple[Any, FieldProblem | None]:
    def bad(code: str, detail: str) -> tuple[Any, FieldProblem]:
        return None, FieldProblem(f.name, code, detail)

    if isinstance(v, bool) or not isinstance(v, int | float):
        return bad("type", f"expected a number, got {_kind(v)}")
    if isinstance(v, float):
        if not math.isfinite(v):
            return bad("type", "not a finite number")
        v = float(v)
        if f.kind == "integer":
            if not v.is_integer():
                return bad("not_integer", "a whole number is needed")
            v = int(v)
    else:
        v = int(v)
        # JSON numbers are doubles to most peers; an int beyond a double's range (or one too long to
        # print, past Python's int-to-str digit limit) would break every consumer downstream.
        if abs(v) > sys.float_info.max:
            return bad("type", "number too large")
    if f.minimum is not None and v < f.minimum:
        return bad("below_minimum", f"at least {number(f.minimum)} needed")
    if f.maximum is not None and v > f.maximum:
        return bad("above_maximum", f"at most {number(f.maximum)} allowed")
    return v, None


def json_type(v: Any) -> str:
    """The JSON type name of a decoded value ("null", "boolean", "number", "string", "array",
    "object"), or its Python type name for anything JSON cannot hold."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list | tuple):
        return "array"
    if isinstance(v, Mapping):
        return "object"
    return type(v).__name__


_WITH_ARTICLE: Final = {
    "null": "null",
    "boolean": "a boolean",
    "number": "a number",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}


def _kind(v: Any) -> str:
    """A JSON-ish name for the type of `v`, for problem details (never the value: it may be huge)."""
    name = json_type(v)
    return _WITH_ARTICLE.get(name, name)


# -- formats ---------------------------------------------------------------------------------


def is_email(value: str) -> bool:
    """An addr-spec (no quoted local part, no address literal) whose domain has a dot; syntax only."""
    # Imported on first use: it compiles large regular expressions (~20 ms) that most forms never need.
    from email_validator import validate_email

    try:
        result = validate_email(value, check_deliverability=False, globally_deliverable=False)
    except ValueError:  # EmailNotValidError, and UnicodeError for lone surrogates
        return False
    labels = result.ascii_domain.split(".")
    return len(labels) >= 2 and not labels[-1].isdigit()


_PCT: Final = r"%[0-9A-Fa-f]{2}"
_UNRESERVED_SUB: Final = r"A-Za-z0-9\-._~!$&'()*+,;="
_URI: Final = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):"
    r"(?://(?P<authority>[^/?#]*))?"
    r"(?P<path>[^?#]*)"
    r"(?:\?(?P<query>[^#]*))?"
    r"(?:#(?P<fragment>.*))?",
    re.DOTALL,
)
_USERINFO: Final = re.compile(rf"(?:[{_UNRESERVED_SUB}:]|{_PCT})*")
_REG_NAME: Final = re.compile(rf"(?:[{_UNRESERVED_SUB}]|{_PCT})*")
_PATH: Final = re.compile(rf"(?:[{_UNRESERVED_SUB}:@/]|{_PCT})*")
_QUERY: Final = re.compile(rf"(?:[{_UNRESERVED_SUB}:@/?]|{_PCT})*")
_IPVFUTURE: Final = re.compile(rf"[vV][0-9A-Fa-f]+\.[{_UNRESERVED_SUB}:]+")
_PORT: Final = re.compile(r"[0-9]*")


def is_uri(value: str) -> bool:
    """An absolute URI per RFC 3986 (`scheme ":" hier-part [ "?" query ] [ "#" fragment ]`)."""
    m = _URI.fullmatch(value)
    if m is None:
        return False
    authority = m["authority"]
    if authority is not None and not _is_authority(authority):
        return False
    return (
        _PATH.fullmatch(m["path"]) is not None
        and (m["query"] is None or _QUERY.fullmatch(m["query"]) is not None)
        and (m["fragment"] is None or _QUERY.fullmatch(m["fragment"]) is not None)
    )


def _is_authority(authority: str) -> bool:
    userinfo, at, hostport = authority.rpartition("@")
    if at and _USERINFO.fullmatch(userinfo) is None:
        return False
    if hostport.startswith("["):
        literal, bracket, port = hostport[1:].partition("]")
        if not bracket or not (port == "" or (port.startswith(":") and _PORT.fullmatch(port[1:]))):
            return False
        if _IPVFUTURE.fullmatch(literal):
            return True
        if "%" in literal:  # zone ids are RFC 6874, not RFC 3986
            return False
        try:
            ipaddress.IPv6Address(literal)
        except ValueError:
            return False
        return True
    host, _, port = hostport.partition(":")
    return _REG_NAME.fullmatch(host) is not None and _PORT.fullmatch(port) is not None


_DATE: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATE_TIME: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:[Zz]|([+-])([0-9]{2}):([0-9]{2}))"
)


def parse_date(value: str) -> dt.date | None:
    """The date of a `YYYY-MM-DD` string naming a real calendar day, else None."""
    m = _DATE.fullmatch(value)
    if m is None:
        return None
    try:
        return dt.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None


def parse_date_time(value: str) -> dt.datetime | None:
    """The aware datetime of an RFC 3339 date-time, else None (fractions beyond microseconds cut)."""
    m = _DATE_TIME.fullmatch(value)
    if m is None:
        return None
    micro = int((m[7] or "0")[:6].ljust(6, "0"))
    offset = dt.timedelta(0)
    if m[8] is not None:
        oh, om = int(m[9]), int(m[10])
        if oh > 23 or om > 59:
            return None
        offset = dt.timedelta(hours=oh, minutes=om) * (-1 if m[8] == "-" else 1)
    try:
        return dt.datetime(
            int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), micro, dt.timezone(offset)
        )
    except ValueError:
        return None


def is_date(value: str) -> bool:
    return parse_date(value) is not None


def is_date_time(value: str) -> bool:
    return parse_date_time(value) is not None


_FORMAT_CHECKS: Final = {"email": is_email, "uri": is_uri, "date": is_date, "date-time": is_date_time}

"""Hypothesis strategies for forms, valid answers and arbitrary JSON (reusable by other tests)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from typing import Any

from hypothesis import strategies as st

from mcp_elicit.core.forms import FORMATS, MISSING, Field, Form, Option
from mcp_elicit.core.text import has_hidden_characters

# Field names: anything printable (control, format and line-break characters are refused by design),
# and names and option values without hidden characters (they travel back uncleaned: refused too).
names = st.text(st.characters(exclude_categories=("C", "Zl", "Zp")), min_size=1, max_size=24).filter(
    lambda name: not has_hidden_characters(name)
)
texts = st.text(max_size=40)
optional_texts = st.none() | texts
option_values = st.text(max_size=16).filter(lambda value: not has_hidden_characters(value))

_emails = st.from_regex(
    r"[a-z0-9]{1,10}(\.[a-z0-9+_-]{1,8})?@[a-z][a-z0-9-]{0,8}[a-z0-9]\.(com|org|io|de)", fullmatch=True
)
_uris = st.one_of(
    st.from_regex(
        r"https?://[a-z][a-z0-9.-]{0,15}(:[0-9]{1,5})?(/([a-zA-Z0-9._~!$&'()*+,;=:@-]|%[0-9A-F]{2}){0,8}){0,3}",
        fullmatch=True,
    ),
    st.from_regex(r"(urn|mailto|tel|x-app):[a-zA-Z0-9][a-zA-Z0-9._~:@/-]{0,20}", fullmatch=True),
    st.from_regex(
        r"https://\[(::1|2001:db8::7)\](/[a-z]{0,5})?(\?[a-z=&]{0,8})?(#[a-z]{0,5})?", fullmatch=True
    ),
)
_dates = st.dates().map(dt.date.isoformat)
_offsets = st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59).map(
    lambda m: dt.timezone(dt.timedelta(minutes=m))
)
_date_times = st.builds(
    lambda d, tz, z: d.replace(tzinfo=tz).isoformat().replace("+00:00", "Z" if z else "+00:00"),
    st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)),
    _offsets,
    st.booleans(),
)
FORMAT_VALUES: dict[str, st.SearchStrategy[str]] = {
    "email": _emails,
    "uri": _uris,
    "date": _dates,
    "date-time": _date_times,
}


@st.composite
def _bounds(draw: st.DrawFn, integer: bool) -> tuple[Any, Any]:
    whole = st.integers(min_value=-(10**6), max_value=10**6)
    number = whole | st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
    lo = draw(st.none() | (whole if integer else number))
    hi = draw(st.none() | (whole if integer else number))
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    return lo, hi


@st.composite
def fields(draw: st.DrawFn, kinds: tuple[str, ...] | None = None, name: str | None = None) -> Field:
    """A valid Field of any kind, sometimes with a default drawn from its own valid values."""
    kind = draw(
        st.sampled_from(kinds or ("string", "number", "integer", "boolean", "single_select", "multi_select"))
    )
    base: dict[str, Any] = {
        "name": name if name is not None else draw(names),
        "kind": kind,
        "required": draw(st.booleans()),
        "title": draw(optional_texts),
        "description": draw(optional_texts),
    }
    if kind == "string":
        fmt = draw(st.none() | st.sampled_from(FORMATS))
        base["format"] = fmt
        if fmt is None:
            lo = draw(st.none() | st.integers(0, 10))
            hi = draw(st.none() | st.integers(lo or 0, 60))
            base["min_length"], base["max_length"] = lo, hi
    elif kind in ("number", "integer"):
        base["minimum"], base["maximum"] = draw(_bounds(kind == "integer"))
    elif kind in ("single_select", "multi_select"):
        values = draw(st.lists(option_values, min_size=1, max_size=8, unique=True))
        titled = draw(st.booleans())
        base["options"] = tuple(Option(v, draw(texts) if titled else None) for v in values)
        base["titled"] = titled
        if kind == "multi_select":
            lo = draw(st.none() | st.integers(0, len(values)))
            hi = draw(st.none() | st.integers(lo or 0, len(values) + 2))
            base["min_items"], base["max_items"] = lo, hi
        elif titled:
            base["legacy_enum_names"] = draw(st.booleans())
    field = Field(**base)
    if draw(st.booleans()):
        field = dataclasses.replace(field, default=draw(values_for(field)))
    return field


def values_for(f: Field) -> st.SearchStrategy[Any]:
    """Valid answers for `f`, JSON-typed (what a client would send)."""
    if f.kind == "string":
        if f.format is not None:
            return FORMAT_VALUES[f.format]
        return st.text(min_size=f.min_length or 0, max_size=f.max_length if f.max_length is not None else 40)
    if f.kind == "boolean":
        return st.booleans()
    if f.kind == "integer":
        lo = None if f.minimum is None else math.ceil(f.minimum)
        hi = None if f.maximum is None else math.floor(f.maximum)
        return st.integers(min_value=lo, max_value=hi)
    if f.kind == "number":
        # `+ 0.0` turns a -0.0 bound into 0.0: hypothesis orders -0.0 below 0.0, so [0, -0.0] is empty.
        fmin = None if f.minimum is None else float(f.minimum) + 0.0
        fmax = None if f.maximum is None else float(f.maximum) + 0.0
        floats = st.floats(min_value=fmin, max_value=fmax, allow_nan=False, allow_infinity=False)
        lo = None if f.minimum is None else math.ceil(f.minimum)
        hi = None if f.maximum is None else math.floor(f.maximum)
        if lo is not None and hi is not None and lo > hi:
            return floats
        return st.integers(min_value=lo, max_value=hi) | floats
    values = list(f.option_values)
    if f.kind == "single_select":
        return st.sampled_from(values)
    return st.lists(
        st.sampled_from(values),
        unique=True,
        min_size=f.min_items or 0,
        max_size=min(len(values), f.max_items if f.max_items is not None else len(values)),
    )


@st.composite
def forms(draw: st.DrawFn, max_fields: int = 6, kinds: tuple[str, ...] | None = None) -> Form:
    field_names = draw(st.lists(names, max_size=max_fields, unique=True))
    return Form(tuple(draw(fields(kinds, name=n)) for n in field_names))


@st.composite
def answers(draw: st.DrawFn, form: Form) -> dict[str, Any]:
    """Valid content for `form`: every required field, some optional ones."""
    content: dict[str, Any] = {}
    for f in form.fields:
        if f.required or draw(st.booleans()):
            content[f.name] = draw(values_for(f))
    return content


def expected_values(form: Form, content: dict[str, Any]) -> dict[str, Any]:
    """What validate_content should return for valid `content`: defaults filled in, form order."""
    out: dict[str, Any] = {}
    for f in form.fields:
        if f.name in content:
            out[f.name] = content[f.name]
        elif f.default is not MISSING:
            out[f.name] = list(f.default) if f.kind == "multi_select" else f.default
    return out


json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=30,
)

# Schemas that are almost right: real keywords with arbitrary values, to reach the deep checks.
_keywords = st.sampled_from(
    [
        "type",
        "title",
        "description",
        "default",
        "format",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "enum",
        "enumNames",
        "oneOf",
        "anyOf",
        "items",
        "minItems",
        "maxItems",
        "const",
        "pattern",
        "$ref",
    ]
)
_type_values = (
    st.sampled_from(["string", "number", "integer", "boolean", "array", "object", "null"]) | json_values
)
_field_like = st.dictionaries(_keywords, json_values | _type_values, max_size=6)
near_schemas = st.fixed_dictionaries(
    {"type": st.just("object") | json_values, "properties": st.dictionaries(names, _field_like, max_size=4)},
    optional={
        "required": st.lists(names | json_values, max_size=4),
        "$schema": json_values,
        "extra": json_values,
    },
)

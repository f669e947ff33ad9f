"""Words every UI uses the same way: what a field expects, what a question is for, and how a
number is written and read. Raw text: each UI escapes or cleans it for its own medium."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from mcp_elicit.client.ui_protocol import Purpose
from mcp_elicit.core.forms import Field
from mcp_elicit.core.ranges import number, span

__all__ = [
    "MAX_ARGUMENTS_CHARS",
    "answer_text",
    "cut",
    "field_hint",
    "number",
    "picked",
    "purpose_text",
    "read_number",
    "span",
]

# Characters of a call's arguments shown with its purpose ("For: tool deploy {...}").
MAX_ARGUMENTS_CHARS: Final = 300
_INTEGER_RE: Final = re.compile(r"[+-]?[0-9]+")
_VERBS: Final = {"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource"}


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def field_hint(f: Field, format_hints: Mapping[str, str], choose_one: str) -> str | None:
    """What a field expects, with its bounds; None for a multi-select (each UI words how to pick
    several its own way). `format_hints` words each string format for the UI's own input, and
    `choose_one` how a single select is answered there."""
    if f.kind == "string":
        chars = span(f.min_length, f.max_length)
        what = format_hints[f.format] if f.format else "text"
        if chars is None:
            return what
        return f"{what}, {chars} character{'' if chars.endswith(('least 1', 'most 1')) else 's'}"
    if f.kind in ("number", "integer"):
        what = "a whole number" if f.kind == "integer" else "a number"
        low = None if f.minimum is None else number(f.minimum)
        high = None if f.maximum is None else number(f.maximum)
        bounds = span(low, high)
        if bounds is None:
            return what
        return f"{what} from {bounds}" if low is not None and high is not None else f"{what}, {bounds}"
    if f.kind == "boolean":
        return "yes or no"
    if f.kind == "single_select":
        return choose_one
    return None


def picked(f: Field, value: Any) -> list[Any]:
    """The values a select's answer picks (one for a single select)."""
    return list(value) if f.kind == "multi_select" and isinstance(value, list | tuple) else [value]


def answer_text(f: Field, value: Any, clean: Callable[[str], str]) -> str:
    """An answer as the person reads it: yes/no, numbers as written, option titles ("none" for no
    option); `clean` makes the server's text safe for the UI's medium."""
    if f.kind == "boolean":
        return "yes" if value else "no"
    if f.kind in ("number", "integer") and isinstance(value, int | float):
        return number(value)
    if f.kind in ("single_select", "multi_select"):
        titles = {o.value: o.title or o.value for o in f.options}
        return ", ".join(clean(titles.get(v, str(v))) for v in picked(f, value)) or "none"
    return clean(str(value))


def read_number(text: str) -> tuple[int | float | None, str | None]:
    """(the number typed, None), an int when it is written as one, or (None, why it is not a
    finite number)."""
    if _INTEGER_RE.fullmatch(text):
        return int(text), None
    try:
        value = float(text)
    except ValueError:
        return None, "not a number"
    return (value, None) if math.isfinite(value) else (None, "not a finite number")


def purpose_text(purpose: Purpose) -> str:
    """What the question serves: "tool deploy {"service": "api"}" (arguments cut to
    MAX_ARGUMENTS_CHARS), or that it is not known."""
    if purpose.method is None and purpose.target is None:
        return "not known: the server asked outside any request of yours"
    verb = _VERBS.get(purpose.method or "", purpose.method or "request")
    text = f"{verb} {purpose.target}" if purpose.target else verb
    if purpose.arguments:
        try:
            args = json.dumps(dict(purpose.arguments), ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            args = str(dict(purpose.arguments))
        text += " " + cut(args, MAX_ARGUMENTS_CHARS)
    return text

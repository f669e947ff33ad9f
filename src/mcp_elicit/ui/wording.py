"""Words every UI uses the same way: what a text or number field expects, what a question is for,
and how a number is written. Raw text: each UI escapes or cleans it for its own medium."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from mcp_elicit.client.ui_protocol import Purpose
from mcp_elicit.core.forms import Field

__all__ = ["MAX_ARGUMENTS_CHARS", "bounds_hint", "cut", "number", "purpose_text"]

# Characters of a call's arguments shown with its purpose ("For: tool deploy {...}").
MAX_ARGUMENTS_CHARS: Final = 300
_VERBS: Final = {"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource"}


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def number(x: int | float) -> str:
    """3.0 as "3", 2.5 as "2.5"."""
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def bounds_hint(f: Field, format_hints: Mapping[str, str]) -> str | None:
    """What a string or number field expects, with its bounds; None for other kinds (each UI words
    choices its own way). `format_hints` words each string format for the UI's own input."""
    if f.kind == "string":
        parts = [format_hints[f.format] if f.format else "text"]
        if f.min_length is not None and f.max_length is not None:
            parts.append(f"{f.min_length} to {f.max_length} characters")
        elif f.min_length is not None:
            parts.append(f"at least {f.min_length} characters")
        elif f.max_length is not None:
            parts.append(f"at most {f.max_length} characters")
        return ", ".join(parts)
    if f.kind in ("number", "integer"):
        what = "a whole number" if f.kind == "integer" else "a number"
        if f.minimum is not None and f.maximum is not None:
            return f"{what} from {number(f.minimum)} to {number(f.maximum)}"
        if f.minimum is not None:
            return f"{what}, at least {number(f.minimum)}"
        if f.maximum is not None:
            return f"{what}, at most {number(f.maximum)}"
        return what
    return None


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

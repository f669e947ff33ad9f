"""How the terminal UI shows a field's value and hint, and reads an answer typed for it (pure helpers)."""

from __future__ import annotations

import re
from typing import Any, Final

from mcp_elicit.core.forms import Field
from mcp_elicit.ui.terminal_input import plain
from mcp_elicit.ui.wording import answer_text, cut, field_hint, number, picked, read_number, span

__all__ = ["cut", "hint", "number", "option", "parse", "shown"]

_HINTS: Final = {
    "email": "an email address, like name@example.org",
    "uri": "an absolute URI, like https://example.org/page",
    "date": "a date, YYYY-MM-DD",
    "date-time": "a date and time, YYYY-MM-DDTHH:MM:SSZ (or an offset such as +02:00)",
}
_YES: Final = frozenset({"y", "yes", "true", "1"})
_NO: Final = frozenset({"n", "no", "false", "0"})


def hint(f: Field) -> str:
    words = field_hint(f, _HINTS, "choose one by number")
    if words is not None:
        return words
    bounds = span(f.min_items, f.max_items)
    none = "" if f.min_items else " (:none for none)"
    return f"a number toggles it, a list such as 1,3 sets them{f' ({bounds})' if bounds else ''}{none}"


def shown(f: Field, value: Any, numbered: bool = False) -> str:
    """A value as the person reads it: titles (or, `numbered`, numbers) for options, yes/no for booleans."""
    if numbered and f.kind in ("single_select", "multi_select"):
        index = {o.value: str(i) for i, o in enumerate(f.options, 1)}
        return ",".join(index.get(v, plain(str(v))) for v in picked(f, value)) or "none"
    return answer_text(f, value, plain)


def parse(f: Field, line: str, current: Any = None) -> tuple[Any, str | None]:
    """(value, None) or (None, why the line is not an answer to `f`). In a multi-select one option
    toggles it in `current` (the selection shown), a list of them replaces the selection."""
    if f.kind == "string":
        return line, None
    if f.kind in ("number", "integer"):
        return read_number(line)
    if f.kind == "boolean":
        word = line.lower()
        if word in _YES:
            return True, None
        if word in _NO:
            return False, None
        return None, "answer y or n"
    if f.kind == "single_select":
        return option(f, line)
    if line == ":none":
        return [], None
    tokens = [t for t in re.split(r"[,\s]+", line) if t]
    if len(tokens) == 1 and isinstance(current, list | tuple):
        value, problem = option(f, tokens[0])
        if problem is not None:
            return None, problem
        chosen = list(current)
        return ([v for v in chosen if v != value] if value in chosen else [*chosen, value]), None
    picked: list[str] = []
    for token in tokens:
        if token:
            value, problem = option(f, token)
            if problem is not None:
                return None, problem
            if value not in picked:
                picked.append(value)
    return picked, None


def option(f: Field, token: str) -> tuple[Any, str | None]:
    """An option by its number, its exact value or its title (any case)."""
    if token.isdigit():
        i = int(token)
        if 1 <= i <= len(f.options):
            return f.options[i - 1].value, None
        return None, f"{token} is not a number from 1 to {len(f.options)}"
    if token in f.option_values:
        return token, None
    folded = token.casefold()
    titled = [o.value for o in f.options if o.title and o.title.casefold() == folded]
    if len(titled) == 1:
        return titled[0], None
    return None, f"{plain(cut(token, 40))} is not one of the options"

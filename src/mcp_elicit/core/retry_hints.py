"""The hint a question carries when it is asked again after an invalid answer (M4).

`retry_message(message, form, problems)` puts one short line before the question's own message:
which fields were wrong and what each expects, e.g. "Your last answer was not accepted. How many
(quantity): a whole number from 1 to 10." Pure: no I/O.

Built from the form's own declarations (titles, names, kinds, bounds) and the problem codes only,
never from the answer: the invalid value is not repeated, whatever the field. It may be a secret
typed into the wrong field, and it is text the other side wrote. An unknown key the answer held is
not named either, for the same reason. At most `MAX_HINT_FIELDS` fields are named and the line is
at most `MAX_RETRY_HINT_CHARS` characters; when the message and the hint together would pass
`MAX_MESSAGE_CHARS`, the question goes out again without the hint.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from mcp_elicit.core.form_model import Field, Form
from mcp_elicit.core.limits import MAX_MESSAGE_CHARS
from mcp_elicit.core.ranges import number, span
from mcp_elicit.errors import FieldProblem

__all__ = ["MAX_HINT_FIELDS", "MAX_RETRY_HINT_CHARS", "retry_hint", "retry_message"]

MAX_HINT_FIELDS: Final = 3
MAX_RETRY_HINT_CHARS: Final = 400

_HEAD: Final = "Your last answer was not accepted."
_FORMATS: Final = {
    "email": "an email address",
    "uri": "an absolute URI (with a scheme, such as https:)",
    "date": "a date (YYYY-MM-DD)",
    "date-time": "a date and time (such as 2026-01-31T09:00:00Z)",
}


def retry_message(message: str, form: Form, problems: Iterable[FieldProblem]) -> str:
    """`message` with the hint before it, or `message` as it is when the two would be too long."""
    hint = retry_hint(form, problems)
    joined = f"{hint}\n\n{message}" if message else hint
    return joined if len(joined) <= MAX_MESSAGE_CHARS else message


def retry_hint(form: Form, problems: Iterable[FieldProblem]) -> str:
    """One line: which fields were wrong and what each expects (never the value that was sent)."""
    parts: dict[str, str] = {}  # the first problem of each field (or kind of problem), in order
    for problem in problems:
        part = _part(form, problem)
        if part is not None:
            parts.setdefault(part[0], part[1])
    shown = list(parts.values())[:MAX_HINT_FIELDS]
    line = _HEAD
    for i, text in enumerate(shown):
        more = " (and more)" if len(parts) > len(shown) and i == len(shown) - 1 else ""
        longer = f"{line} {text}{more}."
        if len(longer) > MAX_RETRY_HINT_CHARS:
            break
        line = longer
    return line


def _part(form: Form, problem: FieldProblem) -> tuple[str, str] | None:
    """(what the part is about, the part) for one problem; None for a field the form lacks."""
    if problem.code == "unknown_field":  # the key is the other side's text: not repeated
        return "unknown", "Only the form's own fields can be answered"
    if not problem.field:
        return "", "Fill in the form, or decline it"
    if problem.field not in form.names:
        return None
    f = form.field(problem.field)
    label = f"{f.title} ({f.name})" if f.title and f.title != f.name else f.name
    if problem.code == "missing":
        return f.name, f"{label}: a value is required"
    return f.name, f"{label}: {expectation(f)}"


def expectation(f: Field) -> str:
    """What the field takes, in words, from its declaration."""
    if f.kind == "string":
        what = _FORMATS.get(f.format or "", "text")
        return what + _between(f.min_length, f.max_length, "characters")
    if f.kind in ("integer", "number"):
        what = "a whole number" if f.kind == "integer" else "a number"
        return what + _range(f.minimum, f.maximum)
    if f.kind == "boolean":
        return "yes or no"
    if f.kind == "single_select":
        return "one of the listed options"
    return "a choice among the listed options, each at most once" + _between(
        f.min_items, f.max_items, "items"
    )


def _between(low: int | None, high: int | None, unit: str) -> str:
    words = span(low, high)
    return "" if words is None else f" of {words} {unit}"


def _range(low: float | None, high: float | None) -> str:
    words = span(*(None if v is None else number(v) for v in (low, high)))
    if words is None:
        return ""
    return f" {'from' if low is not None and high is not None else 'of'} {words}"

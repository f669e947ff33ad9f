"""Form fields as HTML inputs, and what a submitted HTML form means for each field (no I/O).

Every field shape of the spec gets a native, labelled input:

=============================  =============================================================
field                          input
=============================  =============================================================
string                         ``text`` (``email``, ``url``, ``date`` for those formats)
string, format date-time       ``datetime-local`` in this machine's time zone; sent with its
                               offset (the page and the client run on the same machine)
number / integer               ``number`` with ``min``/``max`` and ``step`` (``any`` or 1)
boolean                        two radio buttons, yes and no (plus "no answer" last when optional)
single select                  radio buttons up to `MAX_RADIO_OPTIONS` ("no answer" last when
                               optional), a ``select`` above (its empty choice first)
multi select                   one checkbox per option
=============================  =============================================================

The page submits with ``novalidate``: the browser's own checks would stop a submit with no
message the server chose; every check is here, against the same rules as the client pipeline
(`core.answers.check_value`), and each problem is shown next to its field.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp_elicit.client.ui_protocol import Purpose, Requester
from mcp_elicit.core.answers import check_value
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.core.text import clean_text
from mcp_elicit.ui import wording
from mcp_elicit.ui.wording import field_hint, number, read_number, span

__all__ = [
    "MAX_RADIO_OPTIONS",
    "MAX_SHOWN_CHARS",
    "FieldView",
    "field_views",
    "hint",
    "parse_submission",
    "purpose_text",
    "requester_text",
    "shown_value",
    "visible",
]

# Options of a single select shown as radio buttons; more become a drop-down list, which a
# keyboard and a screen reader handle better than a long column of radios.
MAX_RADIO_OPTIONS: Final = 8

# Characters of any one server-supplied string rendered on a page (a second bound after the
# pipeline's own limits; the longest of those is MAX_STRING_LENGTH for an answer).
MAX_SHOWN_CHARS: Final = 70_000

# Characters of a tool call's arguments shown in the "For" line (as in the terminal UI).

_INPUT_TYPES: Final = {"email": "email", "uri": "url", "date": "date", "date-time": "datetime-local"}
_FORMAT_HINTS: Final = {
    "email": "an email address, like name@example.org",
    "uri": "an absolute URI, like https://example.org/page",
    "date": "a date",
    "date-time": "a date and time, in this computer's time zone",
}
NO_ANSWER: Final = "__no_answer__"  # value of the "no answer" choice of an optional radio group


def visible(text: object) -> str:
    """Server text made safe to show (idempotent with the pipeline's own cleaning); HTML escaping
    is the template engine's job, this only makes controls and bidi characters visible."""
    return clean_text(str(text), limit=MAX_SHOWN_CHARS, multiline=True, defang=False)


def hint(f: Field) -> str:
    """What the field expects, in words (shown under the label, tied to the input)."""
    words = field_hint(f, _FORMAT_HINTS, "choose one")
    return words if words is not None else f"choose {span(f.min_items, f.max_items) or 'any'}"


@dataclass(frozen=True, slots=True)
class Choice:
    value: str
    label: str
    checked: bool


@dataclass(frozen=True, slots=True)
class FieldView:
    """One field as the template draws it; every string is already made visible."""

    name: str
    id: str
    label: str
    description: str
    hint: str
    required: bool
    widget: str  # input, radios, select, checkboxes
    input_type: str
    value: str
    choices: tuple[Choice, ...]
    attrs: tuple[tuple[str, str], ...]
    error: str


def _local_input(value: str) -> str:
    """An RFC 3339 date-time as a datetime-local value in this machine's zone ("" if unreadable)."""
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return ""
    if moment.tzinfo is not None:
        moment = moment.astimezone().replace(tzinfo=None)
    return moment.isoformat(timespec="seconds")


def field_views(form: Form, values: Mapping[str, Any], errors: Mapping[str, str]) -> list[FieldView]:
    views = []
    for i, f in enumerate(form.fields):
        current = values.get(f.name)
        attrs: list[tuple[str, str]] = []
        widget, input_type, value = "input", "text", ""
        choices: tuple[Choice, ...] = ()
        if f.kind == "string":
            input_type = _INPUT_TYPES.get(f.format or "", "text")
            value = "" if current is None else str(current)
            if f.format == "date-time":
                value = _local_input(value) if value else ""
                if value and not value.endswith(":00"):
                    # Seconds only when the value has some: a seconds box left empty (a person
                    # types hours and minutes) makes the browser send nothing at all.
                    attrs.append(("step", "1"))
            if f.min_length is not None:
                attrs.append(("minlength", str(f.min_length)))
            if f.max_length is not None:
                attrs.append(("maxlength", str(f.max_length)))
        elif f.kind in ("number", "integer"):
            input_type = "number"
            value = "" if current is None else current if isinstance(current, str) else number(current)
            attrs.append(("step", "1" if f.kind == "integer" else "any"))
            if f.minimum is not None:
                attrs.append(("min", number(f.minimum)))
            if f.maximum is not None:
                attrs.append(("max", number(f.maximum)))
        elif f.kind == "boolean":
            widget = "radios"
            choices = (Choice("yes", "Yes", current is True), Choice("no", "No", current is False))
            if not f.required:
                choices += (Choice(NO_ANSWER, "No answer", current is None),)
        elif f.kind == "single_select":
            widget = "radios" if len(f.options) <= MAX_RADIO_OPTIONS else "select"
            choices = tuple(
                Choice(o.value, visible(o.title or o.value), o.value == current) for o in f.options
            )
            if widget == "select" and (not f.required or current is None):
                # A drop-down's empty choice comes first, where a drop-down shows it when closed.
                first = "No answer" if not f.required else "Choose…"
                choices = (Choice(NO_ANSWER, first, current is None), *choices)
            elif not f.required:  # radios: "No answer" last, as for yes/no
                choices += (Choice(NO_ANSWER, "No answer", current is None),)
        else:
            widget = "checkboxes"
            picked = set(current or ())
            choices = tuple(
                Choice(o.value, visible(o.title or o.value), o.value in picked) for o in f.options
            )
        views.append(
            FieldView(
                name=f.name,
                id=f"field-{i}",
                label=visible(f.title or f.name),
                description=visible(f.description or ""),
                hint=hint(f),
                required=f.required,
                widget=widget,
                input_type=input_type,
                value=value,
                choices=choices,
                attrs=tuple(attrs),
                error=visible(errors.get(f.name, "")),
            )
        )
    return views


def _parse(f: Field, raw: list[str]) -> tuple[Any, str | None, bool]:
    """(value, problem, present): `present` False means the field was left empty."""
    if f.kind == "multi_select":
        if not raw:
            return None, None, False
        return list(dict.fromkeys(raw)), None, True
    text = raw[0] if raw else ""
    if f.kind in ("boolean", "single_select") and text == NO_ANSWER:
        return None, None, False
    if text == "":
        return None, None, False
    if f.kind == "string":
        if f.format == "date-time":
            try:
                moment = dt.datetime.fromisoformat(text)
            except ValueError:
                return None, "not a date and time", True
            if moment.tzinfo is None:
                local = moment.astimezone()  # the page runs on this machine: its zone is the person's
                if local.replace(tzinfo=None) != moment:  # the clocks skip it (a daylight saving gap)
                    return None, "this time does not exist here on that day (the clocks go forward)", True
                moment = local
            return moment.isoformat(timespec="seconds"), None, True
        return text, None, True
    if f.kind in ("number", "integer"):
        return (*read_number(text), True)
    if f.kind == "boolean":
        if text in ("yes", "no"):
            return text == "yes", None, True
        return None, "choose yes or no", True
    return text, None, True


def _unreadable(f: Field) -> str:
    """Why a field the browser could not read (it sends it empty) has no answer."""
    if f.kind in ("number", "integer"):
        return "not a number"
    return {"date": "not a complete date", "date-time": "not a complete date and time"}.get(
        f.format or "", "not readable"
    )


def parse_submission(
    form: Form, submitted: Mapping[str, list[str]], unreadable: Collection[str] = ()
) -> tuple[dict[str, Any], dict[str, str]]:
    """The answers in a submitted HTML form and, per field, why its answer cannot be sent.

    Every field is read (a problem in one does not hide the others); an empty optional field is
    left out of the answers, an empty required one is a problem. `unreadable` names the fields
    the page's script saw typed in but the browser could not read ("1e" in a number, a date
    half typed): the browser sends them empty, and they are a problem, not "no answer".
    """
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for f in form.fields:
        value, problem, present = _parse(f, submitted.get(f.name, []))
        if not present and f.name in unreadable:
            errors[f.name] = _unreadable(f)
            continue
        if not present:
            if f.required and f.kind == "multi_select":
                value, present = [], True  # no box ticked is the answer "none of these"
            elif f.required:
                errors[f.name] = "an answer is needed here"
                continue
            else:
                continue
        if problem is None:
            checked = check_value(f, value)
            problem = None if checked is None else checked.detail or checked.code
        if problem is not None:
            errors[f.name] = problem
        else:
            values[f.name] = value
    return values, errors


def shown_value(f: Field, value: Any) -> str:
    """An answer as the person reads it on the review step: titles for options, yes/no."""
    return wording.answer_text(f, value, visible)


def requester_text(requester: Requester) -> str:
    name = visible(requester.name) or "(unnamed server)"
    if requester.title and requester.title != requester.name:
        version = f" {visible(requester.version)}" if requester.version else ""
        return f"{visible(requester.title)} ({name}{version})"
    return name + (f" {visible(requester.version)}" if requester.version else "")


def purpose_text(purpose: Purpose) -> str:
    return visible(wording.purpose_text(purpose))

"""Lone surrogates in string answers are refused, for Form, dataclass and TypedDict forms alike."""

from __future__ import annotations

import dataclasses
from typing import TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.core.forms import Field, Form, form_of
from mcp_elicit.errors import AnswerError


@dataclasses.dataclass
class NoteDC:
    note: str


class NoteTD(TypedDict):
    note: str


FORMS = {
    "Form": Form((Field.string("note"),)),
    "dataclass": form_of(NoteDC),
    "TypedDict": form_of(NoteTD),
}

surrogates = st.integers(0xD800, 0xDFFF).map(chr)
text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=20)


@pytest.mark.parametrize("kind", list(FORMS))
@given(before=text, lone=surrogates, after=text)
def test_a_string_with_a_lone_surrogate_is_refused(kind: str, before: str, lone: str, after: str) -> None:
    with pytest.raises(AnswerError) as info:
        FORMS[kind].parse({"note": before + lone + after})
    assert [(p.field, p.code) for p in info.value.problems] == [("note", "not_unicode")]


@pytest.mark.parametrize("kind", list(FORMS))
@given(value=text)
def test_any_text_without_surrogates_is_accepted(kind: str, value: str) -> None:
    parsed = FORMS[kind].parse({"note": value})
    got = parsed["note"] if isinstance(parsed, dict) else parsed.note
    assert got == value

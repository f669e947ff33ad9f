"""What a submitted HTML form means for each field (no browser needed)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.core.answers import check_value
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.ui.browser.fields import MAX_RADIO_OPTIONS, NO_ANSWER, field_views, parse_submission

FORM = Form(
    (
        Field.string("s", min_length=1, max_length=5),
        Field.string("e", format="email", required=False),
        Field.string("d", format="date", required=False),
        Field.string("t", format="date-time", required=False),
        Field.integer("i", minimum=0, maximum=9),
        Field.number("n", required=False),
        Field.boolean("b", required=False),
        Field.single_select("one", ["x", "y"], required=False),
        Field.multi_select("many", ["x", "y", "z"], max_items=2),
    )
)

submissions = st.dictionaries(
    st.sampled_from(FORM.names),
    st.lists(
        st.one_of(st.text(max_size=12), st.sampled_from(["yes", "no", "x", "y", "1", "1e999", NO_ANSWER])),
        max_size=3,
    ),
)


@given(submissions)
def test_any_submission_parses_to_valid_answers_or_a_problem_per_field(
    submitted: dict[str, list[str]],
) -> None:
    values, errors = parse_submission(FORM, submitted)
    assert set(values).isdisjoint(errors)
    for name, value in values.items():
        assert check_value(FORM.field(name), value) is None
    for f in FORM.fields:
        if f.required and f.kind != "multi_select":
            assert f.name in values or f.name in errors
    if not errors:
        FORM.validate(values)  # what would be sent satisfies the whole form


@given(submissions)
def test_the_form_can_always_be_drawn_again_with_what_was_typed(submitted: dict[str, list[str]]) -> None:
    values, errors = parse_submission(FORM, submitted)
    shown = {**values, **{k: v[0] for k, v in submitted.items() if k in errors and v}}
    views = field_views(FORM, shown, errors)
    assert [v.name for v in views] == list(FORM.names)
    assert {v.name for v in views if v.error} == set(errors)


def test_an_empty_optional_field_is_left_out_and_an_empty_required_one_is_a_problem() -> None:
    values, errors = parse_submission(FORM, {"s": [""], "i": ["3"], "b": [NO_ANSWER], "many": []})
    assert values == {"i": 3, "many": []}
    assert set(errors) == {"s"}


def test_no_answer_comes_last_in_every_radio_group_and_first_in_a_drop_down() -> None:
    many = [f"o{i}" for i in range(MAX_RADIO_OPTIONS + 1)]
    form = Form(
        (
            Field.boolean("b", required=False),
            Field.single_select("one", ["x", "y"], required=False),
            Field.single_select("long", many, required=False),
        )
    )
    yes_no, radios, drop_down = field_views(form, {}, {})
    assert [c.label for c in yes_no.choices] == ["Yes", "No", "No answer"]
    assert [c.label for c in radios.choices] == ["x", "y", "No answer"]
    assert [c.label for c in drop_down.choices] == ["No answer", *many]


def test_a_length_of_one_is_one_character() -> None:
    form = Form((Field.string("s", min_length=2, max_length=9), Field.string("c", max_length=1)))
    _, errors = parse_submission(form, {"s": ["a"], "c": ["ab"]})
    assert errors["s"].startswith("1 character,")
    assert field_views(form, {}, {})[1].hint == "text, at most 1 character"


def test_a_local_date_time_is_sent_with_this_machines_offset() -> None:
    values, errors = parse_submission(FORM, {"s": ["a"], "i": ["1"], "t": ["2026-03-01T09:30"]})
    assert errors == {}
    assert values["t"].startswith("2026-03-01T09:30:00")
    assert values["t"][19:] != ""


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This machine's zone as America/New_York (clocks go forward at 02:00 on 2026-03-08)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_local_time_the_clocks_skip_is_a_problem_not_another_hour(new_york: None) -> None:
    values, errors = parse_submission(FORM, {"s": ["a"], "i": ["1"], "t": ["2026-03-08T02:30"]})
    assert set(errors) == {"t"}
    assert "t" not in values
    values, errors = parse_submission(FORM, {"s": ["a"], "i": ["1"], "t": ["2026-03-08T03:30"]})
    assert values["t"] == "2026-03-08T03:30:00-04:00"


def test_a_field_the_browser_could_not_read_is_a_problem_even_when_optional() -> None:
    values, errors = parse_submission(FORM, {"s": ["a"], "i": [""], "n": [""]}, unreadable={"i", "n"})
    assert set(errors) == {"i", "n"}
    assert errors["i"] != parse_submission(FORM, {"s": ["a"], "i": [""]})[1]["i"]  # not "needed"
    assert "n" not in values

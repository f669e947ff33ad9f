"""Answer validation (F3, F7): types, bounds, options, formats, defaults, and the problem codes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_elicit.core import answers, limits
from mcp_elicit.core.answers import (
    CODES,
    check_value,
    is_date,
    is_date_time,
    is_email,
    is_uri,
    parse_date_time,
    validate_content,
)
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.errors import AnswerError
from tests.core.strategies import answers as answer_strategy
from tests.core.strategies import expected_values, forms

S = Field.string("s", min_length=2, max_length=4)
N = Field.number("n", minimum=-1, maximum=1.5)
I = Field.integer("i", minimum=0, maximum=10)  # noqa: E741
B = Field.boolean("b")
SEL = Field.single_select("c", [("r", "Red"), ("g", "Green")])
MUL = Field.multi_select("m", ["a", "b", "c"], min_items=1, max_items=2)
EMAIL = Field.string("e", format="email")
URI = Field.string("u", format="uri")
DATE = Field.string("d", format="date")
DATETIME = Field.string("t", format="date-time")

BAD_VALUES = [
    # (id, field, value, code)
    ("number for a string", S, 12, "type"),
    ("null for a string", S, None, "type"),
    ("short string", S, "a", "too_short"),
    ("long string", S, "abcde", "too_long"),
    ("string for a number", N, "1", "type"),
    ("bool for a number", N, True, "type"),
    ("NaN", N, float("nan"), "type"),
    ("infinity", N, float("inf"), "type"),
    ("an int no float can hold", N, 10**400, "type"),
    ("below minimum", N, -1.5, "below_minimum"),
    ("above maximum", N, 1.51, "above_maximum"),
    ("fraction for an integer", I, 2.5, "not_integer"),
    ("an int too long to print for an integer", I, 10**5000, "type"),
    ("bool for an integer", I, False, "type"),
    ("integer below minimum", I, -1, "below_minimum"),
    ("integer above maximum", I, 11, "above_maximum"),
    ("string for a boolean", B, "true", "type"),
    ("number for a boolean", B, 1, "type"),
    ("not an option", SEL, "Red", "not_an_option"),
    ("list for a single select", SEL, ["r"], "type"),
    ("string for a multi select", MUL, "a", "type"),
    ("number item", MUL, ["a", 1], "type"),
    ("unknown item", MUL, ["a", "z"], "not_an_option"),
    ("duplicate item", MUL, ["a", "a"], "duplicate"),
    ("too few items", MUL, [], "too_few"),
    ("too many items", MUL, ["a", "b", "c"], "too_many"),
    ("no email", EMAIL, "not-an-email", "format"),
    ("no uri", URI, "example.com/path", "format"),
    ("no date", DATE, "2023-02-29", "format"),
    ("no date-time", DATETIME, "2023-01-01T10:00:00", "format"),
]


@pytest.mark.parametrize(
    ("field", "value", "code"), [b[1:] for b in BAD_VALUES], ids=[b[0] for b in BAD_VALUES]
)
def test_a_bad_value_is_refused_with_its_stable_code(field: Field, value: Any, code: str) -> None:
    assert code in CODES
    with pytest.raises(AnswerError) as caught:
        validate_content(Form((field,)), {field.name: value})
    assert [(p.field, p.code) for p in caught.value.problems] == [(field.name, code)]
    assert check_value(field, value) == caught.value.problems[0]


GOOD_VALUES = [
    # (id, field, value, validated)
    ("string at min length", S, "ab", "ab"),
    ("string at max length counts code points", S, "ééé😀", "ééé😀"),
    ("fractional number (F3)", N, 0.25, 0.25),
    ("integral number stays an int", N, 1, 1),
    ("number at the inclusive bounds", N, 1.5, 1.5),
    ("integer", I, 10, 10),
    ("whole float for an integer becomes an int", I, 3.0, 3),
    ("boolean", B, False, False),
    ("option", SEL, "g", "g"),
    ("multi select", MUL, ["c", "a"], ["c", "a"]),
    ("tuple for a multi select becomes a list", MUL, ("b",), ["b"]),
]


@pytest.mark.parametrize(
    ("field", "value", "validated"), [g[1:] for g in GOOD_VALUES], ids=[g[0] for g in GOOD_VALUES]
)
def test_a_good_value_is_accepted_and_normalised(field: Field, value: Any, validated: Any) -> None:
    result = validate_content(Form((field,)), {field.name: value})
    assert result == {field.name: validated}
    assert type(result[field.name]) is type(validated)


def test_content_that_is_not_an_object_is_a_type_problem_for_the_whole_form() -> None:
    for content in (None, [], "x", 1):
        with pytest.raises(AnswerError) as caught:
            validate_content(Form(()), content)
        assert [(p.field, p.code) for p in caught.value.problems] == [("", "type")]


def test_every_bad_field_is_reported_once_in_form_order_then_unknown_keys() -> None:
    form = Form((Field.string("a"), Field.integer("b"), Field.boolean("c")))
    with pytest.raises(AnswerError) as caught:
        validate_content(form, {"zz": 1, "b": "x", "c": True, "yy": 2})
    assert [(p.field, p.code) for p in caught.value.problems] == [
        ("a", "missing"),
        ("b", "type"),
        ("zz", "unknown_field"),
        ("yy", "unknown_field"),
    ]
    assert caught.value.fields == ("a", "b", "zz", "yy")


def test_defaults_fill_absent_optional_fields_and_absent_fields_without_default_stay_absent() -> None:
    form = Form(
        (
            Field.string("a", required=False, default="x"),
            Field.multi_select("m", ["p", "q"], required=False, default=["q"]),
            Field.integer("n", required=False),
            Field.boolean("b", default=True),  # required, with a default to pre-fill (F6)
        )
    )
    assert validate_content(form, {}) == {"a": "x", "m": ["q"], "b": True}
    assert validate_content(form, {"a": "y", "b": False}) == {"a": "y", "m": ["q"], "b": False}


def test_the_defaults_handed_out_are_copies() -> None:
    form = Form((Field.multi_select("m", ["p", "q"], required=False, default=["q"]),))
    first = validate_content(form, {})
    first["m"].append("p")
    assert validate_content(form, {}) == {"m": ["q"]}


def test_null_for_an_optional_field_is_a_type_problem_not_an_absence() -> None:
    form = Form((Field.string("a", required=False),))
    with pytest.raises(AnswerError) as caught:
        validate_content(form, {"a": None})
    assert [(p.field, p.code) for p in caught.value.problems] == [("a", "type")]


def test_a_string_without_max_length_is_still_capped_at_the_string_limit() -> None:
    form = Form((Field.string("a"),))
    assert validate_content(form, {"a": "x" * limits.MAX_STRING_LENGTH})
    with pytest.raises(AnswerError) as caught:
        validate_content(form, {"a": "x" * (limits.MAX_STRING_LENGTH + 1)})
    assert caught.value.problems[0].code == "too_long"


def test_answer_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (the builtin a caller catches)
        Form((B,)).validate({})


# -- formats ------------------------------------------------------------------------------------

EMAILS_OK = ["user@example.com", "first.last+tag@mail.example.org", "x_y-z@sub.domain.io", "é@exämple.com"]
EMAILS_BAD = [
    "",
    "plain",
    "@example.com",
    "user@",
    "user@localhost",  # no dot (and special-use)
    "user@host",  # no dot
    "user@1.2.3.4",  # numeric last label
    "user@[1.2.3.4]",  # address literal
    '"quoted"@example.com',
    "a b@example.com",
    "a@exa mple.com",
    "a\n@example.com",
    "a@example..com",
    ".a@example.com",
    "a.@example.com",
    "a@@example.com",
    "Name <a@example.com>",
    "a@example.com.",
    "a@-example.com",
]
URIS_OK = [
    "https://example.com",
    "https://example.com/a/b?c=d&e=f#frag",
    "http://user:pw@host:8080/p",
    "urn:isbn:0451450523",
    "mailto:someone@example.com",
    "file:///etc/hosts",
    "https://[2001:db8::1]:443/",
    "https://[v7.fe80::1]/",
    "x-app:relative/path",
    "https://example.com/%20space",
    "tel:+1-816-555-1212",
]
URIS_BAD = [
    "",
    "example.com",
    "/just/a/path",
    "//example.com/no-scheme",
    "1http://example.com",
    "ht tp://example.com",
    "https://exa mple.com",
    "https://example.com/a b",
    "https://example.com/%zz",
    "https://example.com/\u00e9",
    "https://[::1",
    "https://[::1]x/",
    "https://[fe80::1%eth0]/",
    "https://[not-an-ip]/",
    "https://a@b@c/",
    "https://host:port/",
    "https://example.com/#a#b",
    "https://example.com/\n",
    "javascript:alert(1)\x00",
]
DATES_OK = ["2024-02-29", "0001-01-01", "9999-12-31", "2023-12-31"]
DATES_BAD = [
    "2023-02-29",
    "2023-13-01",
    "2023-00-10",
    "2023-1-01",
    "23-01-01",
    "2023/01/01",
    "0000-01-01",
    "２０２３-01-01",
    "2023-01-01T00:00:00Z",
    " 2023-01-01",
]
DATETIMES_OK = [
    "2023-01-01T10:00:00Z",
    "2023-01-01t10:00:00z",
    "2023-01-01T10:00:00.5+05:30",
    "2023-01-01T23:59:59.123456789-12:00",
    "2024-02-29T00:00:00+00:00",
]
DATETIMES_BAD = [
    "2023-01-01T10:00:00",  # no offset
    "2023-01-01 10:00:00Z",  # space instead of T
    "2023-01-01T24:00:00Z",
    "2023-01-01T10:60:00Z",
    "2023-12-31T23:59:60Z",  # leap second: no Python datetime holds it
    "2023-01-01T10:00:00+24:00",
    "2023-01-01T10:00:00+05:60",
    "2023-01-01T10:00Z",
    "2023-02-30T10:00:00Z",
    "2023-01-01T10:00:00.Z",
    "2023-01-01T10:00:00+0530",
]


@pytest.mark.parametrize("value", EMAILS_OK)
def test_a_real_email_address_is_an_email(value: str) -> None:
    assert is_email(value)


@pytest.mark.parametrize("value", EMAILS_BAD)
def test_something_else_is_no_email(value: str) -> None:
    assert not is_email(value)


@pytest.mark.parametrize("value", URIS_OK)
def test_an_absolute_rfc_3986_uri_is_a_uri(value: str) -> None:
    assert is_uri(value)


@pytest.mark.parametrize("value", URIS_BAD)
def test_a_relative_or_malformed_reference_is_no_uri(value: str) -> None:
    assert not is_uri(value)


@pytest.mark.parametrize("value", DATES_OK)
def test_a_real_calendar_day_is_a_date(value: str) -> None:
    assert is_date(value)


@pytest.mark.parametrize("value", DATES_BAD)
def test_anything_but_a_real_yyyy_mm_dd_day_is_no_date(value: str) -> None:
    assert not is_date(value)


@pytest.mark.parametrize("value", DATETIMES_OK)
def test_an_rfc_3339_date_time_with_offset_is_a_date_time(value: str) -> None:
    assert is_date_time(value)


@pytest.mark.parametrize("value", DATETIMES_BAD)
def test_a_date_time_without_offset_or_out_of_range_is_refused(value: str) -> None:
    assert not is_date_time(value)


def test_a_date_time_parses_to_an_aware_datetime_with_its_offset() -> None:
    parsed = parse_date_time("2023-01-01T10:00:00.5-02:30")
    assert parsed is not None
    assert parsed.utcoffset() is not None
    assert parsed.isoformat() == "2023-01-01T10:00:00.500000-02:30"


def test_checking_an_email_does_not_load_dns_or_sockets() -> None:
    """The core stays pure even after email-validator ran (it loads dnspython only for deliverability)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from mcp_elicit.core.answers import is_email\n"
        "assert is_email('a@example.com')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dns', 'socket')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@given(st.text(max_size=60))
@settings(max_examples=150)
def test_format_checks_never_raise_on_any_text(value: str) -> None:
    for check in (is_email, is_uri, is_date, is_date_time):
        assert isinstance(check(value), bool)


# -- properties ---------------------------------------------------------------------------------


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_any_valid_answer_to_any_form_validates_to_itself_plus_defaults(data: st.DataObject) -> None:
    form = data.draw(forms())
    content = data.draw(answer_strategy(form))
    assert validate_content(form, content) == expected_values(form, content)


def _mutations(f: Field) -> list[tuple[Any, str]]:
    """Values that are wrong for `f`, with the code each must produce."""
    wrong_type: Any = 7 if f.kind in ("string", "single_select", "boolean", "multi_select") else "7"
    out: list[tuple[Any, str]] = [(wrong_type, "type"), (None, "type")]
    if f.kind == "single_select":
        out.append(("\x00not-an-option" * 3, "not_an_option"))
    if f.kind == "multi_select":
        out.append((["\x00not-an-option" * 3], "not_an_option"))
    if f.kind == "integer":
        out.append((0.5, "not_integer"))  # the fraction is found before any bound
    if f.kind in ("number", "integer") and f.maximum is not None:
        out.append((f.maximum + 1, "above_maximum"))
    if f.kind == "string" and f.max_length is not None and f.format is None:
        out.append(("x" * (f.max_length + 1), "too_long"))
    return out


@given(st.data())
@settings(max_examples=150, deadline=None)
def test_a_mutated_answer_is_refused_naming_the_mutated_field(data: st.DataObject) -> None:
    form = data.draw(forms().filter(lambda f: len(f.fields) > 0))
    content = data.draw(answer_strategy(form))
    target = data.draw(st.sampled_from(form.fields))
    value, code = data.draw(st.sampled_from(_mutations(target)))
    content[target.name] = value
    with pytest.raises(AnswerError) as caught:
        validate_content(form, content)
    assert [(p.field, p.code) for p in caught.value.problems] == [(target.name, code)]


def _askable(f: Field) -> bool:
    return f.required and not f.has_default


@given(st.data())
@settings(max_examples=100, deadline=None)
def test_a_missing_required_field_and_an_extra_key_are_both_named(data: st.DataObject) -> None:
    form = data.draw(forms().filter(lambda f: any(_askable(x) for x in f.fields)))
    content = data.draw(answer_strategy(form))
    target = data.draw(st.sampled_from([f for f in form.fields if _askable(f)]))
    del content[target.name]
    extra = "\x00extra"  # control characters never appear in field names
    content[extra] = 1
    with pytest.raises(AnswerError) as caught:
        validate_content(form, content)
    assert [(p.field, p.code) for p in caught.value.problems] == [
        (target.name, "missing"),
        (extra, "unknown_field"),
    ]


def test_answers_module_documents_every_code() -> None:
    assert answers.__doc__ is not None
    for code in CODES:
        assert f"`{code}`" in answers.__doc__


def test_a_date_time_without_a_zone_is_refused_saying_a_zone_is_needed() -> None:
    with pytest.raises(AnswerError) as caught:
        validate_content(Form((DATETIME,)), {"t": "2023-01-01T10:00:00"})
    (problem,) = caught.value.problems
    assert (problem.field, problem.code) == ("t", "format")
    assert "time zone" in problem.detail
    with pytest.raises(AnswerError) as other:
        validate_content(Form((DATETIME,)), {"t": "yesterday"})
    assert "time zone" not in other.value.problems[0].detail

"""`template_matches`: could this RFC 6570 template have expanded to this URI (how the gateway
routes a read of a templated resource)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.core.uri_templates import template_matches

EXAMPLES = [
    ("notes://{topic}", "notes://birds", True),
    ("notes://{topic}", "notes://", False),  # a simple expression is one or more characters
    ("notes://{topic}", "notes://a/b", False),  # ... of one path segment
    ("notes://{topic}", "notes://birds?x=1", False),
    ("notes://{topic}", "note://birds", False),
    ("users://{id}/posts/{post}", "users://7/posts/12", True),
    ("file:///{+path}", "file:///etc/hosts", True),
    ("x://{path*}", "x://a/b/c", True),  # FastMCP's multi-segment wildcard
    ("repo://{owner}/{repo}/contents{/path*}", "repo://a/b/contents", True),
    ("repo://{owner}/{repo}/contents{/path*}", "repo://a/b/contents/src/main.py", True),
    ("search://items{?q,limit}", "search://items?q=tea&limit=3", True),
    ("search://items{?q,limit}", "search://items", True),
    ("search://items{?q,limit}", "search://items#top", False),
    ("doc://page{#section}", "doc://page#intro/part", True),
    ("doc://page{#section}", "doc://pages", False),
    ("img://{name}{.ext}", "img://cat.png", True),
    ("a{b", "a{b", True),  # an unclosed brace is a literal
    ("{a}{b}", "xy", True),
    ("{a}{b}", "x", False),
]


@pytest.mark.parametrize(("template", "uri", "expected"), EXAMPLES)
def test_a_uri_matches_the_templates_it_could_come_from_and_no_other(
    template: str, uri: str, expected: bool
) -> None:
    assert template_matches(template, uri) is expected


def test_a_long_uri_against_many_wildcards_is_answered_without_backtracking() -> None:
    template = "x://" + "{+a}" * 30 + "!"
    assert template_matches(template, "x://" + "a" * 20_000) is False


# A reference for the property below: the same meaning, written as a backtracking regex.
_REFERENCE = {
    "": r"[^/?#]+",
    "+": r".+",
    "#": r"(?:#.*)?",
    "?": r"(?:\?[^#]*)?",
    "&": r"(?:&[^#]*)?",
    ".": r"(?:\.[^/?#]*)?",
    "/": r"(?:/[^?#]*)?",
    ";": r"(?:;[^/?#]*)?",
}
_OPERATORS = sorted(_REFERENCE)
_TEXT = st.text(alphabet="ab/?#.;&=", max_size=3)


def _reference(parts: list[tuple[str, str]]) -> str:
    pattern = ""
    for kind, text in parts:
        if kind == "literal":
            pattern += re.escape(text)
        else:
            pattern += _REFERENCE[kind]
    return pattern


def _template(parts: list[tuple[str, str]]) -> str:
    return "".join(text if kind == "literal" else "{" + kind + "x}" for kind, text in parts)


PARTS = st.lists(
    st.one_of(
        st.tuples(st.just("literal"), st.text(alphabet="ab/?#.;", min_size=1, max_size=3)),
        st.tuples(st.sampled_from(_OPERATORS), st.just("")),
    ),
    max_size=4,
)


@given(PARTS, _TEXT, _TEXT)
def test_matching_agrees_with_a_backtracking_regex_of_the_same_template(
    parts: list[tuple[str, str]], head: str, tail: str
) -> None:
    pattern = re.compile(_reference(parts), re.DOTALL)
    for uri in (head, head + tail, _expanded(parts, head)):
        assert template_matches(_template(parts), uri) is bool(pattern.fullmatch(uri))


def _expanded(parts: list[tuple[str, str]], value: str) -> str:
    """The template expanded with one value in every expression (the value cleaned to fit)."""
    clean = "".join(c for c in value if c not in "/?#") or "v"
    out = ""
    for kind, text in parts:
        out += text if kind == "literal" else ("" if kind in ("", "+") else kind) + clean
    return out


@given(PARTS, st.text(alphabet="ab", min_size=1, max_size=4))
def test_a_template_expanded_with_plain_values_matches_its_expansion(
    parts: list[tuple[str, str]], value: str
) -> None:
    assert template_matches(_template(parts), _expanded(parts, value))


@given(st.text(max_size=40), st.text(max_size=40))
def test_any_template_and_uri_get_an_answer(template: str, uri: str) -> None:
    assert template_matches(template, uri) in (True, False)

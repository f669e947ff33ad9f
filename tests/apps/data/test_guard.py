"""The guard's pure rules: whole-word tag matching and the run/ask/refuse decision."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.apps.data.guard import (
    CATEGORIES,
    DEFAULT_PII_TAGS,
    Estimate,
    FailClosed,
    PiiColumn,
    Thresholds,
    decide,
    matching_tags,
)

EMAIL = PiiColumn("main.customers", "email", ("pii",))


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("pii", ("pii",)),
        ("PII", ("pii",)),
        ("pii: contact address", ("pii",)),
        ("Full name (personal)", ("personal",)),
        ("sensitive, finance", ("sensitive",)),
        ("non-pii", ()),
        ("non-pii: marketing segment", ()),
        ("piiish", ()),
        ("pii-adjacent", ()),
        ("personally", ()),
        ("insensitive", ()),
        ("", ()),
    ],
)
def test_tags_match_as_whole_words_never_as_substrings(text: str, found: tuple[str, ...]) -> None:
    assert matching_tags([text], DEFAULT_PII_TAGS) == found


word = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=8)


@given(prefix=word, tag=st.sampled_from(DEFAULT_PII_TAGS))
def test_a_tag_glued_to_another_word_never_matches(prefix: str, tag: str) -> None:
    for glued in (f"{prefix}-{tag}", f"{tag}-{prefix}", f"{prefix}{tag}", f"{tag}{prefix}"):
        assert matching_tags([glued], [tag]) == ()


@given(
    before=st.lists(word, max_size=3), after=st.lists(word, max_size=3), tag=st.sampled_from(DEFAULT_PII_TAGS)
)
def test_a_tag_standing_alone_always_matches(before: list[str], after: list[str], tag: str) -> None:
    assert tag in matching_tags([" ".join([*before, tag.upper(), *after])], DEFAULT_PII_TAGS)


def test_configured_tags_replace_the_defaults() -> None:
    assert matching_tags(["confidential", "pii"], ["confidential"]) == ("confidential",)


def test_a_cheap_query_without_tagged_columns_runs() -> None:
    d = decide(
        estimate=Estimate.of({"t": 10}), thresholds=Thresholds(100), pii=(), catalog_ok=True, can_ask=True
    )
    assert (d.kind, d.category) == ("run", "ran_unasked")


def test_the_total_and_each_table_limit_are_both_checked() -> None:
    estimate = Estimate.of({"main.a": 60, "main.b": 60})
    d = decide(
        estimate=estimate, thresholds=Thresholds(100, {"main.a": 50}), pii=(), catalog_ok=True, can_ask=True
    )
    assert d.kind == "ask"
    assert [(e.table, e.rows, e.limit) for e in d.exceeded] == [("", 120, 100), ("main.a", 60, 50)]
    assert estimate.largest == ("main.a", 60)


def test_a_plan_step_that_handles_more_rows_than_the_query_reads_is_held_to_the_total_limit() -> None:
    crossed = decide(
        estimate=Estimate.of({"main.a": 40, "main.b": 40}, processed=1_600),
        thresholds=Thresholds(100),
        pii=(),
        catalog_ok=True,
        can_ask=True,
    )
    assert crossed.kind == "ask"
    assert [(e.table, e.rows, e.processed) for e in crossed.exceeded] == [("", 1_600, True)]
    scanned = decide(  # a step handling no more than is read adds nothing to what reading says
        estimate=Estimate.of({"main.a": 400}, processed=400),
        thresholds=Thresholds(100),
        pii=(),
        catalog_ok=True,
        can_ask=True,
    )
    assert [(e.table, e.rows, e.processed) for e in scanned.exceeded] == [("", 400, False)]


def test_personal_data_asks_even_when_cheap() -> None:
    d = decide(
        estimate=Estimate.of({"t": 1}), thresholds=Thresholds(), pii=[EMAIL], catalog_ok=True, can_ask=True
    )
    assert (d.kind, d.pii) == ("ask", (EMAIL,))


@pytest.mark.parametrize(
    ("estimate", "catalog_ok", "can_ask", "category"),
    [
        (None, True, True, "no_estimate"),
        (Estimate.of({"t": 1}), False, True, "no_catalog"),
        (Estimate.of({"t": 1}), True, False, "cannot_ask"),
    ],
)
def test_every_check_fails_closed_by_default(
    estimate: Estimate | None, catalog_ok: bool, can_ask: bool, category: str
) -> None:
    d = decide(
        estimate=estimate, thresholds=Thresholds(), pii=[EMAIL], catalog_ok=catalog_ok, can_ask=can_ask
    )
    assert (d.kind, d.category) == ("refuse", category)
    assert category in CATEGORIES


def test_each_check_can_fail_open_on_its_own() -> None:
    open_all = FailClosed(estimate=False, catalog=False, elicitation=False)
    d = decide(
        estimate=None, thresholds=Thresholds(), pii=(), catalog_ok=False, can_ask=False, fail_closed=open_all
    )
    assert (d.kind, d.category) == ("run", "ran_unasked")
    assert len(d.notes) == 2
    only_estimate = FailClosed(estimate=False)
    d = decide(
        estimate=None,
        thresholds=Thresholds(),
        pii=(),
        catalog_ok=False,
        can_ask=True,
        fail_closed=only_estimate,
    )
    assert (d.kind, d.category) == ("refuse", "no_catalog")


def test_the_guard_module_imports_no_engine_parser_or_sdk() -> None:
    code = (
        "import sys, mcp_elicit.apps.data.guard\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('mcp', 'mcp_types', 'anyio', 'duckdb', 'psycopg', 'trino', 'sqlglot', 'socket', 'sqlite3'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""

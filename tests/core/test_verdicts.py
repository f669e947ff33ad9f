"""The verdict order the secret guard and the URL checks share: ok < warn < block."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.core.verdicts import VERDICTS, worst


def test_the_verdicts_are_listed_mildest_first() -> None:
    assert VERDICTS == ("ok", "warn", "block")


def test_no_verdict_at_all_is_ok() -> None:
    assert worst() == "ok"


@given(st.lists(st.sampled_from(VERDICTS)))
def test_the_worst_of_several_verdicts_is_the_latest_in_the_order(verdicts: list) -> None:
    expected = max(verdicts, key=VERDICTS.index) if verdicts else "ok"
    assert worst(*verdicts) == expected
    assert worst(*verdicts, "block") == "block"

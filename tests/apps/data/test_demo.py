"""`make demo`'s data part: the guarded queries on a throwaway sample database, in both eras."""

from __future__ import annotations

import pytest

from mcp_elicit.apps.data.demo import run_data_demo

pytestmark = pytest.mark.anyio


async def test_the_demo_shows_each_outcome_in_both_eras() -> None:
    lines: list[str] = []
    await run_data_demo(lines.append, (("legacy", "2025-11-25"), ("2026-07-28", "2026-07-28")))
    text = "\n".join(lines)
    for outcome in (
        '"ran_unasked"',
        '"user_accepted"',
        '"user_accepted_masked"',
        '"declined"',
        '"not_read_only"',
    ):
        assert text.count(outcome) == 2, outcome
    assert text.count("choices: Run it | Run it with those columns masked | Don't run it") == 4


async def test_a_result_cut_for_the_demo_ends_with_a_marker() -> None:
    lines: list[str] = []
    await run_data_demo(lines.append, (("legacy", "2025-11-25"),))
    shown = [line.split("result: ", 1)[1] for line in lines if "result: " in line]
    cut = [text for text in shown if len(text) >= 200]
    assert cut  # the demo's longer results are cut
    assert all(len(text) == 200 and text.endswith("…") for text in cut)

"""Capabilities count only on the revisions that define them."""

from __future__ import annotations

import pytest

from mcp_elicit.core.revisions import usable_capabilities

BOTH = frozenset({"elicitation.form", "elicitation.url", "sampling"})


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2026-07-28", BOTH),
        ("2025-11-25", BOTH),
        ("2025-06-18", frozenset({"elicitation.form", "sampling"})),
        ("2025-03-26", frozenset({"sampling"})),
    ],
)
def test_url_mode_needs_2025_11_25_and_elicitation_needs_2025_06_18(
    version: str, expected: frozenset[str]
) -> None:
    assert usable_capabilities(version, BOTH) == expected


def test_a_2025_06_18_client_that_lists_only_url_mode_still_gets_forms() -> None:
    assert usable_capabilities("2025-06-18", frozenset({"elicitation.url"})) == {"elicitation.form"}

"""A number and a range of values in words, written the same way by every message of the project
(the UIs' field hints, the server kit's hint on a question asked again)."""

from __future__ import annotations

__all__ = ["number", "span"]


def number(x: int | float) -> str:
    """3.0 as "3", 2.5 as "2.5"."""
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def span(low: object, high: object) -> str | None:
    """A range in words: "2 to 5", "at least 2", "at most 5"; None when neither bound is set."""
    if low is not None and high is not None:
        return f"{low} to {high}"
    if low is not None:
        return f"at least {low}"
    if high is not None:
        return f"at most {high}"
    return None

"""Fakes that users of the library need in their own tests too."""

from __future__ import annotations

__all__ = ["ManualClock"]


class ManualClock:
    """A clock that moves only when told to: `clock()` returns seconds, `advance(s)` moves it."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not run backwards")
        self._now += seconds

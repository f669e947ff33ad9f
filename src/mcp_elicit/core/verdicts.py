"""What a check says about a form field or a URL: ``ok``, ``warn`` or ``block``, in rising severity.

One name, one order: the secret guard (core/sensitive.py) and the URL checks (core/urls.py) both
answer in it, and both report the most severe of what they found.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

__all__ = ["VERDICTS", "Verdict", "worst"]

Verdict: TypeAlias = Literal["ok", "warn", "block"]
VERDICTS: Final[tuple[Verdict, ...]] = get_args(Verdict)  # mildest first

_RANK: Final[dict[str, int]] = {verdict: rank for rank, verdict in enumerate(VERDICTS)}


def worst(*verdicts: Verdict) -> Verdict:
    """The most severe of `verdicts`; ``ok`` when there are none."""
    return max(verdicts, key=_RANK.__getitem__, default="ok")

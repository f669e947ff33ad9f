"""Sentinels shared by the form model and the answer checks."""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["MISSING"]


class _Missing(enum.Enum):
    # An enum member is a singleton that survives copy and pickle, and `Literal[_Missing.MISSING]`
    # lets type checkers narrow `default is MISSING`.
    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing.MISSING
"""Sentinel for "no default" (None cannot serve: it is a meaningful Python value)."""

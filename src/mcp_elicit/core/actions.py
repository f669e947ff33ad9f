"""What a person (or whoever decides in their place) can answer to an elicitation: one name, one meaning.

`Action` is the spec's three answers; `core.consent.DecidedBy` says who gave one. Server and client
import these instead of spelling the literal again.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

__all__ = ["ACTIONS", "Action"]

Action: TypeAlias = Literal["accept", "decline", "cancel"]
ACTIONS: tuple[Action, ...] = get_args(Action)

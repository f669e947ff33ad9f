"""One question on screen, bounded and failing closed: what every stage that asks the person uses.

The idle timeout bounds the wait; Ctrl-C is a cancel by the person (C3); a UI that raises or returns
something other than a `UIResult` cancels the question instead of crashing the session.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from mcp_elicit.client.model import Reply
from mcp_elicit.client.ui_protocol import UIResult

__all__ = ["show_bounded"]

logger = logging.getLogger(__name__)

P = TypeVar("P")


async def show_bounded(
    ask: Callable[[P], Awaitable[UIResult]], prompt: P, idle_timeout: float | None
) -> UIResult | Reply:
    """`ask(prompt)` within `idle_timeout` seconds: the person's `UIResult`, or the `Reply` that ends it."""
    try:
        with anyio.move_on_after(idle_timeout) as scope:
            result = await ask(prompt)
    except KeyboardInterrupt:
        return Reply("cancel", "person", reason="interrupted")
    except Exception:
        logger.exception("the UI failed while asking; the question is cancelled")
        return Reply("cancel", "error", reason="ui_failed")
    if scope.cancelled_caught:
        return Reply("cancel", "timeout", reason="idle_timeout")
    if not isinstance(result, UIResult) or result.action not in ("accept", "decline", "cancel"):
        logger.error("the UI returned %r, not a UIResult; the question is cancelled", type(result))
        return Reply("cancel", "error", reason="ui_failed")
    return result

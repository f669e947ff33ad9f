"""Releasing a waiting question when the HTTP client behind it goes away.

The SDK keeps waiting for an answer from a client that disconnected (it might resume), which
would pin the tool forever. Starlette's `Request.is_disconnected()` is the only signal it offers
here, so a small task polls it beside the wait.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from mcp_elicit.errors import ClientGone

__all__ = ["DISCONNECT_POLL_SECONDS", "until_disconnected"]

# How often a waiting question checks whether the HTTP client behind it went away; a quarter
# second keeps the release well under a second.
DISCONNECT_POLL_SECONDS = 0.25


async def until_disconnected(is_disconnected: Callable[[], Awaitable[bool]], fn: Callable[[], Any]) -> Any:
    """Await `fn()`; raise ClientGone as soon as `is_disconnected()` says the client left."""
    gone: list[bool] = []
    result: Any = None

    async def watch(scope: anyio.CancelScope) -> None:
        while not await is_disconnected():  # noqa: ASYNC110 - the ASGI server offers no disconnect event here
            await anyio.sleep(DISCONNECT_POLL_SECONDS)
        gone.append(True)
        scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch, tg.cancel_scope)
        result = await fn()
        tg.cancel_scope.cancel()
    if gone:
        raise ClientGone("the client disconnected before answering")
    return result

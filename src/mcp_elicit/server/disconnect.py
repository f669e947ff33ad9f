"""Noticing that the HTTP client behind a waiting question went away, without polling.

The SDK keeps waiting for an answer from a client that disconnected (it might resume), which
would pin the tool forever. A question waiting on a streamable HTTP request awaits that
request's ASGI `receive()`: once the body is read, the ASGI server answers it only with
``http.disconnect`` (uvicorn wakes every waiter of a connection when it drops), so a waiting
question costs one parked coroutine and no CPU at all, instead of a timer firing four times a
second (which burned a third of a core at 1,000 waiting questions).

A server whose `receive()` keeps returning other messages gets at most
`MAX_NON_DISCONNECT_MESSAGES` of them; after that the watch falls back to checking
`is_disconnected()` every `DISCONNECT_POLL_SECONDS`, so no ASGI server can make it spin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import anyio

from mcp_elicit.errors import ClientGone

__all__ = [
    "DISCONNECT_POLL_SECONDS",
    "MAX_NON_DISCONNECT_MESSAGES",
    "until_disconnected",
    "wait_for_disconnect",
]

# The fallback poll, for ASGI servers whose receive() does not park until the client leaves.
DISCONNECT_POLL_SECONDS: Final = 0.25

# Messages other than http.disconnect tolerated from receive() before falling back to the poll
# (a request body arrives as a few http.request messages at most; the SDK has read it already).
MAX_NON_DISCONNECT_MESSAGES: Final = 8


async def wait_for_disconnect(request: Any) -> bool:
    """Return once the client behind `request` (a Starlette request) has gone; False at once when
    the transport has no such notion (stdio, in memory: the process or task ends instead)."""
    receive = getattr(request, "receive", None)
    is_disconnected = getattr(request, "is_disconnected", None)
    if receive is None and is_disconnected is None:
        return False
    if receive is not None:
        for _ in range(MAX_NON_DISCONNECT_MESSAGES):
            message = await receive()
            if message.get("type") == "http.disconnect":
                return True
    if is_disconnected is None:
        await anyio.sleep_forever()
        return True  # not reached: the caller cancels the watch when the answer comes
    while not await is_disconnected():  # noqa: ASYNC110 - fallback only, see the module docstring
        await anyio.sleep(DISCONNECT_POLL_SECONDS)
    return True


async def until_disconnected(request: Any, fn: Callable[[], Any]) -> Any:
    """Await `fn()`; raise ClientGone as soon as the client behind `request` has gone."""
    gone: list[bool] = []
    result: Any = None

    async def watch(scope: anyio.CancelScope) -> None:
        if await wait_for_disconnect(request):
            gone.append(True)
            scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch, tg.cancel_scope)
        result = await fn()
        tg.cancel_scope.cancel()
    if gone:
        raise ClientGone("the client disconnected before answering")
    return result

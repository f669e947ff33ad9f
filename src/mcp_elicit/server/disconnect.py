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

What a waiting question holds beyond the SDK's own wait is kept small (thousands may wait at
once): on asyncio the watch is one bare task next to the waiting one, and the question's timeout
is the deadline of the one cancel scope the watch cancels, instead of a task group plus a
timeout scope of its own (about 5 kB less per waiting question). Other event loops get the task
group.
"""

from __future__ import annotations

import asyncio
import math
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


async def until_disconnected(request: Any, fn: Callable[[], Any], timeout: float | None = None) -> Any:
    """Await `fn()`; ClientGone as soon as the client behind `request` has gone, TimeoutError
    after `timeout` seconds (None: no limit)."""
    deadline = math.inf if timeout is None else anyio.current_time() + timeout
    outcome: list[BaseException] = []  # what ended the wait early: ClientGone or the watch's error

    async def watch(scope: anyio.CancelScope) -> None:
        try:
            if await wait_for_disconnect(request):
                outcome.append(ClientGone("the client disconnected before answering"))
                scope.cancel()
        except Exception as exc:  # the watch broke: the wait ends with its error, as in a task group
            outcome.append(exc)
            scope.cancel()

    result: Any = None
    answered = False
    loop = _asyncio_loop()
    if loop is not None:
        with anyio.CancelScope(deadline=deadline) as scope:
            watcher = loop.create_task(watch(scope))
            try:
                result = await fn()
                answered = True
            finally:
                watcher.cancel()  # it only ever waits on receive(); nothing to wait for
    else:
        async with anyio.create_task_group() as tg:
            scope = tg.cancel_scope
            scope.deadline = deadline
            tg.start_soon(watch, scope)
            result = await fn()
            answered = True
            scope.cancel()
    if outcome:
        raise outcome[0]
    if not answered:
        raise TimeoutError
    return result


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio)
        return None

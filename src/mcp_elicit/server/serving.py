"""Serving HTTP with uvicorn until an event is set, for commands that watch the signals themselves.

`serve_uvicorn(config, sock, stop)`: setting `stop` starts uvicorn's graceful shutdown (no new
connections, open requests and event streams end, then the application's lifespan), as its own
SIGINT or SIGTERM handler would. uvicorn's handlers are not installed then: they would replace
the command's (`signals.run_until_signalled`: 130 or 143, a second signal ends it at once), and
once stopped uvicorn raises the signal again, which killed the process on SIGTERM before its
`finally` blocks ran (a gateway's upstreams left running) and made SIGINT click's "Aborted!".
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import uvicorn

__all__ = ["serve_uvicorn"]


class _Unsignalled(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _is_event_stream(start: Any) -> bool:
    headers = start.get("headers") or []
    return any(k.lower() == b"content-type" and v.startswith(b"text/event-stream") for k, v in headers)


class _EndingStreams:
    """The app, each of whose event-stream responses can be ended at once by `end()`. The SDK's
    2026-07-28 streams (a client's `subscriptions/listen`, which the Inspector's mcpdo keeps open)
    are its own ASGI loops, which sse-starlette's hook below does not reach: the graceful shutdown
    waited on them until the client hung up. Other open requests still finish. A request costs a
    cancel scope, no task: this wraps every request a server takes."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.ended = False
        self._open: set[anyio.CancelScope] = set()

    def end(self) -> None:
        self.ended = True
        for scope in list(self._open):
            scope.cancel()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        done = False
        with anyio.CancelScope() as stream:

            async def watched(message: Any) -> None:
                nonlocal done
                if message["type"] == "http.response.start" and _is_event_stream(message):
                    self._open.add(stream)
                    if self.ended:
                        stream.cancel()
                done = message["type"] == "http.response.body" and not message.get("more_body", False)
                await send(message)

            try:
                await self.app(scope, receive, watched)
            finally:
                self._open.discard(stream)
        if stream.cancelled_caught and not done:  # the stream's end, so uvicorn logs no error for it
            with contextlib.suppress(Exception):  # the client may have gone already
                await send({"type": "http.response.body", "body": b"", "more_body": False})


async def serve_uvicorn(config: uvicorn.Config, sock: socket.socket, stop: anyio.Event | None = None) -> None:
    """Serve `config` on `sock`, a socket already bound and listening. With `stop`: until it is
    set, then uvicorn's graceful shutdown, uvicorn installing no signal handlers (the caller
    watches the signals). Without: uvicorn's own handlers stop it on SIGINT or SIGTERM."""
    if stop is None:
        await uvicorn.Server(config).serve(sockets=[sock])
        return
    streams = _EndingStreams(config.app)
    config.app = streams
    http = _Unsignalled(config)

    async def end_on_stop() -> None:
        await stop.wait()
        streams.end()
        # What uvicorn's own signal handler calls: sse-starlette (the SDK's event streams) hooks
        # it to end the open streams, which would otherwise hold the shutdown until each client
        # hung up (a connected client keeps one open). Sets `should_exit`, seen within 0.1 s.
        http.handle_exit(signal.SIGTERM, None)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(end_on_stop)
            await http.serve(sockets=[sock])
            tg.cancel_scope.cancel()
    finally:
        # sse-starlette's flag is process-wide and never reset: a later server in this process
        # (a test's, an embedder's) would end each of its streams at once.
        sse = sys.modules.get("sse_starlette.sse")
        if sse is not None:
            sse.AppStatus.should_exit = False

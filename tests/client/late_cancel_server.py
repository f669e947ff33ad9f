"""The reference server over streamable HTTP, answering a cancelled call while the client closes.

Run as a process: `python tests/client/late_cancel_server.py` prints `late-cancel: URL` on stderr
and serves until killed. In front of the reference server's app sits a middleware that puts the
moments a real network leaves to chance in the order that used to print the SDK's traceback:

1. a `notifications/cancelled` post is held until the client's DELETE (its session is closed);
2. the server then cancels the call and sends its -32800 answer on the call's open event stream;
3. the DELETE is held until that stream has ended, so the client reads the answer while it waits.

So a client that gives up on a call (say `call --timeout`) while a pushed page waits always reads
a message after its own read stream is closed. Holds are bounded (HOLD_SECONDS), never a sleep.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import uvicorn

from mcp_elicit.reference import build_reference_server

HOLD_SECONDS = 10.0


class LateCancel:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.deleting = anyio.Event()
        self.call_ended = anyio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "DELETE":
            self.deleting.set()
            with anyio.move_on_after(HOLD_SECONDS):
                await self.call_ended.wait()
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        if b'"notifications/cancelled"' in body:
            with anyio.move_on_after(HOLD_SECONDS):
                await self.deleting.wait()
        if b'"tools/call"' in body:  # one call per client run: its own moments
            self.deleting, self.call_ended = anyio.Event(), anyio.Event()
            call_ended, inner_send = self.call_ended, send

            async def noting_end(message: Any) -> None:
                await inner_send(message)
                if message["type"] == "http.response.body" and not message.get("more_body"):
                    call_ended.set()

            send = noting_end
        await self.app(scope, replay, send)


class _Server(uvicorn.Server):
    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        port = self.servers[0].sockets[0].getsockname()[1]
        print(f"late-cancel: http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)


if __name__ == "__main__":
    app = LateCancel(build_reference_server().streamable_http_app())
    _Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")).run()

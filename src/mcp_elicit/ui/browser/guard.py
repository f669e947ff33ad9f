"""Safety of the local pages themselves, and serving them on 127.0.0.1.

Every request passes `PageGuard` before any page sees it:

1. the Host header must be exactly ``127.0.0.1:<port>``: a page on another site that rebinds its
   own name to 127.0.0.1 (DNS rebinding) sends its own name and is refused (421);
2. the path must start with the session token, ``/<token>/``: the link printed for the person is
   the only way in (404 otherwise, the same as a page that does not exist);
3. a POST must carry the session's CSRF token in its form body, and its Origin (when the browser
   sends one) must be this page's own (403 otherwise); no other method than GET, HEAD and POST;
4. every response carries a strict Content-Security-Policy (scripts and styles only from this
   page's own files, no inline script, no framing, forms post only here), X-Frame-Options DENY,
   no referrer to any other site (same-origin policy), nosniff and no caching.

Tokens are compared in constant time. The server listens on 127.0.0.1 only, on a port the system
picks, and never on another address.
"""

from __future__ import annotations

import contextlib
import hmac
import secrets
import socket
from collections.abc import Iterator
from typing import Final
from urllib.parse import parse_qs

import anyio
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "LOOPBACK",
    "MAX_POST_BYTES",
    "SHUTDOWN_SECONDS",
    "TOKEN_BYTES",
    "LocalServer",
    "PageGuard",
    "new_token",
]

LOOPBACK: Final = "127.0.0.1"

# Random bytes in the session token and the CSRF token (256 bits: not guessable).
TOKEN_BYTES: Final = 32

# Seconds uvicorn is given to close open connections when a page server stops.
SHUTDOWN_SECONDS: Final = 1

# Bytes of one POST body: a whole form of MAX_FIELDS answers fits (answers are checked against
# their own limits afterwards); anything larger is refused before it is read to the end.
MAX_POST_BYTES: Final = 1_048_576

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

_HEADERS: Final = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make POSTs send "Origin: null"
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


class PageGuard:
    """ASGI middleware: the checks in the module docstring; the app behind sees only good requests.

    The app is mounted under ``/<token>`` (given as ``root_path``), and a good
    POST's form fields are available to it unchanged (the body is replayed).
    """

    def __init__(self, app: ASGIApp, *, port: int, token: str, csrf: str | None) -> None:
        self.app = app
        self.host = f"{LOOPBACK}:{port}".encode()
        self.origin = f"http://{LOOPBACK}:{port}".encode()
        self.prefix = f"/{token}"
        self.csrf = csrf

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan, no websockets
        headers = dict(scope["headers"])

        async def guarded_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        if headers.get(b"host") != self.host:
            # Named without the token, so a page that reached this port learns nothing new; a
            # person who typed "localhost" sees where to go instead.
            where = self.origin.decode()
            await _refuse(
                guarded_send, 421, f"This page answers only at {where}/ (open the link as printed)."
            )
            return
        path: str = scope["path"]
        token, slash, _ = path[1:].partition("/")
        known = hmac.compare_digest(f"/{token}".encode(), self.prefix.encode())
        method = scope["method"]
        if known and not slash and method in ("GET", "HEAD"):
            # The link without its last slash (typed, or cut off when copied): to the page.
            await _redirect(guarded_send, f"{self.prefix}/")
            return
        if not slash or not known:
            await _refuse(guarded_send, 404, "Not found.")
            return
        if method not in ("GET", "HEAD", "POST") or (method == "POST" and self.csrf is None):
            await _refuse(guarded_send, 405, "Method not allowed.")
            return
        if method == "POST":
            origin = headers.get(b"origin")
            if origin is not None and origin != self.origin:
                await _refuse(guarded_send, 403, "Refused: this request came from another site.")
                return
            body = await _read_body(receive)
            if body is None:
                await _refuse(guarded_send, 413, "Too large.")
                return
            fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
            sent = (fields.get("csrf") or [""])[0]
            if not hmac.compare_digest(sent.encode(), (self.csrf or "").encode()):
                await _refuse(guarded_send, 403, "Refused: the page's form token is missing or wrong.")
                return
            receive = _replay(body)
        # ASGI: `path` stays whole and `root_path` names the mount, which Starlette strips.
        scope = {**scope, "root_path": scope.get("root_path", "") + self.prefix}
        await self.app(scope, receive, guarded_send)


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_POST_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            await anyio.sleep_forever()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _redirect(send: Send, location: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 308,
            "headers": [(b"location", location.encode()), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals stay with the application (connect uses Ctrl-C to abandon a call).
        yield


class LocalServer:
    """A socket on 127.0.0.1 (port 0: the system picks one), bound at once so the port is known
    before the app is built; `serve(app)` runs until cancelled."""

    def __init__(self, port: int = 0) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: without it, a response's headers and body (two writes)
        # meet delayed ACKs and every keep-alive request waits about 40 ms.
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.socket.bind((LOOPBACK, port))
        except OSError:  # a port in use: said by the caller, nothing left open
            self.socket.close()
            raise
        self.port: int = self.socket.getsockname()[1]

    async def serve(
        self, app: ASGIApp, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        config = uvicorn.Config(
            app,
            lifespan="off",
            log_level="warning",
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        )
        server = _Server(config)
        done = anyio.Event()

        async def run() -> None:
            # Shielded: uvicorn stops cleanly when told to (should_exit), not when cancelled.
            with anyio.CancelScope(shield=True):
                try:
                    await server.serve(sockets=[self.socket])
                finally:
                    done.set()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                while not server.started and not done.is_set():  # noqa: ASYNC110 - uvicorn has no event
                    await anyio.sleep(0.01)
                task_status.started()
                try:
                    await done.wait()
                finally:
                    server.should_exit = True
                    with anyio.CancelScope(shield=True), anyio.move_on_after(2 * SHUTDOWN_SECONDS):
                        await done.wait()
        finally:
            self.socket.close()

"""What an HTTP MCP server's answers say, as the client's guarded transport (`sdk_transport`) sees
each request and answer of a connection: `AccessRefusal`, its last 401/403; `LinkWatch`, whether
the connection is gone; `end_session`, the request that ends a session, bounded.

The SDK's streamable HTTP client does not say so: when the server is killed, the standing event
stream of a 2025-11-25 session breaks, is opened again once or twice, and is then given up without
a word; when the server was restarted, every request meets "Session not found" (HTTP 404). The
watch decides; the gateway (`gateway/pool.py`) takes a lost watch as a lost upstream. A standing
stream the SDK gave up for another reason (a proxy's hiccup: the stream ended, then two 503s) is
taken as a loss too: the session still answers, but nothing the server sends on its own (a URL
step's completion) would ever reach the client again.

A standing stream that stays silent past the read timeout is not a failure: a server without
keep-alives has nothing to say while idle. It is ended as if the server had closed it, so the SDK
opens it again after its pause and the count starts over (found by a new user: an idle upstream
was "lost" and reconnected every ten minutes, two read timeouts, with a warning and two list
changes to every client). A server that is really gone is found by that new opening (refused,
reset, a 404, or a connect timeout that counts as a failure).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

import anyio
import httpx2

from mcp_elicit.core.text import clean_text
from mcp_elicit.errors import AuthorizationFailed

__all__ = [
    "MAX_AUTH_SCHEME_CHARS",
    "MAX_LINK_REASON_CHARS",
    "SDK_STREAM_ATTEMPTS",
    "SESSION_END_TIMEOUT_SECONDS",
    "AccessRefusal",
    "LinkWatch",
    "end_session",
]

logger = logging.getLogger(__name__)

# Characters of the HTTP client's error kept in the reason (it goes to a log line and to callers).
MAX_LINK_REASON_CHARS: Final = 200
# Failed openings of its standing stream in a row after which the SDK's streamable HTTP client
# gives that stream up for good (its MAX_RECONNECTION_ATTEMPTS; a canary test checks the value).
SDK_STREAM_ATTEMPTS: Final = 2

# How long the request that ends a session (the SDK's DELETE as a connection closes) may take, its
# answer read; then the close goes on without it (else up to the read timeout, 300 s, per server).
SESSION_END_TIMEOUT_SECONDS: Final = 5.0

# Characters of a 401's challenge scheme kept in the error (a scheme is one short token: "Bearer").
MAX_AUTH_SCHEME_CHARS: Final = 32


class AccessRefusal:
    """What an HTTP server last said about access: its 401/403 (status, the challenge's scheme,
    whether the request carried credentials), forgotten once a request succeeds (the OAuth
    provider's retry with a token). The SDK turns such an answer into a bare -32603; the
    connection turns it into `AuthorizationFailed` with `error`."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.scheme = ""
        self.had_credentials = False

    def saw(self, request: httpx2.Request, response: httpx2.Response) -> None:
        if response.status_code in (401, 403):
            self.status = response.status_code
            scheme = (response.headers.get("www-authenticate", "").split(None, 1) or [""])[0]
            self.scheme = clean_text(scheme, limit=MAX_AUTH_SCHEME_CHARS, multiline=False)
            self.had_credentials = "authorization" in request.headers
        elif response.status_code < 400:
            self.status = None

    def error(self, url: str) -> AuthorizationFailed | None:
        """The error to report for `url`, when the last answer refused access."""
        if self.status is None:
            return None
        reason = "refused" if self.had_credentials else "required"
        return AuthorizationFailed(url, reason, self.scheme, status=self.status)


class LinkWatch:
    """Whether an HTTP server's connection is gone, as its transport saw it; `lost` is set once.

    Gone: a request to the server's endpoint that could not reach it (refused, reset, cut before
    an answer: nothing serves there now), or an HTTP 404 to a request carrying the session's
    `Mcp-Session-Id` (the server no longer knows the session: it restarted, or ended it; the
    spec's signal to start a new one). Not gone: a slow answer (a timeout), any other error status,
    or a stream the server closed. The SDK opens its listening stream again after a pause, and
    that request tells which it was (a server killed, or restarted, is seen within that pause).
    Gone as well: that listening stream failed `SDK_STREAM_ATTEMPTS` times in a row (an error
    status other than 404 and 405, a timeout before its answer, a stream cut; one that ends as the
    server closes it, or stays silent past the read timeout once open, starts the count over), since
    the SDK then never opens it again. 405: the server has no such stream, nothing to miss.
    Requests elsewhere (an OAuth server) do not count."""

    def __init__(self, url: str) -> None:
        self.lost = anyio.Event()
        self.why = ""
        self._endpoint = _endpoint(httpx2.URL(url))
        self._stream_failures = 0  # of the listening stream, in a row
        self._gone = False  # nothing serves the session any more (not just its stream given up)

    def failed(self, request: httpx2.Request, exc: httpx2.TransportError) -> None:
        if isinstance(exc, httpx2.NetworkError | httpx2.RemoteProtocolError):
            said = clean_text(str(exc) or "no detail", limit=MAX_LINK_REASON_CHARS, multiline=False)
            self._lose(request, f"its server cannot be reached ({type(exc).__name__}: {said})")
        self.stream_failed(request, type(exc).__name__)

    def saw(self, request: httpx2.Request, response: httpx2.Response) -> None:
        if response.status_code == 404 and _SESSION_HEADER in request.headers:
            self._lose(request, "its server no longer knows the session (HTTP 404: it restarted or ended it)")
        elif response.status_code >= 400 and response.status_code != 405:
            self.stream_failed(request, f"HTTP {response.status_code}")

    def watched(self, request: httpx2.Request, stream: httpx2.AsyncByteStream) -> httpx2.AsyncByteStream:
        """`stream` (an event stream answering `request`), telling the watch how it ended when it
        is the session's listening stream."""
        return _ListeningStream(self, request, stream) if self._listening(request) else stream

    def stream_failed(self, request: httpx2.Request, what: str) -> None:
        """`request`, if it opened the session's listening stream, failed (`what`: how)."""
        if not self._listening(request):
            return
        self._stream_failures += 1
        if self._stream_failures >= SDK_STREAM_ATTEMPTS:
            why = f"its server-to-client stream failed {self._stream_failures} times in a row, last {what}"
            self._lose(request, why + " (the HTTP client gave it up)", gone=False)

    def stream_ended(self) -> None:
        """The listening stream ended as the server closed it: the count starts over."""
        self._stream_failures = 0

    def _listening(self, request: httpx2.Request) -> bool:
        """Whether `request` opens the session's listening stream (a GET with the session's id)."""
        return request.method == "GET" and _SESSION_HEADER in request.headers and self._ours(request)

    def _ours(self, request: httpx2.Request) -> bool:
        return _endpoint(request.url) == self._endpoint

    def moot(self, request: httpx2.Request) -> bool:
        """Whether `request` ends a session already known gone (the SDK's DELETE when the
        connection closes): not sent, since it can only fail (and the SDK warn of it). Asked
        again after a DELETE that found the server gone (unreachable, or a 404): then it is
        done, not failed (a gateway stopping just after an upstream died says nothing of it)."""
        return self._gone and request.method == "DELETE" and self._ours(request)

    def _lose(self, request: httpx2.Request, why: str, *, gone: bool = True) -> None:
        """`gone`: the server is unreachable or forgot the session; else only its stream was given
        up, and the session is still ended when the connection closes (its DELETE is sent)."""
        if not self._ours(request):
            return
        self._gone = self._gone or gone
        if not self.lost.is_set():
            self.why = why
            self.lost.set()


async def end_session(
    request: httpx2.Request, send: Callable[[httpx2.Request], Awaitable[httpx2.Response]]
) -> httpx2.Response:
    """`send(request)`, the request that ends a session, and its answer read, within
    `SESSION_END_TIMEOUT_SECONDS`: a server that does not answer in time is left to end it on its
    own (one log line), and the connection's close goes on (found by a new user: a gateway's stop
    waited on an upstream that never answered it)."""
    with anyio.move_on_after(SESSION_END_TIMEOUT_SECONDS):
        response = await send(request)
        await response.aread()
        return response
    where = request.url.copy_with(query=None, fragment=None, userinfo=b"")  # no key it may hold
    logger.warning(
        "%s did not answer the end of its session within %g s; closing without its answer",
        where,
        SESSION_END_TIMEOUT_SECONDS,
    )
    return httpx2.Response(204, request=request)


class _ListeningStream(httpx2.AsyncByteStream):
    """The session's listening stream: its end, as the server closed it, starts the count of
    failures over, and so does a silence past the read timeout (an idle server without
    keep-alives: the stream is ended here as if the server had closed it, and the SDK opens it
    again); an error while reading it (a cut) is one more failure."""

    def __init__(self, watch: LinkWatch, request: httpx2.Request, inner: httpx2.AsyncByteStream) -> None:
        self._watch, self._request, self._inner = watch, request, inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx2.ReadTimeout:
            pass  # nothing said for a while, no error from the server: ended quietly (below)
        except httpx2.TransportError as exc:  # read while open: a cut is no verdict on its own
            self._watch.stream_failed(self._request, type(exc).__name__)
            raise
        self._watch.stream_ended()

    async def aclose(self) -> None:
        await self._inner.aclose()


_SESSION_HEADER: Final = "mcp-session-id"


def _endpoint(url: httpx2.URL) -> tuple[str, str, int | None, str]:
    return url.scheme, url.host, url.port, url.path

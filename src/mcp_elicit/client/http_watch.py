"""What an HTTP MCP server's answers say, as the client's guarded transport (`sdk_transport`) sees
each request and answer of a connection: `AccessRefusal`, its last 401/403; `LinkWatch`, whether
the connection is gone.

The SDK's streamable HTTP client does not say so: when the server is killed, the standing event
stream of a 2025-11-25 session breaks, is opened again once or twice, and is then given up without
a word; when the server was restarted, every request meets "Session not found" (HTTP 404). The
watch decides; the gateway (`gateway/pool.py`) takes a lost watch as a lost upstream.
"""

from __future__ import annotations

from typing import Final

import anyio
import httpx2

from mcp_elicit.core.text import clean_text
from mcp_elicit.errors import AuthorizationFailed

__all__ = ["MAX_AUTH_SCHEME_CHARS", "MAX_LINK_REASON_CHARS", "AccessRefusal", "LinkWatch"]

# Characters of the HTTP client's error kept in the reason (it goes to a log line and to callers).
MAX_LINK_REASON_CHARS: Final = 200


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
    Requests elsewhere (an OAuth server) do not count."""

    def __init__(self, url: str) -> None:
        self.lost = anyio.Event()
        self.why = ""
        self._endpoint = _endpoint(httpx2.URL(url))

    def failed(self, request: httpx2.Request, exc: httpx2.TransportError) -> None:
        if isinstance(exc, httpx2.NetworkError | httpx2.RemoteProtocolError):
            said = clean_text(str(exc) or "no detail", limit=MAX_LINK_REASON_CHARS, multiline=False)
            self._lose(request, f"its server cannot be reached ({type(exc).__name__}: {said})")

    def saw(self, request: httpx2.Request, response: httpx2.Response) -> None:
        if response.status_code == 404 and _SESSION_HEADER in request.headers:
            self._lose(request, "its server no longer knows the session (HTTP 404: it restarted or ended it)")

    def moot(self, request: httpx2.Request) -> bool:
        """Whether `request` ends a session already known gone (the SDK's DELETE when the
        connection closes): not sent, since it can only fail (and the SDK warn of it). Asked
        again after a DELETE that found the server gone (unreachable, or a 404): then it is
        done, not failed (a gateway stopping just after an upstream died says nothing of it)."""
        return self.lost.is_set() and request.method == "DELETE" and _endpoint(request.url) == self._endpoint

    def _lose(self, request: httpx2.Request, why: str) -> None:
        if _endpoint(request.url) == self._endpoint and not self.lost.is_set():
            self.why = why
            self.lost.set()


_SESSION_HEADER: Final = "mcp-session-id"


def _endpoint(url: httpx2.URL) -> tuple[str, str, int | None, str]:
    return url.scheme, url.host, url.port, url.path

"""The client side's SDK boundary for transports: stdio, streamable HTTP (guarded), in-process.

`transport_for` picks the SDK transport for a server and wraps it in the transport guard
(`client/sdk.py`); `describe_server` says where a server runs, for the prompt. With `client/sdk.py`,
the only client module that imports `mcp`.

Malformed server requests on an HTTP response stream are made answerable here.

Over streamable HTTP the SDK parses every SSE event of a call's response stream itself; a
request it cannot parse (say `params` is a string) ends the whole call with a parse error and
the request is never answered, so the server waits for a reply that never comes. The guard in
`client/sdk.py` can only answer what reaches the read stream.

This module sits below the SDK, in the HTTP client: it reads `text/event-stream` bodies event by
event and rewrites a JSON-RPC request that would fail validation into a well-formed stand-in,
`{"method": "mcp-elicit/malformed", "params": {"method": <original or null>}}` with the same id.
The transport guard recognises the stand-in and answers the server with -32602 (params not an
object) or -32600 (anything else), exactly as it does over stdio. Nothing else is changed: other
events pass through byte for byte.
"""

from __future__ import annotations

import json
import logging
import shlex
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from contextvars import ContextVar
from typing import Any, Final, TextIO

import httpx2
import mcp.client.stdio as sdk_stdio
import mcp_types as t
from anyio.streams.text import TextReceiveStream
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.mcpserver import MCPServer

# Private hook: the SDK's own HTTP timeouts, so the guarded client behaves like the SDK's default.
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from pydantic import TypeAdapter, ValidationError

from mcp_elicit.client.http_watch import AccessRefusal, LinkWatch, end_session
from mcp_elicit.client.sdk import MALFORMED_METHOD, ElicitationHandler, GuardedTransport
from mcp_elicit.client.stdio_guard import BadBytes, StdioGuard, bound_lines, guard_stdio, note_process
from mcp_elicit.core.text import clean_text

__all__ = [
    "AccessRefusal",
    "InProcessServer",
    "LinkWatch",
    "Spawned",
    "StdioServerParameters",
    "describe_server",
    "guarded_http_client",
    "guarded_streamable_http_client",
    "noting_spawns",
    "rewrite_event",
    "transport_for",
]

# The longest silence on an HTTP answer (the SDK's, 300 s); an idle listening stream then ends quietly.
HTTP_READ_TIMEOUT_SECONDS: Final[float] = MCP_DEFAULT_SSE_READ_TIMEOUT

InProcessServer = MCPServer[Any] | Server[Any]
"""An SDK server object run in this process (tests, demos): no transport, so no guard either."""

_MESSAGE = TypeAdapter[t.JSONRPCMessage](t.JSONRPCMessage)


class Spawned:
    """The last stdio server process started while this box was current (`noting_spawns`), so
    that a server that exited before the handshake can be reported with its exit status."""

    def __init__(self, label: str = "") -> None:
        self.process: Any = None
        self.label = label  # which server, for what the SDK logs about it (the gateway's key)

    @property
    def exit_status(self) -> int | None:
        """Its exit status (negative: the signal that ended it); None while it runs or if none started."""
        code = getattr(self.process, "returncode", None)
        return code if isinstance(code, int) else None


_spawned: ContextVar[Spawned | None] = ContextVar("mcp_elicit_spawned", default=None)


@contextmanager
def noting_spawns(box: Spawned) -> Iterator[Spawned]:
    """Note in `box` the stdio server processes the SDK starts in this context (and its tasks)."""
    token = _spawned.set(box)
    try:
        yield box
    finally:
        _spawned.reset(token)


def _note_spawns() -> None:
    """Private hook: the SDK's `stdio_client` starts the server through this module-level function
    and keeps the process to itself. Wrapped once, a pass-through unless a `Spawned` box or a
    stdio guard is current; an SDK without the function only loses the exit status in the
    gateway's log and the prompt stop of a server that broke the protocol (`stdio_guard`)."""
    spawn = getattr(sdk_stdio, "_create_platform_compatible_process", None)
    if spawn is None or getattr(spawn, "mcp_elicit_noted", False):
        return

    async def noted(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        note_process(process)
        box = _spawned.get()
        if box is not None:
            box.process = process
        return process

    noted.mcp_elicit_noted = True  # type: ignore[attr-defined]
    sdk_stdio._create_platform_compatible_process = noted


_note_spawns()


class _BoundedText(TextReceiveStream):
    """Private hook: the SDK's stdio reader decodes the server's stdout through the module-level
    name `TextReceiveStream`; replaced by this subclass, whose bytes pass `bound_lines` first
    (a line over the bound ends the connection, see `stdio_guard`)."""

    def __init__(self, transport_stream: Any, *args: Any, **kwargs: Any) -> None:
        box = _spawned.get()  # the reader task runs in the context the server was started in
        super().__init__(bound_lines(transport_stream, box.label if box is not None else ""), *args, **kwargs)


sdk_stdio.TextReceiveStream = _BoundedText  # type: ignore[attr-defined]


def rewrite_event(event: bytes) -> bytes:
    """One SSE event (without its blank-line terminator), rewritten when it carries a bad request."""
    lines = event.split(b"\n")
    data = [line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:")]
    if not data:
        return event
    payload = b"\n".join(data)
    try:
        _MESSAGE.validate_json(payload, by_name=False)
        return event
    except ValidationError:
        pass
    try:
        message = json.loads(payload)
    except ValueError:
        return event
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return event
    request_id = message["id"]
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        return event
    method = message["method"] if isinstance(message["method"], str) else None
    params_ok = isinstance(message.get("params"), dict | None)
    params: dict[str, Any] = {"method": method, "paramsIsObject": params_ok}
    stand_in = {"jsonrpc": "2.0", "id": request_id, "method": MALFORMED_METHOD, "params": params}
    kept = [line for line in lines if not line.startswith(b"data:")]
    return b"\n".join([*kept, b"data: " + json.dumps(stand_in, separators=(",", ":")).encode()])


class _RewrittenStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        buffer = b""
        async for chunk in self._inner:
            buffer += chunk.replace(b"\r\n", b"\n")
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                yield rewrite_event(event) + b"\n\n"
        if buffer:
            yield rewrite_event(buffer)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _GuardedTransport(httpx2.AsyncBaseTransport):
    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        refusal: AccessRefusal | None = None,
        watch: LinkWatch | None = None,
    ) -> None:
        self._inner = inner
        self._refusal = refusal
        self._watch = watch

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._watch is not None and self._watch.moot(request):
            return httpx2.Response(204, request=request)  # ending a session known gone: done
        if request.method == "DELETE":  # ending a session: bounded, it never holds a close up
            return await end_session(request, self._send)
        return await self._send(request)

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            if self._watch is not None:
                self._watch.failed(request, exc)
                if self._watch.moot(request):  # its end found the server gone: nothing left to end
                    return httpx2.Response(204, request=request)
            raise
        if self._refusal is not None:
            self._refusal.saw(request, response)
        if self._watch is not None:
            self._watch.saw(request, response)
            if response.status_code == 404 and self._watch.moot(request):  # the server forgot it: ended
                await response.aclose()
                return httpx2.Response(204, request=request)
        stream = response.stream
        is_events = response.headers.get("content-type", "").startswith("text/event-stream")
        if is_events and isinstance(stream, httpx2.AsyncByteStream):
            response.stream = _RewrittenStream(stream)
            if self._watch is not None:  # the session's listening stream: how it ends counts
                response.stream = self._watch.watched(request, response.stream)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def guarded_http_client(
    headers: Mapping[str, str] | None = None,
    auth: httpx2.Auth | None = None,
    refusal: AccessRefusal | None = None,
    watch: LinkWatch | None = None,
) -> httpx2.AsyncClient:
    """An HTTP client like the SDK's default (same timeouts) whose event streams are guarded;
    `headers` (e.g. `Authorization`) go with every request, `auth` (the OAuth provider) signs them,
    `refusal` notes the server's 401/403 answers, `watch` whether the server is gone."""
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=HTTP_READ_TIMEOUT_SECONDS)
    return httpx2.AsyncClient(
        timeout=timeout,
        headers=dict(headers or {}),
        auth=auth,
        transport=_GuardedTransport(httpx2.AsyncHTTPTransport(), refusal, watch),
    )


@asynccontextmanager
async def guarded_streamable_http_client(
    url: str,
    headers: Mapping[str, str] | None = None,
    auth: httpx2.Auth | None = None,
    refusal: AccessRefusal | None = None,
    watch: LinkWatch | None = None,
) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport on a guarded HTTP client (closed with the transport)."""
    async with (
        guarded_http_client(headers, auth, refusal, watch) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


# The SDK logs a line a stdio server wrote that is not a JSON-RPC message with a traceback, and
# goes on reading. A server that prints a banner or its own log to stdout is a common mistake, not
# a crash: the record becomes one warning quoting the line (cut, on one line). Private hook: the
# logger's name and the record's message (canary: tests/client/test_sdk_canaries.py).
_SDK_STDIO_LOGGER: Final = "mcp.client.stdio"
_SDK_STDIO_PARSE_FAILURE: Final = "Failed to parse JSONRPC message from server"
# Characters of the offending line quoted in that warning.
MAX_QUOTED_STDOUT_CHARS: Final = 200


class _OneLineParseFailure(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != _SDK_STDIO_PARSE_FAILURE or not record.exc_info:
            return True
        line: Any = ""
        exc = record.exc_info[1]
        if isinstance(exc, ValidationError):
            with suppress(IndexError, KeyError):
                line = exc.errors()[0]["input"]
        box = _spawned.get()  # the SDK's reader task runs in the context the server was started in
        who = f" '{box.label}'" if box is not None and box.label else ""
        record.msg = f"the stdio server{who} wrote a line that is not a JSON-RPC message (ignored): %r"
        record.args = (clean_text(str(line), limit=MAX_QUOTED_STDOUT_CHARS, multiline=False),)
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


logging.getLogger(_SDK_STDIO_LOGGER).addFilter(_OneLineParseFailure())


def transport_for(
    server: Any,
    handler: ElicitationHandler,
    *,
    url: str | None = None,
    argv: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    auth: httpx2.Auth | None = None,
    errlog: TextIO,
    bad_bytes: BadBytes | None = None,
    refusal: AccessRefusal | None = None,
    watch: LinkWatch | None = None,
) -> Any:
    """What the SDK's `Client` connects to: a guarded HTTP transport for `url`, a guarded stdio one
    for `argv` (or the SDK's `StdioServerParameters`), an in-process server as it is, or any other
    SDK transport wrapped in the guard. `bad_bytes` notes what a stdio server wrote that is not
    UTF-8 (see `stdio_guard`); `refusal` notes an HTTP server's 401/403 answers, `watch` whether
    it is gone (`LinkWatch`)."""
    if url is not None:
        transport = guarded_streamable_http_client(url, headers, auth, refusal, watch)
        return GuardedTransport(transport, handler)
    if argv:
        # The SDK merges `env` over its default (safe) environment.
        server = StdioServerParameters(command=argv[0], args=list(argv[1:]), env=dict(env) if env else None)
    if isinstance(server, MCPServer | Server):
        return server
    if isinstance(server, StdioServerParameters):
        stdio = stdio_client(guard_stdio(server), errlog=errlog)  # invalid UTF-8 ends the call at once
        return GuardedTransport(stdio if bad_bytes is None else StdioGuard(stdio, bad_bytes), handler)
    return GuardedTransport(server, handler)


def describe_server(server: object) -> str:
    """Where an SDK server object runs, for the prompt: its command line, or "in-process NAME"."""
    if isinstance(server, StdioServerParameters):
        return shlex.join([server.command, *server.args])
    if isinstance(server, MCPServer):
        return f"in-process {server.name}"
    return ""

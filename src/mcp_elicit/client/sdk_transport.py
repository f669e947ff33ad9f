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
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TextIO

import httpx2
import mcp_types as t
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.mcpserver import MCPServer

# Private hook: the SDK's own HTTP timeouts, so the guarded client behaves like the SDK's default.
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from pydantic import TypeAdapter, ValidationError

from mcp_elicit.client.sdk import MALFORMED_METHOD, ElicitationHandler, GuardedTransport
from mcp_elicit.client.stdio_guard import BadBytes, StdioGuard, guard_stdio

__all__ = [
    "InProcessServer",
    "StdioServerParameters",
    "describe_server",
    "guarded_http_client",
    "guarded_streamable_http_client",
    "rewrite_event",
    "transport_for",
]

InProcessServer = MCPServer[Any] | Server[Any]
"""An SDK server object run in this process (tests, demos): no transport, so no guard either."""

_MESSAGE = TypeAdapter[t.JSONRPCMessage](t.JSONRPCMessage)


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
    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        stream = response.stream
        is_events = response.headers.get("content-type", "").startswith("text/event-stream")
        if is_events and isinstance(stream, httpx2.AsyncByteStream):
            response.stream = _RewrittenStream(stream)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def guarded_http_client(headers: Mapping[str, str] | None = None) -> httpx2.AsyncClient:
    """An HTTP client like the SDK's default (same timeouts) whose event streams are guarded;
    `headers` (e.g. `Authorization`) go with every request."""
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    return httpx2.AsyncClient(
        timeout=timeout, headers=dict(headers or {}), transport=_GuardedTransport(httpx2.AsyncHTTPTransport())
    )


@asynccontextmanager
async def guarded_streamable_http_client(
    url: str, headers: Mapping[str, str] | None = None
) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport on a guarded HTTP client (closed with the transport)."""
    async with guarded_http_client(headers) as http, streamable_http_client(url, http_client=http) as streams:
        yield streams


def transport_for(
    server: Any,
    handler: ElicitationHandler,
    *,
    url: str | None = None,
    argv: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    errlog: TextIO,
    bad_bytes: BadBytes | None = None,
) -> Any:
    """What the SDK's `Client` connects to: a guarded HTTP transport for `url`, a guarded stdio one
    for `argv` (or the SDK's `StdioServerParameters`), an in-process server as it is, or any other
    SDK transport wrapped in the guard. `bad_bytes` notes what a stdio server wrote that is not
    UTF-8 (see `stdio_guard`)."""
    if url is not None:
        return GuardedTransport(guarded_streamable_http_client(url, headers), handler)
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

"""What the peer-client tests share: the reference server over a real transport, a count of the
`tools/call` requests that reach it, and the person who finishes a hand-off page some seconds after
their client accepted it."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from mcp_elicit.reference import build_reference_server
from tests.e2e.servers import reference_over_stdio, serving_app
from tests.server.handoff_support import Browser

# How long the person takes on the hand-off page after the client accepted it: longer than the
# SDK's and FastMCP's default 10 rounds took to run out (0.3 s) before retries were held.
PERSON_SECONDS = 3.0
# Bound on any one wait in these tests.
WAIT_BOUND_SECONDS = 30.0
LEGACY = "2025-11-25"
MODERN = "2026-07-28"


class CountingApp:
    """An ASGI wrapper that counts the JSON-RPC `tools/call` requests reaching the MCP endpoint."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.tool_calls = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return

        async def peek() -> Any:
            message = await receive()
            body = message.get("body", b"")
            if b'"tools/call"' in body:
                with suppress(ValueError):  # not JSON: the server answers it, nothing to count
                    self.tool_calls += json.loads(body).get("method") == "tools/call"
            return message

        await self.app(scope, peek, send)


@dataclass
class Reference:
    """The reference server as a peer client reaches it: a URL (HTTP) or a command (stdio)."""

    transport: str
    url: str | None = None
    app: CountingApp | None = None

    @property
    def target(self) -> Any:
        return self.url if self.url is not None else reference_over_stdio()

    @property
    def tool_calls(self) -> int | None:
        """`tools/call` requests seen on the wire (HTTP only; over stdio the tests count rounds)."""
        return self.app.tool_calls if self.app is not None else None


@asynccontextmanager
async def reference(transport: str) -> AsyncIterator[Reference]:
    if transport == "stdio":
        yield Reference("stdio")
        return
    app = CountingApp(build_reference_server().streamable_http_app())
    async with serving_app(app) as origin:
        yield Reference("http", f"{origin}/mcp", app)


@dataclass
class Person:
    """The person behind a client: once the client accepted a URL request, they take
    PERSON_SECONDS on the page, then save a key there."""

    urls: list[str] = field(default_factory=list)
    accepted: anyio.Event = field(default_factory=anyio.Event)
    finished_at: float | None = None

    def accept(self, url: str) -> None:
        self.urls.append(url)
        self.accepted.set()

    async def finish_page(self, seconds: float = PERSON_SECONDS) -> None:
        with anyio.fail_after(WAIT_BOUND_SECONDS):
            await self.accepted.wait()
        await anyio.sleep(seconds)  # the person reading and typing, not a synchronisation wait
        page = await Browser().enter_key(self.urls[-1])
        assert page.status == 200
        self.finished_at = time.monotonic()


async def open_page(url: str) -> None:
    """The person completes a page at once (the legacy -32042 path: the page before the retry)."""
    page = await Browser().enter_key(url)
    assert page.status == 200


class TsClient:
    """The running script: its events, one JSON object per line, read in order."""

    def __init__(self, process: Process, log: Path) -> None:
        self.process = process
        self.buffer = b""
        self.log = log  # the client's stderr, where a stdio server's own stderr goes too

    def logged(self) -> str:
        return self.log.read_text()

    async def next(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        with anyio.fail_after(WAIT_BOUND_SECONDS):
            while b"\n" not in self.buffer:
                self.buffer += await self.process.stdout.receive()
        line, _, self.buffer = self.buffer.partition(b"\n")
        event: dict[str, Any] = json.loads(line)
        return event

    async def until(self, name: str) -> dict[str, Any]:
        while (event := await self.next())["event"] != name:
            if event["event"] in ("result", "error"):
                raise AssertionError(f"expected {name}, got {event}")
        return event

    async def go_on(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(b"go\n")

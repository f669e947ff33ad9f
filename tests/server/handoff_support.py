"""Helpers for the hand-off tests: a browser that drives the pages, identities, servers, Redis."""

from __future__ import annotations

import html
import os
import re
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from mcp_elicit.server import (
    ElicitSettings,
    Handoffs,
    IdentityPolicy,
    KeyRing,
    Principal,
    TokenVault,
    install,
)
from mcp_elicit.testing import ManualClock

ISSUER = "https://idp.test"
ALICE = Principal("alice", ISSUER)
BOB = Principal("bob", ISSUER)
TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}
SECRET_VALUE = "sk-live-7f3c9a1b2d4e6f80"  # what every test types into a page; must never leak
MAX_REDIRECTS = 10


class StaticVerifier:
    """An MCP token verifier for tests: a fixed table of bearer tokens → subjects."""

    async def verify_token(self, token: str) -> AccessToken | None:
        subject = TOKENS.get(token)
        if subject is None:
            return None
        return AccessToken(
            token=token, client_id="test-client", scopes=[], subject=subject, claims={"iss": ISSUER}
        )


def auth_settings() -> AuthSettings:
    return AuthSettings(issuer_url=ISSUER, resource_server_url=None)  # type: ignore[arg-type]


async def cookie_login(request: Any) -> Principal | None:
    """A deployment's own browser login, as a test stands it in: the `test-user` cookie."""
    user = request.cookies.get("test-user")
    return Principal(user, ISSUER) if user else None


def make_handoffs(clock: ManualClock | None = None, **options: Any) -> Handoffs:
    options.setdefault("identity", IdentityPolicy(browser_login=cookie_login))
    vault = TokenVault(KeyRing.generate())
    return Handoffs(vault=vault, clock=clock or ManualClock(1_800_000_000.0), **options)


def make_server(
    hs: Handoffs, *, auth: bool = False, name: str = "handoff-test", **settings: Any
) -> MCPServer[Any]:
    server: MCPServer[Any]
    if auth:
        server = MCPServer(name, auth=auth_settings(), token_verifier=StaticVerifier())
    else:
        server = MCPServer(name)
    install(server, ElicitSettings(handoffs=hs, clock=hs.clock, **settings))
    return server


@dataclass
class Page:
    status: int
    url: str
    text: str
    headers: Any

    def form(self) -> tuple[str, dict[str, str]]:
        """The form's action and hidden fields."""
        action = re.search(r'<form method="post" action="([^"]+)"', self.text)
        if action is None:
            raise AssertionError(f"no form on the page (status {self.status})")
        hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', self.text))
        return html.unescape(action.group(1)), {k: html.unescape(v) for k, v in hidden.items()}


@dataclass
class Browser:
    """Drives the pages as a browser does: one cookie jar, redirects followed one by one.

    `headers` stand for what this browser always sends (a bearer token, say); `cookies` for a
    login the deployment set. `transport` lets tests serve an ASGI app without a socket.
    """

    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    transport: httpx2.AsyncBaseTransport | None = None
    history: list[Page] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.http = httpx2.AsyncClient(
            headers=self.headers, transport=self.transport, follow_redirects=False, timeout=10.0
        )
        for name, value in self.cookies.items():
            self.http.cookies.set(name, value)

    async def _keep(self, response: httpx2.Response) -> Page:
        page = Page(response.status_code, str(response.url), response.text, response.headers)
        self.history.append(page)
        return page

    async def open(self, url: str, *, follow: bool = True) -> Page:
        response = await self.http.get(url)
        for _ in range(MAX_REDIRECTS):
            if not follow or response.status_code not in (301, 302, 303, 307, 308):
                break
            await self._keep(response)
            response = await self.http.get(response.headers["location"])
        return await self._keep(response)

    async def post(self, url: str, data: dict[str, str], *, follow: bool = True, **headers: str) -> Page:
        response = await self.http.post(url, data=data, headers=headers)
        if follow and response.status_code in (301, 302, 303):
            await self._keep(response)
            return await self.open(response.headers["location"])
        return await self._keep(response)

    async def submit(self, page: Page, *, follow: bool = True, **fields: str) -> Page:
        action, hidden = page.form()
        return await self.post(action, {**hidden, **fields}, follow=follow)

    async def enter_key(self, url: str, secret: str = SECRET_VALUE) -> Page:
        """Open a hand-off link and save `secret` on its page."""
        page = await self.open(url)
        return await self.submit(page, secret=secret, action="save")

    def seen(self) -> str:
        return "\n".join(p.text for p in self.history)

    async def close(self) -> None:
        await self.http.aclose()


def asgi_browser(app: Any, *, client: tuple[str, int] = ("127.0.0.1", 50000), **kw: Any) -> Browser:
    return Browser(transport=httpx2.ASGITransport(app=app, client=client), **kw)


class RecordingTransport(httpx2.AsyncBaseTransport):
    """Wraps the MCP client's HTTP transport and keeps every byte the server sends back."""

    def __init__(self) -> None:
        self.inner = httpx2.AsyncHTTPTransport()
        self.received = bytearray()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        received = self.received

        class Tee(httpx2.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in response.stream:  # type: ignore[union-attr]
                    received.extend(chunk)
                    yield chunk

            async def aclose(self) -> None:
                await response.aclose()

        return httpx2.Response(
            response.status_code, headers=response.headers, stream=Tee(), extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def mcp_client(
    url: str,
    era: str,
    callback: Any = None,
    *,
    token: str | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    messages: Callable[[Any], Any] | None = None,
) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, transport=transport, timeout=httpx2.Timeout(30.0, read=60.0))
    return Client(
        streamable_http_client(url, http_client=http),
        mode=era,  # type: ignore[arg-type]
        elicitation_callback=callback,
        message_handler=messages,
    )


@dataclass
class UrlCallback:
    """An elicitation callback for URL requests: runs `drive(url)` (the person in the browser)
    before answering `action`, and keeps every request it was shown."""

    drive: Callable[[str], Any] | None = None
    action: str = "accept"
    seen: list[dict[str, Any]] = field(default_factory=list)
    skip_first: int = 0  # answer accept without opening the page this many times first

    async def __call__(self, context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        wire = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.seen.append(wire)
        if self.drive is not None and len(self.seen) > self.skip_first:
            await self.drive(wire["url"])
        return t.ElicitResult(action=self.action)  # type: ignore[arg-type]


@dataclass
class LateCallback:
    """An elicitation callback that accepts a URL request at once, before the person has finished
    the page; `answered` is set then, so the test can finish the page while the server holds."""

    seen: list[dict[str, Any]] = field(default_factory=list)
    answered: anyio.Event = field(default_factory=anyio.Event)

    async def __call__(self, context: Any, params: t.ElicitRequestParams) -> t.ElicitResult:
        self.seen.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        self.answered.set()
        return t.ElicitResult(action="accept")


class Notes:
    """A message handler that keeps the server notifications and lets a test wait for one."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        self.items.append(message)
        self._changed.set()
        self._changed = anyio.Event()

    def completions(self) -> list[str]:
        return [m.params.elicitation_id for m in self.items if isinstance(m, t.ElicitCompleteNotification)]

    async def wait_completion(self, elicitation_id: str, seconds: float = 10.0) -> None:
        with anyio.fail_after(seconds):
            while elicitation_id not in self.completions():
                await self._changed.wait()


def redis_url() -> str:
    """The test Redis (MCP_ELICIT_TEST_REDIS, else the local default when it answers); skips otherwise."""
    url = os.environ.get("MCP_ELICIT_TEST_REDIS")
    if url:
        return url
    import socket

    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=0.5).close()
    except OSError:
        pytest.skip("needs Redis: set MCP_ELICIT_TEST_REDIS (no server answers on 127.0.0.1:6379)")
    return "redis://127.0.0.1:6379/0"


@asynccontextmanager
async def redis_client() -> AsyncIterator[tuple[Any, str]]:
    """A Redis client and a key prefix unique to this test; the prefix's keys are removed after."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis_url())
    prefix = f"mcp-elicit-test:{uuid.uuid4().hex}:"
    try:
        yield client, prefix
    finally:
        keys = [k async for k in client.scan_iter(match=prefix + "*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()

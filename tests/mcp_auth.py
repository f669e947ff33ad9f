"""A real MCP authorization setup on 127.0.0.1 for tests: an authorization server built from the SDK's
own server-side pieces (`mcp.server.auth`: metadata, dynamic client registration, authorize, token,
refresh) plus token introspection (RFC 7662), and an MCP server over streamable HTTP that requires its
tokens (the SDK's `AuthSettings`: RFC 9728 metadata, 401 with `resource_metadata`).

Nobody signs in at `/authorize`: it approves at once as `provider.user` (or refuses with
`access_denied` when `provider.deny`), as a person at a browser would. `FollowingBrowser` is the
test's browser: it follows the authorization link with an HTTP client, through the redirect, to
the client's loopback callback, in the background as a real browser would.
"""

from __future__ import annotations

import base64
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    ProviderTokenVerifier,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, BaseModel, Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.e2e.servers import STARTUP_BOUND_SECONDS, _Server

INTROSPECTION_CLIENT = ("gateway-rs", "rs-secret-5d2e")  # the resource server's own credentials


@dataclass
class Provider:
    """The SDK's `OAuthAuthorizationServerProvider`, in memory, recording what it was asked."""

    user: str = "alice"
    deny: bool = False
    access_lifetime: int = 3600
    issuer: str = ""
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    authorize_requests: list[AuthorizationParams] = field(default_factory=list)
    grants: list[str] = field(default_factory=list)  # grant_type of each token issued
    introspected: list[str] = field(default_factory=list)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[str(client_info.client_id)] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.authorize_requests.append(params)
        if self.deny:
            raise AuthorizeError("access_denied", "the person refused")
        code = AuthorizationCode(
            code=secrets.token_urlsafe(16),
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=str(client.client_id),
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=self.user,
        )
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(self, client: Any, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, subject: str | None
    ) -> OAuthToken:
        token = f"at-{secrets.token_urlsafe(16)}"
        refresh = f"rt-{secrets.token_urlsafe(16)}"
        expires = int(time.time()) + self.access_lifetime
        self.access[token] = AccessToken(
            token=token,
            client_id=client_id,
            scopes=scopes,
            expires_at=expires,
            resource=resource,
            subject=subject,
            claims={"iss": self.issuer},
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        return OAuthToken(
            access_token=token,
            token_type="Bearer",
            expires_in=self.access_lifetime,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )

    async def exchange_authorization_code(
        self, client: Any, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.grants.append("authorization_code")
        code = authorization_code
        return self._issue(code.client_id, code.scopes, code.resource, code.subject)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: Any, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.grants.append("refresh_token")
        old = refresh_token
        return self._issue(old.client_id, scopes or old.scopes, old.resource, old.subject)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)

    def expire_all(self) -> None:
        """Every access token issued so far expires now (their refresh tokens still work)."""
        for token in self.access.values():
            token.expires_at = int(time.time()) - 1

    def token_for(self, user: str, resource: str | None = None) -> str:
        """An access token for `user`, as if they had signed in (for tests of the resource side)."""
        return self._issue("direct-client", [], resource, user).access_token

    async def introspect(self, request: Request) -> Response:
        """RFC 7662: the resource server authenticates; an unknown or expired token is inactive."""
        expected = base64.b64encode(":".join(INTROSPECTION_CLIENT).encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        token = str((await request.form()).get("token", ""))
        self.introspected.append(token)
        found = await self.load_access_token(token)
        if found is None:
            return JSONResponse({"active": False})
        body: dict[str, Any] = {
            "active": True,
            "client_id": found.client_id,
            "scope": " ".join(found.scopes),
            "sub": found.subject,
            "exp": found.expires_at,
            "iss": self.issuer,
            "token_type": "Bearer",
        }
        if found.resource:
            body["aud"] = found.resource
        return JSONResponse(body)

    def app(self, issuer: str) -> Starlette:
        self.issuer = issuer
        routes = create_auth_routes(
            provider=self,  # type: ignore[arg-type]
            issuer_url=AnyHttpUrl(issuer),
            client_registration_options=ClientRegistrationOptions(enabled=True),
        )
        return Starlette(routes=[*routes, Route("/introspect", self.introspect, methods=["POST"])])


@asynccontextmanager
async def serving_built(build: Callable[[str], Any]) -> AsyncIterator[str]:
    """Serve the ASGI app `build(origin)` on 127.0.0.1: the port is bound first, so the app can
    know its own URL (an authorization server's issuer, a resource server's metadata)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    origin = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = _Server(uvicorn.Config(build(origin), log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        with anyio.fail_after(STARTUP_BOUND_SECONDS):
            await server.ready.wait()
        try:
            yield origin
        finally:
            server.should_exit = True


class Guests(BaseModel):
    guests: int = Field(2, ge=1, le=10)


def protected_mcp(issuer: str, origin: str, provider: Provider) -> Any:
    """An MCP server (the SDK's `MCPServer`, pushing a question) that requires the issuer's tokens."""
    server = MCPServer(
        "protected-peer",
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(issuer),
            resource_server_url=AnyHttpUrl(f"{origin}/mcp"),
            validate_token_resource=False,
        ),
        token_verifier=ProviderTokenVerifier(provider),  # type: ignore[arg-type]
    )

    @server.tool()
    async def book(ctx: Context) -> str:
        token = get_access_token()
        who = token.subject if token is not None else "nobody"
        answer = await ctx.elicit("How many guests?", schema=Guests)
        if answer.action != "accept":
            return f"No booking ({answer.action})."
        return f"Booked for {answer.data.guests} ({who})."

    return server.streamable_http_app()


@asynccontextmanager
async def authorization_setup(provider: Provider) -> AsyncIterator[str]:
    """The authorization server and the protected MCP server; yields the MCP server's URL."""
    async with (
        serving_built(provider.app) as issuer,
        serving_built(lambda origin: protected_mcp(issuer, origin, provider)) as origin,
    ):
        yield f"{origin}/mcp"


@dataclass
class FollowingBrowser:
    """The test's browser: follows the authorization link to the loopback callback, in the background."""

    tg: Any
    opened: list[str] = field(default_factory=list)
    landed: list[tuple[int, str]] = field(default_factory=list)  # the callback page's status and URL

    async def __call__(self, url: str) -> None:
        self.opened.append(url)
        self.tg.start_soon(self.follow, url)

    async def follow(self, url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=True, timeout=30) as http:
            response = await http.get(url)
        self.landed.append((response.status_code, str(response.url)))

"""Who a hand-off is for, and who is looking at its page (spec U9).

A URL hand-off is bound to a person when it is minted and checked against the person who
opens it. Both sides must name the same `Principal` (issuer and subject); the client that
asked (`client_id`) is recorded too, but a person is the same person from any client.

Where the identity comes from, in order:

- MCP side (the tool call): the MCP authorization access token (`sub`, and `iss` when the
  token verifier supplies it; a token without `sub` stands for its client). Otherwise the
  configured development identity `dev_user`. Otherwise `IdentityRequired`: a hand-off is
  never bound to a session id alone (U9: "state MUST NOT hang on session ids alone").
- Page side (the browser): the deployment's own browser login (`browser_login`, for
  example its web session cookie) when configured; otherwise a bearer token on the page
  request, verified by the same token verifier as MCP requests; otherwise `dev_user`, and
  only for a browser on a loopback address.

The development identity says "everyone on this machine is `dev_user`": right for one person
running a server on their own laptop, wrong for anything shared. It only works for loopback
peers on the page side, so a server bound to a public interface cannot be driven by it.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp_elicit.errors import IdentityRequired
from mcp_elicit.server import sdk

__all__ = ["DEV_ISSUER", "BrowserLogin", "IdentityPolicy", "Principal", "is_loopback_host"]

# The issuer recorded for the development identity, so it can never equal a real token's
# (issuer, subject) pair.
DEV_ISSUER = "urn:mcp-elicit:dev-identity"


@dataclass(frozen=True, slots=True)
class Principal:
    """A person: `subject` within `issuer` (None when the token verifier gives no issuer).

    `client_id` is the MCP client the request came through; it is evidence, not identity,
    and takes no part in `key` or `same_person`.
    """

    subject: str
    issuer: str | None = None
    client_id: str | None = None

    @property
    def key(self) -> str:
        """A stable string naming the person (JSON of issuer and subject: no separator games)."""
        return json.dumps([self.issuer, self.subject], separators=(",", ":"), ensure_ascii=True)

    def same_person(self, other: Principal | None) -> bool:
        return other is not None and hmac.compare_digest(self.key.encode(), other.key.encode())

    @property
    def display(self) -> str:
        """What the page shows as "signed in as" (the subject; never a token)."""
        return self.subject


BrowserLogin = Callable[[Any], Awaitable[Principal | None]]
"""The deployment's own check of who is at the browser: a Starlette request in, a Principal out."""


def is_loopback_host(host: str | None) -> bool:
    if not host:
        return False
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _from_token(token: Any) -> Principal:
    client_id, issuer, subject = sdk.token_principal(token)
    if subject is None:  # a client-credentials token: the client is the principal
        return Principal(f"client:{client_id}", issuer, client_id)
    return Principal(subject, issuer, client_id)


@dataclass(frozen=True)
class IdentityPolicy:
    """Where identities come from; see the module docstring for the order.

    `dev_user`: the development identity used when a request has no MCP authorization (and,
    on a page, for loopback browsers only). None (the default) means "MCP authorization or
    nothing". `browser_login`: the deployment's own browser session check for the pages.
    """

    dev_user: str | None = None
    browser_login: BrowserLogin | None = None

    def of_request(self, ctx: Any) -> Principal:
        """The person behind an MCP request; IdentityRequired when there is none."""
        token = sdk.access_token()
        if token is not None:
            return _from_token(token)
        if self.dev_user is not None:
            return Principal(self.dev_user, DEV_ISSUER)
        raise IdentityRequired("mcp")

    async def of_browser(self, request: Any) -> Principal | None:
        """The person at the browser, or None when the page cannot tell."""
        if self.browser_login is not None:
            person = await self.browser_login(request)
            if person is not None:
                return person
        token = sdk.browser_access_token(request)
        if token is not None:
            return _from_token(token)
        peer = request.client.host if request.client is not None else None
        if self.dev_user is not None and is_loopback_host(peer):
            return Principal(self.dev_user, DEV_ISSUER)
        return None

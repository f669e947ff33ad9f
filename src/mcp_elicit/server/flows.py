"""The two built-in out-of-band flows: enter an API key, or connect an account with OAuth.

A flow only decides what its page does with what the person submitted; every check of *who*
submitted it (identity, browser marker, CSRF token, single use, expiry) happens in `pages`
before a flow sees anything. A flow answers with a step value:

    Done()                 the credential is in the vault; the hand-off is complete
    Declined()             the person pressed Cancel on the page (or denied at the provider)
    Again(error)           show the form again with a stable error code (bad input)
    Redirect(url, ...)     send the browser on (OAuth: to the authorization server)
    Failed(reason)         give up (the provider refused the code, say); terminal

What a flow obtains goes into the token vault under (user, provider) and nowhere else: not
into the record, not into a log line, never back to the MCP client (U10). The OAuth flow is
the server's own client at the third party; the MCP client's token is never sent there (no
token passthrough).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx2
from authlib.common.security import generate_token
from authlib.oauth2.auth import ClientAuth
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from mcp_elicit.core.urls import check_url
from mcp_elicit.errors import ConfigError
from mcp_elicit.server.stores import HandoffRecord
from mcp_elicit.server.vault import TokenVault

__all__ = [
    "MAX_OAUTH_RESPONSE_BYTES",
    "MAX_SECRET_CHARS",
    "OAUTH_HTTP_TIMEOUT_SECONDS",
    "OAUTH_STATE_CHARS",
    "OAUTH_VERIFIER_CHARS",
    "Again",
    "ApiKeyHandoff",
    "Declined",
    "Done",
    "Failed",
    "FlowContext",
    "FlowStep",
    "HandoffFlow",
    "OAuthClient",
    "OAuthHandoff",
    "Redirect",
]

logger = logging.getLogger("mcp_elicit.server.flows")

# Characters in a submitted secret. Real API keys are 20–200 characters; 4,096 leaves room for a
# PEM-ish token while refusing a pasted file.
MAX_SECRET_CHARS = 4_096
# PKCE code verifier length (RFC 7636 §4.1 allows 43–128); 64 characters of [A-Za-z0-9] carry
# about 380 bits.
OAUTH_VERIFIER_CHARS = 64
# OAuth `state` length: 32 characters of [A-Za-z0-9], about 190 bits, unguessable.
OAUTH_STATE_CHARS = 32
# How long the token exchange with the third party may take before the flow fails.
OAUTH_HTTP_TIMEOUT_SECONDS = 15.0
# The largest token endpoint response read; token responses are a few KB.
MAX_OAUTH_RESPONSE_BYTES = 65_536


@dataclass(frozen=True)
class Done:
    pass


@dataclass(frozen=True)
class Declined:
    pass


@dataclass(frozen=True)
class Again:
    error: str


@dataclass(frozen=True)
class Redirect:
    """Send the browser to `location`; the callback must bring back `oauth_state`, which must
    start with "<hand-off id>."."""

    location: str
    oauth_state: str
    oauth_verifier: str


@dataclass(frozen=True)
class Failed:
    reason: str


FlowStep = Done | Declined | Again | Redirect | Failed


@dataclass(frozen=True)
class FlowContext:
    """What a flow may use once the page checks passed: the vault, the user's key, the record,
    the OAuth redirect URI of this server and the clock."""

    vault: TokenVault
    user: str
    record: HandoffRecord
    callback_url: str
    now: float


class HandoffFlow:
    """Base of the flows. `provider` names the third party and the vault row; `key` names the
    flow in records (so every replica must register the same flows under the same keys)."""

    kind: ClassVar[str] = "custom"
    template: ClassVar[str] = "api_key.html"
    provider: str
    title: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.provider}"

    @property
    def display_name(self) -> str:
        return self.title or self.provider

    def default_message(self) -> str:
        return f"Connect {self.display_name} on the server's own page."

    async def satisfied(self, vault: TokenVault, user: str) -> bool:
        """True when the vault already holds a readable credential for this user."""
        return await vault.has(user, self.provider)

    def page_vars(self) -> dict[str, Any]:
        return {}

    def form_action_origins(self) -> tuple[str, ...]:
        """Origins the page's form may lead to besides its own (CSP form-action)."""
        return ()

    async def submit(self, ctx: FlowContext, form: Mapping[str, str]) -> FlowStep:
        raise NotImplementedError

    async def callback(self, ctx: FlowContext, params: Mapping[str, str]) -> FlowStep:
        return Failed("no_callback")


def _bad_secret(value: str) -> str | None:
    if not value:
        return "empty"
    if len(value) > MAX_SECRET_CHARS:
        return "too_long"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value):
        return "control_chars"
    return None


@dataclass(frozen=True, eq=False)
class ApiKeyHandoff(HandoffFlow):
    """The person types a secret (an API key) into a page this server hosts; it goes straight
    into the vault. `check` may verify it with the provider first (False: ask again)."""

    provider: str
    title: str = ""
    label: str = "API key"
    help: str = ""
    check: Callable[[str], Awaitable[bool]] | None = field(default=None, repr=False)

    kind: ClassVar[str] = "api_key"
    template: ClassVar[str] = "api_key.html"

    def page_vars(self) -> dict[str, Any]:
        return {"label": self.label, "help": self.help, "max_chars": MAX_SECRET_CHARS}

    async def submit(self, ctx: FlowContext, form: Mapping[str, str]) -> FlowStep:
        if form.get("action") == "cancel":
            return Declined()
        value = form.get("secret", "").strip()
        problem = _bad_secret(value)
        if problem is not None:
            return Again(problem)
        if self.check is not None and not await self.check(value):
            return Again("rejected")
        await ctx.vault.put(ctx.user, self.provider, {"type": "api_key", "value": value})
        return Done()


def _checked_endpoint(url: str, name: str) -> str:
    verdict = check_url(url)
    if verdict.verdict == "block" or verdict.canonical is None:
        raise ConfigError(name, f"not an https (or loopback http) URL: {', '.join(verdict.reasons)}")
    return verdict.canonical


def _origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


@dataclass(frozen=True, eq=False)
class OAuthClient:
    """This server's registration at the third party (authorization code + PKCE S256).

    `issuer`, when set, must come back as the `iss` callback parameter (RFC 9207, mix-up
    defence). `token_auth_method` is authlib's: client_secret_basic (default with a secret),
    client_secret_post, or none (a public client).
    """

    authorize_url: str
    token_url: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    scope: str | None = None
    token_auth_method: str | None = None
    issuer: str | None = None
    extra_authorize_params: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "authorize_url", _checked_endpoint(self.authorize_url, "authorize_url"))
        object.__setattr__(self, "token_url", _checked_endpoint(self.token_url, "token_url"))

    @property
    def auth_method(self) -> str:
        if self.token_auth_method:
            return self.token_auth_method
        return "client_secret_basic" if self.client_secret else "none"


@dataclass(frozen=True, eq=False)
class OAuthHandoff(HandoffFlow):
    """The person connects their account at a third party; the tokens land in the vault."""

    provider: str
    client: OAuthClient
    title: str = ""
    transport: httpx2.AsyncBaseTransport | None = field(default=None, repr=False)

    kind: ClassVar[str] = "oauth"
    template: ClassVar[str] = "oauth.html"

    def form_action_origins(self) -> tuple[str, ...]:
        return (_origin(self.client.authorize_url),)

    async def submit(self, ctx: FlowContext, form: Mapping[str, str]) -> FlowStep:
        if form.get("action") == "cancel":
            return Declined()
        verifier = generate_token(OAUTH_VERIFIER_CHARS)
        # The hand-off id leads the state, so the callback (one fixed redirect URI for every
        # hand-off) can find the record; the random part is what the callback must match.
        state = f"{ctx.record.id}.{generate_token(OAUTH_STATE_CHARS)}"
        location = prepare_grant_uri(
            self.client.authorize_url,
            client_id=self.client.client_id,
            response_type="code",
            redirect_uri=ctx.callback_url,
            scope=self.client.scope,
            state=state,
            code_challenge=create_s256_code_challenge(verifier),
            code_challenge_method="S256",
            **dict(self.client.extra_authorize_params),
        )
        return Redirect(location, state, verifier)

    async def callback(self, ctx: FlowContext, params: Mapping[str, str]) -> FlowStep:
        if params.get("error"):
            return Declined() if params.get("error") == "access_denied" else Failed("authorization_error")
        if self.client.issuer is not None and params.get("iss") != self.client.issuer:
            return Failed("issuer_mismatch")
        code = params.get("code")
        if not code or ctx.record.oauth_verifier is None:
            return Failed("no_code")
        body = prepare_token_request(
            "authorization_code",
            code=code,
            redirect_uri=ctx.callback_url,
            code_verifier=ctx.record.oauth_verifier,
        )
        headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
        auth = ClientAuth(self.client.client_id, self.client.client_secret, self.client.auth_method)
        url, headers, body = auth.prepare("POST", self.client.token_url, headers, body)
        token = await self._exchange(url, headers, body)
        if token is None:
            return Failed("token_error")
        token.setdefault("obtained_at", ctx.now)
        await ctx.vault.put(ctx.user, self.provider, {"type": "oauth", "token": token})
        return Done()

    async def _exchange(self, url: str, headers: dict[str, str], body: str) -> dict[str, Any] | None:
        """POST the code to the token endpoint; the token response, or None (never logged)."""
        try:
            async with httpx2.AsyncClient(
                timeout=OAUTH_HTTP_TIMEOUT_SECONDS, follow_redirects=False, transport=self.transport
            ) as http:
                response = await http.post(url, content=body.encode(), headers=headers)
        except httpx2.HTTPError as exc:
            logger.warning("oauth: token endpoint of %s unreachable (%s)", self.provider, type(exc).__name__)
            return None
        if response.status_code != 200 or len(response.content) > MAX_OAUTH_RESPONSE_BYTES:
            logger.warning("oauth: token endpoint of %s answered %s", self.provider, response.status_code)
            return None
        try:
            token = response.json()
        except ValueError:
            return None
        if not isinstance(token, dict) or not isinstance(token.get("access_token"), str):
            return None
        return token

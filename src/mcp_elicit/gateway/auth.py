"""Downstream identity by OAuth: the HTTP gateway as an OAuth protected resource.

With an `oauth` object in the gateway's configuration (instead of the static `users` map),
`mcp-elicit gateway --listen` publishes RFC 9728 protected resource metadata at
`/.well-known/oauth-protected-resource/mcp` naming the authorization server, answers a request
without a valid token 401 with `WWW-Authenticate: Bearer ..., resource_metadata="..."`, and checks
each token by asking the authorization server (token introspection, RFC 7662). The user is the
token's `sub`: every question, hand-off and completion is bound to it, as with the token map.

```json
"oauth": {"issuer": "https://auth.example.com",
          "introspectionEndpoint": "https://auth.example.com/oauth/introspect",
          "clientId": "mcp-gateway", "clientSecretEnv": "GATEWAY_INTROSPECTION_SECRET",
          "resource": "https://gateway.example.com/mcp", "scopes": ["mcp"], "audience": true}
```

`resource` (default: `http://HOST:PORT/mcp` of `--listen`) is the URL clients connect to; with
`audience` (the default) a token must name it in `aud` (RFC 8707 / RFC 9068), so a token issued for
another server is refused. The SDK's server-side pieces do the HTTP part (`gateway/sdk.py`: the
bearer middleware, the metadata route); this module holds the settings and the introspection.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import httpx2

from mcp_elicit.errors import ConfigError

__all__ = [
    "INTROSPECTION_CACHE_SECONDS",
    "INTROSPECTION_TIMEOUT_SECONDS",
    "MAX_INTROSPECTION_CACHE",
    "MAX_INTROSPECTION_RESPONSE_BYTES",
    "GatewayOAuth",
    "Introspected",
    "Introspection",
    "mcp_url",
    "parse_oauth",
]

# Seconds one introspection request to the authorization server may take; past it the token is
# refused (the request gets 401), never let through.
INTROSPECTION_TIMEOUT_SECONDS: Final = 10.0
# Bytes of an introspection response read; an answer is a small JSON object.
MAX_INTROSPECTION_RESPONSE_BYTES: Final = 65_536
# Seconds an introspection answer is reused for the same token (never past the token's `exp`): a
# revoked token keeps working at most this long; every request of a session would otherwise cost
# a round trip to the authorization server.
INTROSPECTION_CACHE_SECONDS: Final = 30.0
# Tokens whose answers are kept at once; the oldest go first.
MAX_INTROSPECTION_CACHE: Final = 10_000

_LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True, slots=True)
class GatewayOAuth:
    """The `oauth` object of the gateway's configuration (see the module docstring)."""

    issuer: str
    introspection_endpoint: str
    client_id: str
    client_secret: str
    resource: str | None = None
    scopes: tuple[str, ...] = ()
    audience: bool = True


def mcp_url(host: str, port: int) -> str:
    """The gateway's address at `host`:`port` (`--listen`): an IPv6 address goes in brackets."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"


def _url(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise ConfigError(where, "must be an https:// URL")
    if value.startswith("http://") and urlsplit(value).hostname not in _LOOPBACK:
        raise ConfigError(where, "must be https:// (plain http only on loopback)")
    return value


def parse_oauth(raw: Any, environ: Mapping[str, str] | None = None) -> GatewayOAuth | None:
    """The `oauth` object, or None when absent; `ConfigError` naming the key otherwise."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError("oauth", "must be an object")
    env = os.environ if environ is None else environ
    client_id = raw.get("clientId")
    if not isinstance(client_id, str) or not client_id:
        raise ConfigError("oauth.clientId", "the gateway's client id at the introspection endpoint")
    secret = raw.get("clientSecret")
    secret_env = raw.get("clientSecretEnv")
    if isinstance(secret_env, str) and secret_env:
        secret = env.get(secret_env)
        if not secret:
            raise ConfigError("oauth.clientSecretEnv", f"${secret_env} is not set")
    if not isinstance(secret, str) or not secret:
        raise ConfigError(
            "oauth.clientSecret", "give clientSecretEnv (an environment variable) or clientSecret"
        )
    scopes = raw.get("scopes", [])
    if not isinstance(scopes, list) or not all(isinstance(s, str) and s for s in scopes):
        raise ConfigError("oauth.scopes", "must be a list of scope names")
    audience = raw.get("audience", True)
    if not isinstance(audience, bool):
        raise ConfigError("oauth.audience", "must be true or false")
    resource = raw.get("resource")
    return GatewayOAuth(
        issuer=_url(raw.get("issuer"), "oauth.issuer"),
        introspection_endpoint=_url(raw.get("introspectionEndpoint"), "oauth.introspectionEndpoint"),
        client_id=client_id,
        client_secret=secret,
        resource=None if resource is None else _url(resource, "oauth.resource"),
        scopes=tuple(scopes),
        audience=audience,
    )


@dataclass(frozen=True, slots=True)
class Introspected:
    """An active token, as the authorization server described it (RFC 7662 §2.2)."""

    subject: str
    client_id: str
    scopes: tuple[str, ...]
    expires_at: int | None
    audience: tuple[str, ...]
    issuer: str | None

    def resource_for(self, resource: str) -> str | None:
        """The entry of `aud` that names `resource` (a trailing slash aside), else None."""
        want = resource.removesuffix("/")
        return next((a for a in self.audience if a.removesuffix("/") == want), None)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def read_answer(body: Any, now: float) -> Introspected | None:
    """An introspection answer as an active token, or None (inactive, expired, no subject)."""
    if not isinstance(body, dict) or body.get("active") is not True:
        return None
    subject = body.get("sub")
    if not isinstance(subject, str) or not subject:
        return None  # no person to bind the questions to
    exp = body.get("exp")
    expires_at = exp if isinstance(exp, int) and not isinstance(exp, bool) else None
    if expires_at is not None and expires_at <= now:
        return None
    scope = body.get("scope")
    issuer = body.get("iss")
    return Introspected(
        subject=subject,
        client_id=str(body.get("client_id") or ""),
        scopes=tuple(scope.split()) if isinstance(scope, str) else (),
        expires_at=expires_at,
        audience=_strings(body.get("aud")),
        issuer=issuer if isinstance(issuer, str) else None,
    )


class Introspection:
    """Asks the authorization server about tokens (RFC 7662), with a short bounded cache.

    Tokens are cached under their SHA-256 digest, never as themselves. Any failure (the server
    unreachable, slow, an error status, a body that is not a JSON object) refuses the token."""

    def __init__(self, settings: GatewayOAuth, *, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.clock = clock
        self._cache: dict[bytes, tuple[float, Introspected | None]] = {}
        self.requests = 0  # round trips made to the authorization server

    async def check(self, token: str) -> Introspected | None:
        key = hashlib.sha256(token.encode()).digest()
        now = self.clock()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1] if cached[1] is None or _alive(cached[1], now) else None
        found = await self._ask(token, now)
        until = now + INTROSPECTION_CACHE_SECONDS
        if found is not None and found.expires_at is not None:
            until = min(until, float(found.expires_at))
        if len(self._cache) >= MAX_INTROSPECTION_CACHE:
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
            while len(self._cache) >= MAX_INTROSPECTION_CACHE:
                self._cache.pop(next(iter(self._cache)))
        self._cache[key] = (until, found)
        return found

    async def _ask(self, token: str, now: float) -> Introspected | None:
        self.requests += 1
        s = self.settings
        form = {"token": token, "token_type_hint": "access_token"}
        body = b""
        try:
            # A client per request: nothing is left open when the gateway stops.
            async with (
                httpx2.AsyncClient(timeout=INTROSPECTION_TIMEOUT_SECONDS) as http,
                http.stream(
                    "POST", s.introspection_endpoint, data=form, auth=(s.client_id, s.client_secret)
                ) as response,
            ):
                if response.status_code != 200:
                    return None
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_INTROSPECTION_RESPONSE_BYTES:
                        return None
            return read_answer(json.loads(body), now)
        except (httpx2.HTTPError, ValueError):
            return None


def _alive(found: Introspected, now: float) -> bool:
    return found.expires_at is None or found.expires_at > now

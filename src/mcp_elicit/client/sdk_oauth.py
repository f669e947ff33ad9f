"""The client side's SDK boundary for signing in: the SDK's OAuth client flow, with this kit's
token file and loopback callback (`client/oauth.py`), over the guarded HTTP client of
`client/sdk_transport.py`. `sign_in` is what `ElicitClient.sign_in` runs.

Private SDK hooks here (canaries in tests/client/test_sdk_canaries.py): the provider's
`_initialize` and its context's fields, and the logger name and message of the flow's failures.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from contextlib import suppress
from typing import Any, Final

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)
from pydantic import AnyUrl, ValidationError

from mcp_elicit.client.oauth import LoopbackCallback, OAuthLogin, TokenFile
from mcp_elicit.client.sdk_transport import guarded_http_client
from mcp_elicit.core.text import clean_text
from mcp_elicit.errors import AuthorizationFailed

__all__ = ["sign_in"]

# The SDK logs every failure of its OAuth flow with a traceback before re-raising it; `sign_in`
# turns each into one `AuthorizationFailed`, so the record is dropped (an ordinary outcome, M-rule:
# one line, never a traceback). Private hook: the logger's name and the record's message.
_SDK_OAUTH_LOGGER: Final = "mcp.client.auth.oauth2"
_SDK_OAUTH_FAILURE: Final = "OAuth flow error"


class _DropFlowTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != _SDK_OAUTH_FAILURE


_FILTER = _DropFlowTraceback()


class _StoredTokens:
    """The SDK's `TokenStorage` over one server's entry of the token file."""

    def __init__(self, file: TokenFile, server: str) -> None:
        self.file, self.server = file, server

    def _load(self, key: str, model: Any) -> Any:
        raw = self.file.entry(self.server).get(key)
        try:
            return model.model_validate(raw) if isinstance(raw, dict) else None
        except ValidationError:
            return None  # an entry this SDK cannot read: sign in again

    async def get_tokens(self) -> OAuthToken | None:
        found = self._load("tokens", OAuthToken)
        return found if isinstance(found, OAuthToken) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        dumped = tokens.model_dump(mode="json", exclude_none=True)
        self.file.update(self.server, tokens=dumped, expires_at=expires_at)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        found = self._load("client_info", OAuthClientInformationFull)
        return found if isinstance(found, OAuthClientInformationFull) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.file.update(self.server, client_info=client_info.model_dump(mode="json", exclude_none=True))


class _KitOAuthProvider(OAuthClientProvider):
    """The SDK's provider, plus what it does not keep between runs: the token's expiry and the
    authorization server's metadata. Without them a token that expired since the last run is sent,
    refused, and the person is sent through the browser again instead of the SDK refreshing it."""

    def __init__(self, *args: Any, stored: _StoredTokens, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._stored = stored

    async def _initialize(self) -> None:  # private hook (canary in tests/client/test_sdk_canaries.py)
        await super()._initialize()
        entry = self._stored.file.entry(self._stored.server)
        expires_at = entry.get("expires_at")
        if isinstance(expires_at, int | float) and self.context.current_tokens is not None:
            self.context.token_expiry_time = float(expires_at)
        metadata = entry.get("metadata")
        if isinstance(metadata, dict) and self.context.oauth_metadata is None:
            with suppress(ValidationError):
                self.context.oauth_metadata = OAuthMetadata.model_validate(metadata)


def _registered_port(entry: Mapping[str, Any]) -> int:
    """The loopback port the stored registration was made for (its redirect URI must match)."""
    uris = (entry.get("client_info") or {}).get("redirect_uris") or []
    try:
        port = httpx2.URL(str(uris[0])).port if uris else None
    except (httpx2.InvalidURL, IndexError):
        port = None
    return port or 0


async def _probe(http: httpx2.AsyncClient, url: str) -> httpx2.Response:
    """A `ping` with no session: harmless, and answered 401 by a server that requires auth."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    return await http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "ping"}, headers=headers)


def _asks_for_oauth(response: httpx2.Response) -> bool:
    """A 401 carrying the MCP authorization spec's signal: `WWW-Authenticate: Bearer resource_metadata=`."""
    challenge = response.headers.get("www-authenticate", "")
    return response.status_code == 401 and "resource_metadata=" in challenge


async def sign_in(url: str, headers: Mapping[str, str], login: OAuthLogin) -> httpx2.Auth | None:
    """Sign in to the MCP server at `url` when it needs it, with the SDK's OAuth client flow.

    Returns the provider to put on the connection's HTTP client (it adds the token and refreshes
    it), or None when `login.when == "asked"` and the server did not ask. Raises
    `AuthorizationFailed` (one line, no traceback) when the sign-in does not complete.
    """
    logging.getLogger(_SDK_OAUTH_LOGGER).addFilter(_FILTER)
    file = login.tokens()
    entry = file.entry(url)
    try:
        if login.when == "asked" and not entry.get("tokens"):
            async with guarded_http_client(headers) as http:
                try:
                    probe = await _probe(http, url)
                except httpx2.TransportError:  # nothing answers there: no sign-in; connecting says why
                    return None
                if not _asks_for_oauth(probe):
                    return None
        callback = LoopbackCallback(url, login, port=_registered_port(entry))
        try:
            await callback.bind()
        except OSError:  # the registered port is taken: register again on a free one
            file.update(url, client_info=None)
            callback.port = 0
            await callback.bind()
        stored = _StoredTokens(file, url)
        metadata = OAuthClientMetadata(
            redirect_uris=[AnyUrl(callback.redirect_uri)],
            token_endpoint_auth_method="none",  # noqa: S106 - a native app is a public client (RFC 8252 §8.4)
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=login.scope,
            client_name=login.client_name,
        )

        async def answer() -> AuthorizationCodeResult:
            result = await callback.wait()
            return AuthorizationCodeResult(code=result.code, state=result.state, iss=result.iss)

        provider = _KitOAuthProvider(
            url, metadata, stored, redirect_handler=callback.redirect, callback_handler=answer, stored=stored
        )
        try:
            async with guarded_http_client(headers, provider) as http:
                response = await _probe(http, url)
        finally:
            await callback.close()
    except OAuthFlowError as exc:
        raise AuthorizationFailed(url, "failed", _one_line(exc)) from None
    except httpx2.HTTPError as exc:
        raise AuthorizationFailed(url, "failed", f"{type(exc).__name__}: {_one_line(exc)}") from None
    if response.status_code in (401, 403):
        raise AuthorizationFailed(url, "refused", f"HTTP {response.status_code} with the new token")
    found = provider.context.oauth_metadata
    if found is not None:
        file.update(url, metadata=found.model_dump(mode="json", exclude_none=True))
    return provider


def _one_line(exc: BaseException) -> str:
    return clean_text(str(exc) or type(exc).__name__, limit=300, multiline=False)

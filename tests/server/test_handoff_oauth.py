"""Connecting a third-party account: authorization code + PKCE through authlib, against a local server.

The tokens land in the vault bound to the person; the MCP client's own token never goes to the
third party (U10, no token passthrough); the callback is single use and bound to the browser
and person that started it (U9).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from mcp.server.mcpserver import Context

from mcp_elicit.errors import ConfigError
from mcp_elicit.server import Handoffs, IdentityPolicy, OAuthClient, OAuthHandoff, handoff
from mcp_elicit.server.identity import DEV_ISSUER, Principal
from mcp_elicit.server.stores import DECLINED, DONE, FAILED, OPENED, HandoffRecord
from tests.e2e.servers import serving_app, serving_http
from tests.server.handoff_support import (
    ALICE,
    Browser,
    UrlCallback,
    make_handoffs,
    make_server,
    mcp_client,
)
from tests.server.oauth_server import LocalAuthorizationServer
from tests.support import text_of

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


def oauth_flow(auth: LocalAuthorizationServer, origin: str, *, issuer: str | None = None) -> OAuthHandoff:
    client = OAuthClient(
        authorize_url=f"{origin}/authorize",
        token_url=f"{origin}/token",
        client_id=auth.client_id,
        client_secret=auth.client_secret,
        scope="repo read:user",
        issuer=issuer if issuer is not None else origin,
    )
    return OAuthHandoff(provider="codehost", client=client, title="CodeHost")


@dataclass
class Rig:
    auth: LocalAuthorizationServer
    hs: Handoffs
    flow: OAuthHandoff
    origin: str

    async def mint(self, person: Principal = ALICE) -> HandoffRecord:
        return await self.hs.mint(None, person, self.flow, "Connect CodeHost to list your repositories.")

    async def status(self, record: HandoffRecord) -> str:
        found = await self.hs.store.get(record.id)
        assert found is not None
        return found.status

    async def token(self, person: Principal = ALICE) -> Any:
        secret = await self.hs.vault.get(person.key, "codehost")
        return None if secret is None else secret.reveal()


@asynccontextmanager
async def rig(*, issuer: str | None = None) -> AsyncIterator[Rig]:
    """The authorization server and a hand-off server (pages for ALICE and BOB via a login cookie)."""
    auth = LocalAuthorizationServer()
    async with serving_app(auth.app()) as as_origin:
        auth.issuer = as_origin
        flow = oauth_flow(auth, as_origin, issuer=issuer)
        hs = make_handoffs(flows=[flow])
        async with serving_http(make_server(hs)) as url:
            origin = url.removesuffix("/mcp")
            hs.public_base_url = origin  # known only once the port is
            auth.redirect_uri = f"{origin}/elicit/oauth/callback"
            yield Rig(auth, hs, flow, origin)


def person(user: str = "alice") -> Browser:
    return Browser(cookies={"test-user": user})


async def connect(browser: Browser, url: str) -> Any:
    page = await browser.open(url)
    return await browser.submit(page, action="continue")


async def test_a_person_connects_an_account_and_only_the_vault_gets_the_tokens() -> None:
    async with rig() as r:
        record = await r.mint()
        alice = person()
        done = await connect(alice, record.url)
        assert done.status == 200
        assert await r.status(record) == DONE
        token = await r.token()
        assert token["type"] == "oauth"
        assert token["token"]["access_token"] == r.auth.issued[0]
        assert r.auth.issued[0] not in alice.seen()
        [asked] = r.auth.authorize_requests
        assert asked["code_challenge_method"] == "S256"
        assert asked["scope"] == "repo read:user"
        assert asked["state"].startswith(f"{record.id}.")
        [exchange] = r.auth.token_requests
        assert exchange["headers"]["authorization"].startswith("Basic ")  # the server's own client
        assert len(exchange["form"]["code_verifier"]) >= 43
        stored = await r.hs.store.get(record.id)
        assert stored is not None
        assert (stored.oauth_state, stored.oauth_verifier) == (None, None)


async def test_a_replayed_callback_is_refused_and_the_code_is_exchanged_once() -> None:
    async with rig() as r:
        record = await r.mint()
        alice = person()
        await connect(alice, record.url)
        callback = next(p.url for p in alice.history if "/oauth/callback" in p.url)
        assert (await alice.open(callback)).status == 410
        assert (await person().open(callback)).status == 410
        assert len(r.auth.token_requests) == 1


async def test_a_callback_with_a_forged_state_is_refused_and_the_real_one_still_works() -> None:
    async with rig() as r:
        record = await r.mint()
        alice = person()
        page = await alice.open(record.url)
        to_provider = await alice.submit(page, action="continue", follow=False)
        assert to_provider.status == 303
        location = to_provider.headers["location"]
        state = parse_qs(urlsplit(location).query)["state"][0]
        forged = f"{r.origin}/elicit/oauth/callback?code=stolen&state={record.id}.{'x' * 32}"
        assert (await alice.open(forged)).status == 403
        assert (await alice.open(f"{r.origin}/elicit/oauth/callback?code=c")).status == 400
        assert await r.status(record) == OPENED
        back = await alice.open(location)  # the provider approves and sends the browser back
        assert back.status == 200
        assert state.startswith(record.id)
        assert await r.status(record) == DONE


async def test_a_callback_in_another_persons_browser_is_refused() -> None:
    """The forwarded-callback variant: Bob cannot finish Alice's connection with his account."""
    async with rig() as r:
        record = await r.mint()
        alice = person()
        to_provider = await alice.submit(await alice.open(record.url), action="continue", follow=False)
        bob = person("bob")
        refused = await bob.open(to_provider.headers["location"])
        assert refused.status == 403
        assert await r.status(record) == OPENED
        assert await r.token() is None


async def test_access_denied_at_the_provider_declines_the_hand_off() -> None:
    async with rig() as r:
        r.auth.deny = True
        record = await r.mint()
        page = await connect(person(), record.url)
        assert page.status == 200
        assert await r.status(record) == DECLINED
        assert r.auth.token_requests == []


async def test_a_refused_code_exchange_fails_the_hand_off_without_storing_anything() -> None:
    async with rig() as r:
        r.auth.fail_token = True
        record = await r.mint()
        page = await connect(person(), record.url)
        assert page.status == 502
        assert await r.status(record) == FAILED
        assert await r.token() is None


async def test_a_callback_from_another_issuer_fails_the_hand_off() -> None:
    """RFC 9207 mix-up defence: `iss` on the callback must be the configured issuer."""
    async with rig(issuer="https://other-issuer.example") as r:
        record = await r.mint()
        await connect(person(), record.url)
        assert await r.status(record) == FAILED
        assert r.auth.token_requests == []


def test_oauth_endpoints_must_be_https_or_loopback() -> None:
    with pytest.raises(ConfigError) as info:
        OAuthClient(authorize_url="http://provider.example/authorize", token_url="https://p/t", client_id="c")
    assert info.value.key == "authorize_url"


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_connects_an_account_through_the_sdk_client(era: str) -> None:
    auth = LocalAuthorizationServer()
    async with serving_app(auth.app()) as as_origin:
        auth.issuer = as_origin
        flow = oauth_flow(auth, as_origin)
        hs = make_handoffs(identity=IdentityPolicy(dev_user="dev"), flows=[flow])
        server = make_server(hs)

        @server.tool()
        async def connect_account(ctx: Context) -> str:
            result = await handoff(ctx, "Connect CodeHost.", flow)
            return "connected" if result.completed else result.action

        async def sign_in(url: str) -> None:
            assert (await connect(Browser(), url)).status == 200

        async with serving_http(server) as url:
            auth.redirect_uri = url.removesuffix("/mcp") + "/elicit/oauth/callback"
            async with mcp_client(url, era, UrlCallback(sign_in)) as client:
                result = await client.call_tool("connect_account", {})
        assert text_of(result) == "connected"
        stored = await hs.vault.get(Principal("dev", DEV_ISSUER).key, "codehost")
        assert stored is not None
        assert stored.reveal()["token"]["access_token"] == auth.issued[0]
        assert auth.issued[0] not in str(result)

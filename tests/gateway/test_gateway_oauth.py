"""The HTTP gateway as an OAuth protected resource: users are the subjects of tokens a real local
authorization server (`tests/mcp_auth.py`) vouches for by introspection (RFC 7662), and the
two-user attacks of `test_gateway_http.py` with those tokens."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as t
import pytest
from mcp.shared.exceptions import MCPError

from mcp_elicit.client import ElicitClient, OAuthLogin
from mcp_elicit.core.wire_codes import INVALID_PARAMS
from mcp_elicit.errors import ConfigError
from mcp_elicit.gateway import Gateway, parse_config
from mcp_elicit.gateway.auth import INTROSPECTION_CACHE_SECONDS, GatewayOAuth, Introspection, parse_oauth
from mcp_elicit.ui.scripted import ScriptedUI
from tests.gateway.support import PEERS, Answers, greet_at_once, http_client, http_gateway
from tests.mcp_auth import INTROSPECTION_CLIENT, FollowingBrowser, Provider, serving_built

pytestmark = pytest.mark.anyio


def config(issuer: str, **oauth: Any) -> str:
    sdk = {"command": sys.executable, "args": [PEERS, "sdk"]}
    settings = {
        "issuer": issuer,
        "introspectionEndpoint": f"{issuer}/introspect",
        "clientId": INTROSPECTION_CLIENT[0],
        "clientSecret": INTROSPECTION_CLIENT[1],
        **oauth,
    }
    return json.dumps({"mcpServers": {"sdk": sdk}, "oauth": settings})


@asynccontextmanager
async def oauth_gateway(provider: Provider, **oauth: Any) -> AsyncIterator[tuple[Gateway, str]]:
    async with serving_built(provider.app) as issuer, http_gateway(config(issuer, **oauth)) as (gw, url):
        yield gw, url


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_two_users_with_tokens_from_the_authorization_server_each_get_only_their_own_question(
    era: str,
) -> None:
    provider = Provider()
    alice, bob = Answers({"name": "alice"}), Answers({"name": "bob"})
    async with oauth_gateway(provider) as (gw, url):
        a_token, b_token = provider.token_for("alice", url), provider.token_for("bob", url)
        async with http_client(url, a_token, era, alice) as a, http_client(url, b_token, era, bob) as b:
            results = await greet_at_once({"a": a, "b": b})
        users = set(gw.pools)
    assert results["a"].content[0].text == "hello alice"
    assert results["b"].content[0].text == "hello bob"
    assert alice.messages == bob.messages == ["Who are you?"]
    assert users == {"alice", "bob"}  # the subjects, not the tokens


async def test_bob_with_his_own_valid_token_cannot_answer_alices_question() -> None:
    provider = Provider()
    async with oauth_gateway(provider) as (_, url):
        a_token, b_token = provider.token_for("alice", url), provider.token_for("bob", url)
        async with (
            http_client(url, a_token, "2026-07-28", Answers()) as a,
            http_client(url, b_token, "2026-07-28", Answers()) as b,
        ):
            first = await a.session.call_tool("greet", {}, allow_input_required=True)
            assert isinstance(first, t.InputRequiredResult)
            # The SDK seals the state to the token's principal: Bob's retry is refused before the
            # gateway sees it (-32602), where the token map's test sees the gateway's own refusal.
            with pytest.raises(MCPError) as stolen:
                await b.session.call_tool(
                    "greet",
                    {},
                    input_responses={"q": {"action": "accept", "content": {"name": "mallory"}}},
                    request_state=first.request_state,
                    allow_input_required=True,
                )
            own = await a.session.call_tool(
                "greet",
                {},
                input_responses={"q": {"action": "accept", "content": {"name": "alice"}}},
                request_state=first.request_state,
                allow_input_required=True,
            )
    assert stolen.value.error.code == INVALID_PARAMS
    assert isinstance(own, t.CallToolResult)
    assert own.content[0].text == "hello alice"  # type: ignore[union-attr]


async def test_a_missing_unknown_expired_or_foreign_token_gets_401_naming_the_resource_metadata() -> None:
    provider = Provider()
    async with oauth_gateway(provider) as (_, url):
        expired = provider.token_for("alice", url)
        provider.expire_all()
        foreign = provider.token_for("alice", "https://other.example/mcp")  # issued for another server
        statuses, challenges = [], []
        for token in (None, "at-unknown", expired, foreign):
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with httpx2.AsyncClient(headers=headers) as http:
                response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            statuses.append(response.status_code)
            challenges.append(response.headers.get("www-authenticate", ""))
        origin = url.removesuffix("/mcp")
        async with httpx2.AsyncClient() as http:
            metadata = (await http.get(f"{origin}/.well-known/oauth-protected-resource/mcp")).json()
    assert statuses == [401, 401, 401, 401]
    assert all(
        f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"' in c for c in challenges
    )
    assert metadata["resource"] == url
    assert [s.rstrip("/") for s in metadata["authorization_servers"]] == [provider.issuer]


async def test_our_client_signs_in_with_oauth_and_reaches_the_oauth_gateway(tmp_path: Path) -> None:
    provider = Provider(user="carol")
    async with oauth_gateway(provider) as (gw, url), anyio.create_task_group() as tg:
        oauth = OAuthLogin(
            token_file=tmp_path / "tokens.json", opener=FollowingBrowser(tg), say=lambda _: None
        )
        ui = ScriptedUI([{"content": {"name": "carol"}}])
        async with ElicitClient(url, ui=ui, oauth=oauth) as client:
            result = await client.call_tool("greet", {})
        users = set(gw.pools)
    assert result.content[0].text == "hello carol"  # type: ignore[union-attr]
    assert users == {"carol"}
    assert len(provider.authorize_requests) == 1
    assert provider.authorize_requests[0].resource == url


async def test_introspection_answers_are_reused_briefly_and_never_past_the_tokens_expiry() -> None:
    provider = Provider()
    now = [1_000.0]
    async with serving_built(provider.app) as issuer:
        settings = GatewayOAuth(issuer, f"{issuer}/introspect", *INTROSPECTION_CLIENT)
        introspection = Introspection(settings, clock=lambda: now[0])
        token = provider.token_for("alice")
        first = await introspection.check(token)
        again = await introspection.check(token)
        now[0] += INTROSPECTION_CACHE_SECONDS + 1
        later = await introspection.check(token)
        unknown = await introspection.check("at-unknown")
    assert first is not None
    assert first.subject == "alice"
    assert again == first
    assert later == first
    assert unknown is None
    assert introspection.requests == 3
    assert provider.introspected.count(token) == 2


async def test_the_oauth_settings_are_checked_and_exclude_the_token_map() -> None:
    good = {
        "issuer": "https://auth.example.com",
        "introspectionEndpoint": "https://auth.example.com/introspect",
        "clientId": "gw",
        "clientSecretEnv": "GW_SECRET",
    }
    parsed = parse_oauth(good, environ={"GW_SECRET": "s"})
    assert parsed is not None
    assert parsed.client_secret == "s"
    assert parsed.audience is True
    bad = [
        ({**good, "issuer": "http://auth.example.com"}, "oauth.issuer"),
        ({**good, "clientSecretEnv": "MISSING"}, "oauth.clientSecretEnv"),
        ({**good, "scopes": "mcp"}, "oauth.scopes"),
    ]
    for raw, key in bad:
        with pytest.raises(ConfigError) as caught:
            parse_oauth(raw, environ={"GW_SECRET": "s"})
        assert caught.value.key == key
    both = {
        "mcpServers": {"a": {"command": "x"}},
        "users": {"t": "u"},
        "oauth": {**good, "clientSecretEnv": None, "clientSecret": "s"},
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(json.dumps(both))
    assert caught.value.key == "oauth"

"""Where hand-off links point, how they are signed, and whom they name (U4, U5, U9)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.context import ServerRequestContext
from starlette.requests import Request

from mcp_elicit.core.limits import MAX_MESSAGE_CHARS
from mcp_elicit.core.urls import check_url
from mcp_elicit.errors import ConfigError, FormDefinitionError, IdentityRequired
from mcp_elicit.server import ApiKeyHandoff, IdentityPolicy, Principal
from mcp_elicit.server.identity import DEV_ISSUER, is_loopback_host
from tests.server.handoff_support import ALICE, make_handoffs

pytestmark = pytest.mark.anyio

FLOW = ApiKeyHandoff(provider="github")


def ctx_for(host: str, scheme: str = "http", root_path: str = "") -> Any:
    """The SDK's request context of an MCP request that came over HTTP with this Host (no session)."""
    scope = {
        "type": "http",
        "method": "POST",
        "scheme": scheme,
        "path": "/mcp",
        "root_path": root_path,
        "query_string": b"",
        "headers": [(b"host", host.encode())],
        "server": ("0.0.0.0", 443),
    }
    return ServerRequestContext(
        session=None,  # type: ignore[arg-type]
        lifespan_context=None,
        protocol_version="2025-11-25",
        method="tools/call",
        request=Request(scope),
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://mcp.example.com",
        "javascript:alert(1)",
        "https://user:pw@mcp.example.com",
        "https://x.example/?a=1",
    ],
    ids=["http-public", "javascript", "credentials", "query"],
)
def test_a_public_base_url_that_fails_the_url_checks_is_refused_at_startup(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_handoffs(public_base_url=url)
    assert info.value.key == "public_base_url"


def test_a_public_base_url_may_carry_a_path() -> None:
    hs = make_handoffs(public_base_url="https://mcp.example.com/app/")
    assert hs.base_url(None) == "https://mcp.example.com/app"


@pytest.mark.parametrize(
    ("host", "scheme", "expected"),
    [
        ("127.0.0.1:9000", "http", "http://127.0.0.1:9000"),
        ("localhost:8080", "http", "http://localhost:8080"),
        ("[::1]:7000", "http", "http://[::1]:7000"),
    ],
)
def test_without_a_configured_origin_a_loopback_host_builds_links(
    host: str, scheme: str, expected: str
) -> None:
    assert make_handoffs().base_url(ctx_for(host, scheme)) == expected


def test_a_client_supplied_public_host_never_builds_links_without_an_allowlist() -> None:
    hs = make_handoffs()
    with pytest.raises(ConfigError) as info:
        hs.base_url(ctx_for("evil.example", "https"))
    assert info.value.key == "allowed_hosts"


def test_an_allow_listed_host_builds_links_but_only_over_https() -> None:
    hs = make_handoffs(allowed_hosts=["MCP.example.com"])
    assert hs.base_url(ctx_for("mcp.example.com", "https", "/tools")) == "https://mcp.example.com/tools"
    with pytest.raises(ConfigError):
        hs.base_url(ctx_for("mcp.example.com", "http"))


def test_a_request_that_did_not_come_over_http_needs_a_public_base_url() -> None:
    with pytest.raises(ConfigError) as info:
        make_handoffs().base_url(None)
    assert info.value.key == "public_base_url"


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"secret": b"short"}, "secret"),
        ({"path_prefix": "elicit"}, "path_prefix"),
        ({"path_prefix": "/e/"}, "path_prefix"),
    ],
)
def test_bad_settings_are_refused_at_startup(options: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_handoffs(**options)
    assert info.value.key == key


async def test_a_minted_link_passes_the_clients_url_checks_and_names_no_one() -> None:
    """U5: the link carries a signed id and expiry only; U4: it is one our own client would open."""
    hs = make_handoffs(public_base_url="https://mcp.example.com")
    record = await hs.mint(None, Principal("alice@example.com", "https://idp.example"), FLOW, "Connect.")
    verdict = check_url(record.url)
    assert verdict.verdict == "ok"
    assert verdict.registrable_domain == "example.com"
    assert "alice" not in record.url
    assert "idp" not in record.url
    assert len(record.id) == 32


async def test_an_over_long_message_is_refused_before_anything_is_minted() -> None:
    hs = make_handoffs(public_base_url="https://mcp.example.com")
    with pytest.raises(FormDefinitionError):
        await hs.mint(None, ALICE, FLOW, "x" * (MAX_MESSAGE_CHARS + 1))


@settings(max_examples=150, deadline=None)
@given(token=st.text(max_size=300))
def test_only_links_this_server_signed_are_read(token: str) -> None:
    hs = make_handoffs()
    assert hs.read_link(token) is None


def test_principals_differ_whenever_issuer_or_subject_differ() -> None:
    """Keys are JSON, so no choice of separator characters can make two people collide."""
    people = [
        Principal("a#b"),
        Principal("b", "a"),
        Principal("b", "a#"),
        Principal("a", None),
        Principal("a", ""),
        Principal("a", "x", client_id="c1"),
    ]
    assert len({p.key for p in people[:5]}) == 5
    assert Principal("a", "x", client_id="c2").same_person(people[5])
    assert not Principal("a", "y").same_person(people[5])


def test_the_mcp_side_needs_authorization_or_a_development_identity() -> None:
    with pytest.raises(IdentityRequired) as info:
        IdentityPolicy().of_request(None)
    assert info.value.where == "mcp"
    assert IdentityPolicy(dev_user="me").of_request(None) == Principal("me", DEV_ISSUER)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.9.9.9", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("app.localhost", True),
        ("10.0.0.1", False),
        ("localhost.example.com", False),
        (None, False),
        ("", False),
    ],
)
def test_loopback_hosts_are_recognised(host: str | None, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback

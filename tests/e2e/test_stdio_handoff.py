"""Hand-offs over stdio: the reference server, run as a real stdio subprocess, serves its pages
on its own loopback listener (RFC 8252-style), so the SDK's client completes a URL hand-off in
both eras without any HTTP transport for MCP."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_elicit.core.urls import check_url
from mcp_elicit.errors import ConfigError
from mcp_elicit.server import Handoffs, TokenVault
from mcp_elicit.server.vault import KeyRing
from tests.e2e.servers import reference_over_stdio
from tests.server.handoff_support import Browser, UrlCallback
from tests.support import text_of

pytestmark = pytest.mark.anyio


async def enter_key(url: str) -> None:
    page = await Browser().enter_key(url)
    assert page.status == 200


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_stdio_server_hands_off_on_its_own_loopback_page(era: str) -> None:
    callback = UrlCallback(enter_key)
    async with Client(reference_over_stdio(), mode=era, elicitation_callback=callback) as client:
        result = await client.call_tool("connect_service", {})
    assert text_of(result) == "Connected to Example API."
    [request] = callback.seen
    assert request["url"].startswith("http://127.0.0.1:")
    assert check_url(request["url"]).verdict != "block"


@pytest.mark.parametrize("listen", ["0.0.0.0:0", "example.com:80", "127.0.0.1:http", "127.0.0.1"])
def test_the_pages_listener_only_takes_a_loopback_address_and_a_port(listen: str) -> None:
    with pytest.raises(ConfigError) as info:
        Handoffs(vault=TokenVault(KeyRing.generate()), pages_listen=listen)
    assert info.value.key == "pages_listen"

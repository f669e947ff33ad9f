"""The reference server's hand-off tools over HTTP with the official SDK client, in both eras."""

from __future__ import annotations

import mcp_types as t
import pytest
from mcp.shared.exceptions import MCPError

from mcp_elicit.reference import build_reference_server, reference_handoffs
from tests.e2e.servers import serving_http
from tests.server.handoff_support import (
    SECRET_VALUE,
    Browser,
    Notes,
    RecordingTransport,
    UrlCallback,
    mcp_client,
)
from tests.support import text_of

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


async def enter_key(url: str) -> None:
    assert (await Browser().enter_key(url, SECRET_VALUE)).status == 200


@pytest.mark.parametrize("era", ERAS)
async def test_connect_service_hands_off_and_answers_connected_without_the_key(era: str) -> None:
    wire = RecordingTransport()
    cb = UrlCallback(enter_key)
    async with (
        serving_http(build_reference_server()) as url,
        mcp_client(url, era, cb, transport=wire) as client,
    ):
        result = await client.call_tool("connect_service", {})
        status = await client.call_tool("service_status", {})
    assert text_of(result) == "Connected to Example API."
    assert text_of(status) == "Example API: connected, 3 projects."
    assert cb.seen[0]["url"].startswith(url.removesuffix("/mcp") + "/elicit/start/")
    assert SECRET_VALUE.encode() not in bytes(wire.received)


async def test_service_status_refuses_with_minus_32042_on_2025_until_connected() -> None:
    notes = Notes()
    async with (
        serving_http(build_reference_server()) as url,
        mcp_client(url, "legacy", UrlCallback(), messages=notes) as client,
    ):
        with pytest.raises(MCPError) as info:
            await client.call_tool("service_status", {})
        assert info.value.error.code == t.URL_ELICITATION_REQUIRED
        [listed] = info.value.error.data["elicitations"]  # type: ignore[index]
        await enter_key(listed["url"])
        await notes.wait_completion(listed["elicitationId"])
        result = await client.call_tool("service_status", {})
    assert text_of(result) == "Example API: connected, 3 projects."


async def test_service_status_asks_through_an_input_request_on_2026() -> None:
    cb = UrlCallback(enter_key)
    async with serving_http(build_reference_server()) as url, mcp_client(url, "2026-07-28", cb) as client:
        result = await client.call_tool("service_status", {})
    assert text_of(result) == "Example API: connected, 3 projects."
    assert "elicitationId" not in cb.seen[0]


def test_the_oauth_tool_exists_only_when_configured() -> None:
    assert [f.key for f in reference_handoffs({}).flows] == ["api_key:example-api"]
    env = {
        "MCP_ELICIT_REFERENCE_OAUTH_AUTHORIZE_URL": "https://auth.example.com/authorize",
        "MCP_ELICIT_REFERENCE_OAUTH_TOKEN_URL": "https://auth.example.com/token",
        "MCP_ELICIT_REFERENCE_OAUTH_CLIENT_ID": "reference",
    }
    assert [f.key for f in reference_handoffs(env).flows] == ["api_key:example-api", "oauth:example-oauth"]

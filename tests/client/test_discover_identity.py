"""A connection pinned to 2026-07-28 asks the server who it is (`server/discover`) once connected:
the answer is waited for as long as any request on the connection is, however slowly the server
starts.

A server still starting (a gateway launching its upstreams before it reads its input, on a busy
machine) answers its first request late. The SDK bounds its own discovery probe to ten seconds;
asking under that bound left such a server anonymous, so every question it relayed showed no name.
"""

from __future__ import annotations

import sys

import mcp.client.session as sdk_session
import pytest

from mcp_elicit.client import ElicitClient
from mcp_elicit.client.servers import ServerSpec
from mcp_elicit.testing import ScriptedUI

pytestmark = pytest.mark.anyio

REFERENCE = ServerSpec(argv=(sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "stdio"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_pinned_2026_connection_learns_the_name_of_a_server_that_answers_after_the_sdks_probe_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A bound of zero: every answer comes after it, as a slow-starting server's comes after ten seconds.
    monkeypatch.setattr(sdk_session, "DISCOVER_TIMEOUT_SECONDS", 0.0)
    async with ElicitClient(REFERENCE, ui=ScriptedUI(), protocol="modern") as client:
        protocol = client.protocol_version
        server = client.server
        asked_by = client.handler.elicitation({"mode": "form", "message": "?"}).requester
    assert protocol == "2026-07-28"
    assert server.name == "mcp-elicit-reference"
    assert asked_by.name == "mcp-elicit-reference"

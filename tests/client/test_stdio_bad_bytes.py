"""A stdio server writing a line of invalid UTF-8 ends the call at once with a clear error."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from mcp_elicit.client.connection import ElicitClient, ServerSpec
from mcp_elicit.errors import ServerOutputError
from mcp_elicit.testing import ScriptedUI

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("misbehaving_server.py")
# Far above the time the error takes (milliseconds), far below "forever" (before: no end at all).
BOUND_SECONDS = 20.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_invalid_utf8_in_a_tool_result_ends_the_call_with_server_output_error() -> None:
    spec = ServerSpec(argv=(sys.executable, str(SERVER), "call"))
    with anyio.fail_after(BOUND_SECONDS):
        async with ElicitClient(spec, ui=ScriptedUI([])) as client:
            with pytest.raises(ServerOutputError) as info:
                await client.call_tool("anything", {})
    assert "\\xff" in info.value.detail
    assert isinstance(info.value, ConnectionError)


async def test_invalid_utf8_during_initialize_fails_the_connection_with_server_output_error() -> None:
    spec = ServerSpec(argv=(sys.executable, str(SERVER), "initialize"))
    with anyio.fail_after(BOUND_SECONDS), pytest.raises(ServerOutputError):
        async with ElicitClient(spec, ui=ScriptedUI([])):
            pass

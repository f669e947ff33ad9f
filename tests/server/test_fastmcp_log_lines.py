"""On a FastMCP server the kit's one-line outcome logs show as FastMCP's own do: without any
logging set up by the app, through FastMCP's handler; once the app sets up logging itself, through
the app's handlers only, never twice. The server runs in its own process (logging is per process)
and FastMCP's `Client` talks to it over stdio.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import fastmcp
import pytest
from fastmcp.client.transports import StdioTransport

from tests.server import fastmcp_logging_server

pytestmark = pytest.mark.anyio

LINE = "tools/call greet refused: missing_capability"


async def stderr_of(mode: str, tmp_path: Path) -> str:
    """What the server wrote to stderr while a client without elicitation called its tool."""
    log = tmp_path / f"{mode}.log"
    transport = StdioTransport(
        command=sys.executable,
        args=[fastmcp_logging_server.__file__, mode],
        env={**os.environ, "COLUMNS": "200"},  # Rich wraps at the terminal's width otherwise
        log_file=log,
        keep_alive=False,
    )
    async with fastmcp.Client(transport, mode="legacy") as client:
        result = await client.call_tool("greet", {}, raise_on_error=False)
    assert result.is_error
    return log.read_text()


@pytest.mark.parametrize("mode", ["plain", "twice"])
async def test_without_logging_set_up_the_kits_line_shows_once_through_fastmcps_own(
    mode: str, tmp_path: Path
) -> None:
    err = await stderr_of(mode, tmp_path)
    assert err.count(LINE) == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("mode", ["before", "after"])
async def test_with_logging_set_up_by_the_app_the_line_shows_once_through_its_handlers(
    mode: str, tmp_path: Path
) -> None:
    err = await stderr_of(mode, tmp_path)
    assert err.count(LINE) == 1
    assert f"ROOT INFO mcp_elicit.server: {LINE}" in err

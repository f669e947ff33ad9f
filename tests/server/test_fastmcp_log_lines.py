"""On a FastMCP server the kit's one-line outcome logs show as FastMCP's own do: without any
logging set up by the app, through FastMCP's handler; once the app sets up logging itself, through
the app's handlers only, never twice. The server runs in its own process (logging is per process)
and FastMCP's `Client` talks to it over stdio.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from pathlib import Path

import fastmcp
import pytest
from fastmcp.client.transports import StdioTransport

from mcp_elicit import install
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


async def test_an_app_that_sets_up_logging_at_warning_after_install_sees_no_info_line_of_the_kit(
    tmp_path: Path,
) -> None:
    """The kit's level is the app's again once the app sets up logging: its INFO outcome is below it."""
    err = await stderr_of("quiet", tmp_path)
    assert LINE not in err


def test_install_on_a_fastmcp_server_leaves_the_root_logger_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no logging set up (no root handler: pytest's own are taken off for the test), install
    touches neither the root logger's level nor its handlers; the kit's own logger has its level
    and propagation back as soon as the app sets up logging, so the app's level (WARNING) holds."""
    root, kit = logging.getLogger(), logging.getLogger("mcp_elicit")
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(kit, "handlers", [])
    monkeypatch.setattr(kit, "propagate", True)
    level = root.level
    try:
        install(fastmcp.FastMCP("root-untouched"))
        assert (root.level, root.handlers) == (level, [])
        app = logging.StreamHandler(io.StringIO())
        monkeypatch.setattr(root, "handlers", [app])  # the app sets up logging
        logging.getLogger("mcp_elicit.server").info("below the app's level")
        logging.getLogger("mcp_elicit.server").warning("one line")
        assert (kit.level, kit.propagate) == (logging.NOTSET, True)
        assert app.stream.getvalue() == "one line\n"
    finally:
        kit.setLevel(logging.NOTSET)

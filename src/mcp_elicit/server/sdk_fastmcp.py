"""The server side's door to FastMCP (a second framework on the same SDK).

A FastMCP server runs on the SDK's low-level server, with the SDK's requestState sealing, so
the kit's middleware goes into the same chain as on `MCPServer`. Two things differ, and both
are handled here:

- FastMCP's tool wrapper turns any exception that is not its own `FastMCPError` into "Error
  calling tool" and logs a traceback. The errors that leave a kit entry point (see `sdk.carry`)
  and the pending-question signal therefore also derive from `FastMCPError` on a FastMCP server.
- FastMCP returns a tool's 2026-07-28 question as an `InputRequiredToolResult`; a small FastMCP
  middleware turns the pending signal into one, and re-raises -32042 as the protocol error it is.

- FastMCP shows its own log lines (its `fastmcp` logger has its own handler and does not
  propagate), so a FastMCP user sees FastMCP's INFO lines without configuring logging, while the
  kit's lines (the `mcp_elicit` logger) would stay invisible. `show_kit_lines` hands the kit's
  lines to FastMCP's handlers, at FastMCP's level, as long as nothing else would show them: once
  the app configures logging itself (a handler on the root or on `mcp_elicit`), they go there
  only, never twice.

Private hooks used (canary-tested in tests/server/test_sdk_canaries.py): `FastMCP._mcp_server`
(the low-level server) and FastMCP's request context keeping the SDK's context as `_srctx`
(read by `sdk.call_of`).
"""

from __future__ import annotations

import logging
from typing import Any

from fastmcp.exceptions import FastMCPError
from fastmcp.server.middleware import Middleware
from fastmcp.tools import InputRequiredToolResult

from mcp_elicit.errors import ElicitError
from mcp_elicit.server import sdk

__all__ = ["FLAVOR", "PendingToResult", "show_kit_lines"]

logger = logging.getLogger("mcp_elicit.server")

# Extra bases for the exceptions that leave a tool on a FastMCP server.
FLAVOR: tuple[type[BaseException], ...] = (FastMCPError,)


class PendingToResult(Middleware):
    """Turns the kit's pending signal into FastMCP's InputRequiredToolResult, a relayed -32042
    back into the plain protocol error FastMCP passes to the client, and logs a refusal's line."""

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        try:
            return await call_next(context)
        except FastMCPError as exc:
            plain = sdk.plain_url_elicitation_required(exc)
            if plain is not None:
                raise plain from None
            pending = sdk.pending_result(exc)
            if pending is None:
                # FastMCP answers a refusal with a tool error result itself, so the kit's
                # middleware never sees it: its one log line is written here.
                if isinstance(exc, ElicitError):
                    sdk.log_refusal("tools/call", context.message.name, exc)
                raise
            return InputRequiredToolResult(pending)


class _WithFastMCP(logging.Handler):
    """Shows a kit record through FastMCP's own handlers when no other handler would show it."""

    def emit(self, record: logging.LogRecord) -> None:
        if _shown_elsewhere(record, self):
            return  # the app configured logging: its handlers show the line, once
        fast = logging.getLogger("fastmcp")
        if not fast.isEnabledFor(record.levelno):
            return
        for handler in fast.handlers:
            if record.levelno >= handler.level:
                handler.handle(record)


def _shown_elsewhere(record: logging.LogRecord, ours: logging.Handler) -> bool:
    """True when a handler other than `ours` is on the record's way up the logger tree."""
    logger: logging.Logger | None = logging.getLogger(record.name)
    while logger is not None:
        if any(handler is not ours for handler in logger.handlers):
            return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return False


def show_kit_lines() -> None:
    """Make the kit's one-line outcome logs visible the way FastMCP's own are (see the module doc).

    Does nothing when the app has configured logging already (a root handler, or a handler or a
    level on `mcp_elicit`) or FastMCP's logging is off (no handler on `fastmcp`). Otherwise it sets
    `mcp_elicit` to FastMCP's level and adds one handler; calling it again adds nothing.
    """
    kit, fast = logging.getLogger("mcp_elicit"), logging.getLogger("fastmcp")
    if logging.getLogger().handlers or kit.handlers or kit.level != logging.NOTSET or not fast.handlers:
        return
    kit.setLevel(fast.getEffectiveLevel())
    kit.addHandler(_WithFastMCP())

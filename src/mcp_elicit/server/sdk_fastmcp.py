"""The server side's door to FastMCP (a second framework on the same SDK).

A FastMCP server runs on the SDK's low-level server, with the SDK's requestState sealing, so
the kit's middleware goes into the same chain as on `MCPServer`. Two things differ, and both
are handled here:

- FastMCP's tool wrapper turns any exception that is not its own `FastMCPError` into "Error
  calling tool" and logs a traceback. The errors that leave a kit entry point (see `sdk.carry`)
  and the pending-question signal therefore also derive from `FastMCPError` on a FastMCP server.
- FastMCP returns a tool's 2026-07-28 question as an `InputRequiredToolResult`; a small FastMCP
  middleware turns the pending signal into one, and re-raises -32042 as the protocol error it is.
- FastMCP answers a call whose arguments do not fit the tool with pydantic's report ("1 validation
  error for call[query] ..."). The same middleware turns FastMCP's `ValidationError` (raised, as
  FastMCP documents, from pydantic's, for the middleware chain to read) into the kit's
  `ToolArgumentsError`, a tool error naming each argument, as `install()` does on `MCPServer`;
  built from the errors pydantic found, so nothing is validated twice.

- FastMCP shows its own log lines (its `fastmcp` logger has its own handler and does not
  propagate), so a FastMCP user sees FastMCP's INFO lines without configuring logging, while the
  kit's lines (the `mcp_elicit` logger) would stay invisible. `show_kit_lines` hands the kit's
  lines to FastMCP's handlers, at FastMCP's level, as long as nothing else would show them: once
  the app configures logging itself (a handler on the root or on `mcp_elicit`), they go there
  only, never twice, at the app's levels (the kit's logger is as the app left it again).

Private hooks used (canary-tested in tests/server/test_sdk_canaries.py): `FastMCP._mcp_server`
(the low-level server) and FastMCP's request context keeping the SDK's context as `_srctx`
(read by `sdk.call_of`). Public but checked too: a misfit call's `ValidationError` comes with
pydantic's as its `__cause__`.
"""

from __future__ import annotations

import logging
from typing import Any

from fastmcp.exceptions import FastMCPError
from fastmcp.exceptions import ValidationError as ArgumentsError
from fastmcp.server.middleware import Middleware
from fastmcp.tools import InputRequiredToolResult
from pydantic import ValidationError

from mcp_elicit.core.arguments import argument_problem
from mcp_elicit.errors import ElicitError, ToolArgumentsError
from mcp_elicit.server import sdk

__all__ = ["FLAVOR", "PendingToResult", "misfit_arguments", "show_kit_lines"]

logger = logging.getLogger("mcp_elicit.server")

# Extra bases for the exceptions that leave a tool on a FastMCP server.
FLAVOR: tuple[type[BaseException], ...] = (FastMCPError,)


def misfit_arguments(tool: str, exc: BaseException) -> ToolArgumentsError | None:
    """FastMCP's report that a call's arguments do not fit `tool` (its ValidationError, raised from
    pydantic's) as the kit's ToolArgumentsError, from the errors pydantic found: nothing is
    validated again. None for any other error."""
    cause = exc.__cause__
    if not isinstance(exc, ArgumentsError) or not isinstance(cause, ValidationError):
        return None
    found = cause.errors(include_url=False, include_input=False)
    return ToolArgumentsError(tool, tuple(map(argument_problem, found)))


class PendingToResult(Middleware):
    """Turns the kit's pending signal into FastMCP's InputRequiredToolResult, a relayed -32042
    back into the plain protocol error FastMCP passes to the client, arguments that do not fit the
    tool into a tool error naming each (`misfit_arguments`), and logs a refusal's line."""

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        try:
            return await call_next(context)
        except FastMCPError as exc:
            plain = sdk.plain_url_elicitation_required(exc)
            if plain is not None:
                raise plain from None
            misfit = misfit_arguments(context.message.name, exc)
            if misfit is not None:
                sdk.log_refusal("tools/call", context.message.name, misfit)
                raise sdk.carry(misfit, context.fastmcp_context) from None
            pending = sdk.pending_result(exc)
            if pending is None:
                # FastMCP answers a refusal with a tool error result itself, so the kit's
                # middleware never sees it: its one log line is written here.
                if isinstance(exc, ElicitError):
                    sdk.log_refusal("tools/call", context.message.name, exc)
                raise
            return InputRequiredToolResult(pending)


class _WithFastMCP(logging.Handler):
    """Shows a kit record through FastMCP's own handlers while the app has not set up logging.

    From the first record after the app has, it steps aside for good: `mcp_elicit` gets back the
    level and propagation it had, so records go where the app's logging sends them, at the app's
    levels. That first record, made at the kit's level, goes on only if the app's levels let it
    (the logger propagates again once a record is let through; the handler stays, inert, as
    removing it while the logger walks its handlers would skip the next one)."""

    def __init__(self, level_set: int) -> None:
        super().__init__()
        self.level_set = level_set  # the level `show_kit_lines` put on `mcp_elicit`
        self.aside = False  # the app set up logging: the level is the app's again
        self.propagating = False  # ... and `mcp_elicit` propagates again

    def emit(self, record: logging.LogRecord) -> None:
        if self.propagating:
            return
        kit = logging.getLogger("mcp_elicit")
        if not self.aside and _app_configured(record, self, kit):
            self.aside = True
            if kit.level == self.level_set:  # a level the app set itself stays
                kit.setLevel(logging.NOTSET)
            if not logging.getLogger(record.name).isEnabledFor(record.levelno):
                return  # below the app's level: it stops here, as if never made
        if self.aside:  # read by the logger after this handler: the record goes on to the app's
            kit.propagate, self.propagating = True, True
            return
        fast = logging.getLogger("fastmcp")
        if not fast.isEnabledFor(record.levelno):
            return
        for handler in fast.handlers:
            if record.levelno >= handler.level:
                handler.handle(record)


def _app_configured(record: logging.LogRecord, ours: _WithFastMCP, kit: logging.Logger) -> bool:
    """True once the app set up logging: a handler on the root, a handler other than `ours` on the
    record's way up to `mcp_elicit`, or a level of its own on `mcp_elicit`."""
    if logging.getLogger().handlers or kit.level != ours.level_set:
        return True
    logger: logging.Logger | None = logging.getLogger(record.name)
    while logger is not None and logger is not kit.parent:
        if any(handler is not ours for handler in logger.handlers):
            return True
        logger = logger.parent
    return False


def show_kit_lines() -> None:
    """Make the kit's one-line outcome logs visible the way FastMCP's own are (see the module doc).

    Does nothing when the app has configured logging already (a root handler, or a handler or a
    level on `mcp_elicit`) or FastMCP's logging is off (no handler on `fastmcp`). Otherwise it sets
    `mcp_elicit` to FastMCP's level, stops it propagating and adds one handler; calling it again
    adds nothing. Nothing else is touched (the root logger least of all), and once the app sets up
    logging the level and the propagation are as they were, so the app's levels decide again.
    """
    kit, fast = logging.getLogger("mcp_elicit"), logging.getLogger("fastmcp")
    if logging.getLogger().handlers or kit.handlers or kit.level != logging.NOTSET or not fast.handlers:
        return
    level = fast.getEffectiveLevel()
    kit.setLevel(level)
    kit.propagate = False  # while it shows the kit's lines, only through FastMCP's handlers
    kit.addHandler(_WithFastMCP(level))

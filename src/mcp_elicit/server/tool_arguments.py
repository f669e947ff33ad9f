"""Arguments that do not fit an `MCPServer` tool, named (`ToolArgumentsError`), for `install()`.

The SDK validates a tools/call's arguments before the tool runs and answers a misfit with its
validator's report ("Error executing tool query: 1 validation error for queryArguments ...").
`install()` wraps the server's `call_tool` (the SDK's handler calls it for every tools/call) to keep
the pydantic error behind that answer for the request, and its middleware turns what was kept
into a ToolArgumentsError naming each argument (`core.arguments`). Nothing is validated again, so a
tool's own validators run once. An error result with nothing kept came from the tool itself and
is left as it is.

A FastMCP server gets the same from `sdk_fastmcp.misfit_arguments`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from pydantic import ValidationError

from mcp_elicit import errors
from mcp_elicit.core.arguments import argument_problem
from mcp_elicit.server import sdk

__all__ = ["tool_arguments_check"]

# The tool and pydantic's error of the arguments the SDK rejected in this request, if it did.
_REJECTED: ContextVar[tuple[str, ValidationError] | None] = ContextVar("mcp_elicit_rejected", default=None)


def tool_arguments_check(server: Any) -> Callable[[Any, Any], errors.ToolArgumentsError | None]:
    """For an MCPServer: `check(call, result)`, a ToolArgumentsError naming each argument at fault
    when `result` is the error result of a tools/call whose arguments the SDK rejected, else None.
    Wraps `server.call_tool` (once) to keep what the SDK found."""
    call_tool = getattr(server, "call_tool", None)
    if call_tool is not None and not isinstance(call_tool, _Keeping):
        server.call_tool = _Keeping(call_tool)

    def check(call: Any, result: Any) -> errors.ToolArgumentsError | None:
        kept = _REJECTED.get()
        if kept is None:
            return None
        _REJECTED.set(None)
        name = (call.params or {}).get("name")
        if kept[0] != name or not sdk.is_tool_error(result):
            return None
        found = kept[1].errors(include_url=False, include_input=False)
        return errors.ToolArgumentsError(kept[0], tuple(map(argument_problem, found)))

    return check


class _Keeping:
    """`call_tool`, keeping pydantic's error when the SDK rejects the arguments (its ToolError
    raised from a ValidationError; not the UnexpectedToolError of a crashing validator)."""

    def __init__(self, call_tool: Callable[..., Any]) -> None:
        self.call_tool = call_tool
        functools.update_wrapper(self, call_tool)

    async def __call__(self, name: str, arguments: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return await self.call_tool(name, arguments, *args, **kwargs)
        except Exception as exc:
            cause = exc.__cause__
            if sdk.rejected_arguments(exc) and isinstance(cause, ValidationError):
                _REJECTED.set((name, cause))
            raise

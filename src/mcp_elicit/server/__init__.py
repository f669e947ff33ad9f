"""The server kit: `ask`, `confirm`, URL hand-offs and the middleware that carries them across rounds."""

from __future__ import annotations

from typing import Any

import mcp_elicit
from mcp_elicit.server import sdk
from mcp_elicit.server.flows import ApiKeyHandoff as ApiKeyHandoff
from mcp_elicit.server.flows import HandoffFlow as HandoffFlow
from mcp_elicit.server.flows import OAuthClient as OAuthClient
from mcp_elicit.server.flows import OAuthHandoff as OAuthHandoff
from mcp_elicit.server.handoff_calls import credential as credential
from mcp_elicit.server.handoff_calls import handoff as handoff
from mcp_elicit.server.handoff_calls import require as require
from mcp_elicit.server.handoffs import HandoffResult as HandoffResult
from mcp_elicit.server.handoffs import Handoffs as Handoffs
from mcp_elicit.server.heap import freeze_startup_heap as freeze_startup_heap
from mcp_elicit.server.identity import IdentityPolicy as IdentityPolicy
from mcp_elicit.server.identity import Principal as Principal
from mcp_elicit.server.pages import mount_handoff_pages as mount_handoff_pages
from mcp_elicit.server.questions import Answer as Answer
from mcp_elicit.server.questions import Question as Question
from mcp_elicit.server.questions import RawRequest as RawRequest
from mcp_elicit.server.questions import RecordAs as RecordAs
from mcp_elicit.server.questions import ask as ask
from mcp_elicit.server.questions import client_supports as client_supports
from mcp_elicit.server.questions import confirm as confirm
from mcp_elicit.server.questions import gather as gather
from mcp_elicit.server.replay import MemoryReplayGuard as MemoryReplayGuard
from mcp_elicit.server.replay import RedisReplayGuard as RedisReplayGuard
from mcp_elicit.server.replay import ReplayGuard as ReplayGuard
from mcp_elicit.server.rounds import DEFAULT_ASK_TIMEOUT_SECONDS as DEFAULT_ASK_TIMEOUT_SECONDS
from mcp_elicit.server.rounds import DEFAULT_STATE_TTL_SECONDS as DEFAULT_STATE_TTL_SECONDS
from mcp_elicit.server.rounds import MAX_ASKS_PER_CALL as MAX_ASKS_PER_CALL
from mcp_elicit.server.rounds import MAX_INVALID_ANSWERS as MAX_INVALID_ANSWERS
from mcp_elicit.server.rounds import ElicitMiddleware as ElicitMiddleware
from mcp_elicit.server.rounds import ElicitSettings as ElicitSettings
from mcp_elicit.server.signals import run_stdio as run_stdio
from mcp_elicit.server.stores import HandoffStore as HandoffStore
from mcp_elicit.server.stores import MemoryHandoffStore as MemoryHandoffStore
from mcp_elicit.server.stores import RedisHandoffStore as RedisHandoffStore
from mcp_elicit.server.vault import KeyRing as KeyRing
from mcp_elicit.server.vault import Secret as Secret
from mcp_elicit.server.vault import TokenVault as TokenVault

# The names the top level re-exports from here (its `_EXPORTS`, one list), and the less common ones.
# The imports above re-export by `as` (explicit for type checkers, which cannot read a built list).
__all__ = sorted(
    [
        *mcp_elicit._EXPORTS["mcp_elicit.server"],
        "DEFAULT_ASK_TIMEOUT_SECONDS",
        "DEFAULT_STATE_TTL_SECONDS",
        "MAX_ASKS_PER_CALL",
        "MAX_INVALID_ANSWERS",
        "ElicitMiddleware",
        "HandoffFlow",
        "HandoffResult",
        "HandoffStore",
        "IdentityPolicy",
        "MemoryHandoffStore",
        "MemoryReplayGuard",
        "Principal",
        "RedisHandoffStore",
        "RedisReplayGuard",
        "ReplayGuard",
        "Secret",
        "freeze_startup_heap",
        "mount_handoff_pages",
        "run_stdio",
    ]
)


def install(server: Any, settings: ElicitSettings | None = None) -> ElicitSettings:
    """Put the mcp-elicit middleware on `server` (the SDK's `MCPServer` or a FastMCP server),
    inside the SDK's requestState sealing, and return its settings. Call once, before the server
    runs. With `settings.handoffs`, the hand-off pages are mounted on the server's HTTP app too."""
    settings = settings or ElicitSettings()
    if sdk_fastmcp_server(server):
        from mcp_elicit.server import sdk_fastmcp  # only FastMCP users have FastMCP installed

        sdk.install_middleware(
            sdk.lowlevel_of(server).middleware, ElicitMiddleware(settings, sdk_fastmcp.FLAVOR)
        )
        server.add_middleware(sdk_fastmcp.PendingToResult())
        sdk_fastmcp.show_kit_lines()
    else:
        from mcp_elicit.server.tool_arguments import tool_arguments_check

        checked = tool_arguments_check(server)  # a misfit argument named, not a validator's report
        sdk.install_middleware(server.middleware, ElicitMiddleware(settings, tool_arguments=checked))
    if settings.handoffs is not None:
        mount_handoff_pages(server, settings.handoffs)
    return settings


def sdk_fastmcp_server(server: Any) -> bool:
    """True for a FastMCP server (checked by module name, so plain SDK users never import FastMCP)."""
    return type(server).__module__.startswith("fastmcp.") and hasattr(server, "_mcp_server")

"""The server kit: `ask`, `confirm`, URL hand-offs and the middleware that carries them across rounds."""

from __future__ import annotations

from typing import Any

from mcp_elicit.server import sdk
from mcp_elicit.server.flows import ApiKeyHandoff, HandoffFlow, OAuthClient, OAuthHandoff
from mcp_elicit.server.handoff_calls import credential, handoff, require
from mcp_elicit.server.handoffs import HandoffResult, Handoffs
from mcp_elicit.server.identity import IdentityPolicy, Principal
from mcp_elicit.server.pages import mount_handoff_pages
from mcp_elicit.server.questions import Answer, Question, RawRequest, ask, client_supports, confirm, gather
from mcp_elicit.server.replay import MemoryReplayGuard, RedisReplayGuard, ReplayGuard
from mcp_elicit.server.rounds import (
    DEFAULT_ASK_TIMEOUT_SECONDS,
    DEFAULT_STATE_TTL_SECONDS,
    MAX_ASKS_PER_CALL,
    MAX_INVALID_ANSWERS,
    ElicitMiddleware,
    ElicitSettings,
)
from mcp_elicit.server.stores import HandoffStore, MemoryHandoffStore, RedisHandoffStore
from mcp_elicit.server.vault import KeyRing, Secret, TokenVault

__all__ = [
    "DEFAULT_ASK_TIMEOUT_SECONDS",
    "DEFAULT_STATE_TTL_SECONDS",
    "MAX_ASKS_PER_CALL",
    "MAX_INVALID_ANSWERS",
    "Answer",
    "ApiKeyHandoff",
    "ElicitMiddleware",
    "ElicitSettings",
    "HandoffFlow",
    "HandoffResult",
    "HandoffStore",
    "Handoffs",
    "IdentityPolicy",
    "KeyRing",
    "MemoryHandoffStore",
    "MemoryReplayGuard",
    "OAuthClient",
    "OAuthHandoff",
    "Principal",
    "Question",
    "RawRequest",
    "RedisHandoffStore",
    "RedisReplayGuard",
    "ReplayGuard",
    "Secret",
    "TokenVault",
    "ask",
    "client_supports",
    "confirm",
    "credential",
    "gather",
    "handoff",
    "install",
    "mount_handoff_pages",
    "require",
]


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
    else:
        sdk.install_middleware(server.middleware, ElicitMiddleware(settings))
    if settings.handoffs is not None:
        mount_handoff_pages(server, settings.handoffs)
    return settings


def sdk_fastmcp_server(server: Any) -> bool:
    """True for a FastMCP server (checked by module name, so plain SDK users never import FastMCP)."""
    return type(server).__module__.startswith("fastmcp.") and hasattr(server, "_mcp_server")

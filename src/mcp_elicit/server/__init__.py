"""The server kit: `ask`, `confirm`, URL hand-offs and the middleware that carries them across rounds."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

from mcp_elicit.server.ask import Answer, Question, RawRequest, ask, client_supports, confirm, gather
from mcp_elicit.server.flows import ApiKeyHandoff, HandoffFlow, OAuthClient, OAuthHandoff
from mcp_elicit.server.handoff import HandoffResult, Handoffs, credential, handoff, require
from mcp_elicit.server.identity import IdentityPolicy, Principal
from mcp_elicit.server.pages import mount_handoff_pages
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


def install(server: MCPServer[Any], settings: ElicitSettings | None = None) -> ElicitSettings:
    """Put the mcp-elicit middleware on `server` (inside the SDK's requestState sealing) and
    return its settings. Call once, before the server runs. With `settings.handoffs`, the
    hand-off pages are mounted on the server's HTTP app too."""
    if any(isinstance(m, ElicitMiddleware) for m in server.middleware):
        raise ValueError("mcp-elicit is already installed on this server")
    settings = settings or ElicitSettings()
    server.middleware.append(ElicitMiddleware(settings))
    if settings.handoffs is not None:
        mount_handoff_pages(server, settings.handoffs)
    return settings

"""The server kit: `ask`, `confirm` and the middleware that carries them across rounds."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

from mcp_elicit.server.ask import Answer, Question, RawRequest, ask, client_supports, confirm, gather
from mcp_elicit.server.replay import MemoryReplayGuard, RedisReplayGuard, ReplayGuard
from mcp_elicit.server.rounds import (
    DEFAULT_ASK_TIMEOUT_SECONDS,
    DEFAULT_STATE_TTL_SECONDS,
    MAX_ASKS_PER_CALL,
    MAX_INVALID_ANSWERS,
    ElicitMiddleware,
    ElicitSettings,
)

__all__ = [
    "DEFAULT_ASK_TIMEOUT_SECONDS",
    "DEFAULT_STATE_TTL_SECONDS",
    "MAX_ASKS_PER_CALL",
    "MAX_INVALID_ANSWERS",
    "Answer",
    "ElicitMiddleware",
    "ElicitSettings",
    "MemoryReplayGuard",
    "Question",
    "RawRequest",
    "RedisReplayGuard",
    "ReplayGuard",
    "ask",
    "client_supports",
    "confirm",
    "gather",
    "install",
]


def install(server: MCPServer[Any], settings: ElicitSettings | None = None) -> ElicitSettings:
    """Put the mcp-elicit middleware on `server` (inside the SDK's requestState sealing) and
    return its settings. Call once, before the server runs."""
    if any(isinstance(m, ElicitMiddleware) for m in server.middleware):
        raise ValueError("mcp-elicit is already installed on this server")
    settings = settings or ElicitSettings()
    server.middleware.append(ElicitMiddleware(settings))
    return settings

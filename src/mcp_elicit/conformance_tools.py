"""Tools, prompts and resources that the official conformance suite's elicitation scenarios call."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer


def add_conformance_tools(server: MCPServer[Any]) -> None:
    """Register the conformance fixtures on `server`."""

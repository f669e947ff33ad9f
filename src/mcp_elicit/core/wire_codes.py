"""The JSON-RPC error codes mcp-elicit sends or reads, named once (JSON-RPC 2.0 section 5.1)."""

from __future__ import annotations

from typing import Final

__all__ = ["INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST", "METHOD_NOT_FOUND"]

INVALID_REQUEST: Final = -32600  # the message is not a valid request object
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602  # a request we understand, with parameters we refuse
INTERNAL_ERROR: Final = -32603

"""JSON-RPC error codes the project reads or writes, named once.

Values from JSON-RPC 2.0 section 5.1 (-32700 to -32603) and the MCP schema (`schema.ts` of
2025-11-25 for -32042, of 2026-07-28 for -32021); see spec/requirements.md.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "URL_ELICITATION_REQUIRED",
]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600  # the message is not a valid request object
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602  # a request we understand, with parameters we refuse
INTERNAL_ERROR: Final = -32603
# 2025-11-25 only: the request needs URL elicitations first (U7).
URL_ELICITATION_REQUIRED: Final = -32042
# 2026-07-28: the request needs a client capability the client did not declare (C1, C2).
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021

"""A stdio server that speaks only 2025-11-25, as servers built on an SDK of that year do: it takes
the `initialize` handshake, answers `tools/list` and `tools/call` in that revision's shape (no
`resultType`), and answers any method it does not know, `server/discover` included, with -32601.
Written as raw JSON-RPC, so no SDK of this project's set decides what it speaks.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOL = {"name": "echo", "description": "Says hello.", "inputSchema": {"type": "object"}}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result for `method`, or None when this server does not know it."""
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy-only", "version": "1.0"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "hello"}], "isError": False}
    if method == "ping":
        return {}
    return None


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # notifications and responses need no answer
        result = answer(message["method"], message.get("params") or {})
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": "Method not found"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

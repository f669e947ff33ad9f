"""A stdio MCP server that misbehaves: one line of invalid UTF-8 at initialize or as a tool
result, or a tool call it never answers.

Hand-written JSON-RPC on purpose: the SDK's own server would never write such bytes.
Usage: python misbehaving_server.py initialize|call|silent
"""

from __future__ import annotations

import json
import sys

WHEN = sys.argv[1] if len(sys.argv) > 1 else "call"
out = sys.stdout.buffer


def send(message: dict[str, object]) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    method, ident = msg.get("method"), msg.get("id")
    if method == "initialize" and WHEN == "initialize":
        out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(ident).encode() + b',"result":{"x":"\xc3\x28"}}\n')
        out.flush()
    elif method == "initialize":
        info = {"name": "bad-bytes", "version": "1"}
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}}}
        send({"jsonrpc": "2.0", "id": ident, "result": {**result, "serverInfo": info}})
    elif method == "tools/call" and WHEN == "silent":
        continue  # never answers
    elif method == "tools/call":
        out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(ident).encode() + b',"result":{"content":[]}}\xff\n')
        out.flush()
    elif ident is not None:
        send({"jsonrpc": "2.0", "id": ident, "result": {}})

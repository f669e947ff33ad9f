"""A stdio MCP server that starts a reply and never ends its line.

On `initialize` (or, after a proper handshake, on `tools/call` and `prompts/get`) it writes the
start of the reply, then TOTAL bytes of base64-like text in 64 KiB chunks with no newline, saying
on stderr how many it got written after each chunk (`wrote N`), then waits. It exits as soon as
its stdin closes, even in the middle of a blocked write, so the client's shutdown does not wait
out the SDK's grace period. With `exact`, the tool result is instead one complete line of exactly
TOTAL bytes (before its newline). With `DEAF=1` in its environment it ignores its closed stdin
(a hostile server): it waits until it is stopped by a signal.

Hand-written JSON-RPC on purpose: the SDK's own server never writes such a line.
Usage: python endless_line_server.py initialize|call|exact TOTAL
"""

from __future__ import annotations

import json
import os
import sys
import threading

WHEN, TOTAL = sys.argv[1], int(sys.argv[2])
CHUNK = 65536
out = sys.stdout.buffer


def send(ident: object, result: dict[str, object]) -> None:
    out.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode() + b"\n")
    out.flush()


def endless(ident: object) -> None:
    out.write(b'{"jsonrpc":"2.0","id":' + json.dumps(ident).encode() + b',"result":{"content":[{"data":"')
    written = 0
    while written < TOTAL:
        out.write(b"A" * CHUNK)
        out.flush()
        written += CHUNK
        print(f"wrote {written}", file=sys.stderr, flush=True)


def exact(ident: object) -> None:
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(ident).encode() + b',"result":{"content":[{"text":"'
    tail = b'","type":"text"}]}}\n'
    out.write(head + b"A" * (TOTAL - len(head) - len(tail) + 1) + tail)  # TOTAL bytes before the newline
    out.flush()


for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    method, ident = msg.get("method"), msg.get("id")
    if method == "initialize" and WHEN == "initialize":
        threading.Thread(target=endless, args=(ident,), daemon=True).start()
    elif method == "initialize":
        info = {"name": "endless-line", "version": "1"}
        version = msg["params"]["protocolVersion"]
        capabilities = {"tools": {}, "prompts": {}}
        send(ident, {"protocolVersion": version, "capabilities": capabilities, "serverInfo": info})
    elif method == "tools/list":
        send(ident, {"tools": [{"name": "anything", "inputSchema": {"type": "object"}}]})
    elif method == "prompts/list":
        send(ident, {"prompts": [{"name": "anything"}]})
    elif method in ("tools/call", "prompts/get"):  # a thread writes: a blocked write leaves stdin read
        threading.Thread(target=exact if WHEN == "exact" else endless, args=(ident,), daemon=True).start()
    elif ident is not None:
        send(ident, {})
if os.environ.get("DEAF") == "1":
    threading.Event().wait()  # only a signal ends it
os._exit(0)  # stdin closed: end now, whatever the writer thread is blocked on

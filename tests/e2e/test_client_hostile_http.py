"""Over streamable HTTP, a server request the SDK cannot even parse still gets an error reply (issue 3).

The server here is raw HTTP, no SDK: on `tools/call` it opens the call's event stream with an
`elicitation/create` whose `params` is not an object, waits (bounded) for the client's reply to
that id, and ends the call with the reply it got. Without the HTTP guard the SDK ends the call
with a parse error and the request is never answered.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mcp_elicit.client import ElicitClient
from mcp_elicit.ui.scripted import ScriptedUI
from tests.e2e.servers import serving_app

pytestmark = pytest.mark.anyio
REPLY_BOUND_SECONDS = 10.0
BAD_REQUESTS = {
    "string-params": {
        "jsonrpc": "2.0",
        "id": "bad-1",
        "method": "elicitation/create",
        "params": "not an object",
    },
    "list-params": {"jsonrpc": "2.0", "id": 77, "method": "elicitation/create", "params": [1, 2]},
    "numeric-method": {"jsonrpc": "2.0", "id": "bad-3", "method": 12, "params": {}},
}


class HostileHttpServer:
    def __init__(self, bad: dict[str, Any]) -> None:
        self.bad = bad
        self.replies: list[dict[str, Any]] = []
        self.replied = anyio.Event()

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/mcp", self.endpoint, methods=["GET", "POST", "DELETE"])])

    async def endpoint(self, request: Request) -> Response:
        if request.method == "GET":
            return Response(status_code=405)
        if request.method == "DELETE":
            return Response(status_code=200)
        body = await request.json()
        headers = {"mcp-session-id": "hostile"}
        if "method" not in body:  # the client's reply to our request
            self.replies.append(body)
            self.replied.set()
            return Response(status_code=202, headers=headers)
        if body["method"] == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-http", "version": "1"},
            }
            return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": result}, headers=headers)
        if body["method"] == "tools/call":
            return StreamingResponse(self.call(body["id"]), media_type="text/event-stream", headers=headers)
        if "id" not in body:  # a notification
            return Response(status_code=202, headers=headers)
        tools = {"tools": [{"name": "anything", "inputSchema": {"type": "object"}}]}
        result = tools if body["method"] == "tools/list" else {}
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], "result": result}, headers=headers)

    async def call(self, call_id: Any) -> AsyncIterator[bytes]:
        yield b"event: message\ndata: " + json.dumps(self.bad).encode() + b"\n\n"
        with anyio.move_on_after(REPLY_BOUND_SECONDS):
            await self.replied.wait()
        text = json.dumps(self.replies)
        result = {"content": [{"type": "text", "text": text}]}
        yield (
            b"event: message\ndata: "
            + json.dumps({"jsonrpc": "2.0", "id": call_id, "result": result}).encode()
        )
        yield b"\n\n"


@pytest.mark.parametrize("case", list(BAD_REQUESTS))
async def test_an_unparseable_request_on_a_calls_stream_gets_an_error_reply_and_the_call_completes(
    case: str,
) -> None:
    server = HostileHttpServer(BAD_REQUESTS[case])
    ui = ScriptedUI([])
    async with (
        serving_app(server.app()) as origin,
        ElicitClient(f"{origin}/mcp", ui=ui, protocol="legacy") as c,
    ):
        with anyio.fail_after(REPLY_BOUND_SECONDS * 2):
            result = await c.call_tool("anything", {})
    (reply,) = server.replies
    assert reply["id"] == BAD_REQUESTS[case]["id"]
    assert reply["error"]["code"] == (-32600 if case == "numeric-method" else -32602)
    assert json.loads(result.content[0].text) == server.replies  # type: ignore[union-attr]
    assert ui.seen == []

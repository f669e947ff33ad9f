"""Clients on older revisions, by their own handshake: capability and revision decide together.

No peer SDK in this project's set negotiates 2025-06-18 or 2025-03-26 by default, so the test is
the peer: it speaks JSON-RPC itself to `mcp-elicit serve-reference --transport stdio`, as an older
host does. A 2025-06-18 client that lists `elicitation.url` (a 2025-11-25 capability) still gets
forms only: no URL request, no -32042. A 2025-03-26 client never gets `elicitation/create`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from mcp_elicit.core import wire_codes
from tests.peers.support import WAIT_BOUND_SECONDS
from tests.wire import require_spec, validate_wire

pytestmark = pytest.mark.anyio

SERVE_STDIO = [sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "stdio"]
NEEDS_FORMS = "This tool needs the client's elicitation.form capability, which this client did not declare."


class RawClient:
    """Newline-delimited JSON-RPC over the server's stdin and stdout, answering its requests
    with `answers` (in order) and keeping every request it sent."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.buffer = b""
        self.next_id = 0
        self.server_requests: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        while b"\n" not in self.buffer:
            self.buffer += await self.process.stdout.receive()
        line, _, self.buffer = self.buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request; answer the server's own requests until its response comes."""
        self.next_id += 1
        await self.send({"id": self.next_id, "method": method, "params": params})
        with anyio.fail_after(WAIT_BOUND_SECONDS):
            while True:
                message = await self.receive()
                if "method" in message and "id" in message:  # the server asks
                    self.server_requests.append(message)
                    answer = self.answers.pop(0) if self.answers else {"action": "cancel"}
                    await self.send({"id": message["id"], "result": answer})
                elif message.get("id") == self.next_id:
                    return message

    def elicitations(self) -> list[dict[str, Any]]:
        return [m["params"] for m in self.server_requests if m["method"] == "elicitation/create"]


@asynccontextmanager
async def raw_client(revision: str, capabilities: dict[str, Any]) -> AsyncIterator[RawClient]:
    async with await anyio.open_process(SERVE_STDIO, stderr=None) as process:
        client = RawClient(process)
        hello = await client.request(
            "initialize",
            {
                "protocolVersion": revision,
                "capabilities": capabilities,
                "clientInfo": {"name": "raw-peer", "version": "1.0.0"},
            },
        )
        assert hello["result"]["protocolVersion"] == revision
        await client.send({"method": "notifications/initialized"})
        try:
            yield client
        finally:
            assert process.stdin is not None
            await process.stdin.aclose()
            with anyio.fail_after(WAIT_BOUND_SECONDS):
                await process.wait()


def text(response: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in response["result"]["content"])


async def test_a_2025_06_18_client_that_lists_url_mode_gets_forms_and_never_a_url() -> None:
    require_spec()
    async with raw_client("2025-06-18", {"elicitation": {"url": {}}}) as client:
        client.answers = [
            {"action": "accept", "content": {"environment": "production", "region": "us-east"}},
            {"action": "accept", "content": {"confirm": True}},
        ]
        deployed = await client.request("tools/call", {"name": "deploy", "arguments": {"service": "search"}})
        handed_off = await client.request("tools/call", {"name": "connect_service", "arguments": {}})
        status = await client.request("tools/call", {"name": "service_status", "arguments": {}})
    assert text(deployed) == "Deployed search to production in us-east with 2 replicas."
    # forms, valid by the 2025-06-18 schema: a requestedSchema, never a URL or an elicitationId
    # (with `mode: "form"`, a 2025-11-25 field the older schema lets through: the SDK's request model
    # fills it in whatever the server passes)
    for params in client.elicitations():
        validate_wire("2025-06-18", "ElicitRequestParams", params)
        assert set(params) <= {"message", "requestedSchema", "mode"}
        assert params.get("mode", "form") == "form"
    assert [m["method"] for m in client.server_requests] == ["elicitation/create"] * 2
    for refused in (handed_off, status):
        assert "error" not in refused  # a tool error, never -32042 (2025-11-25 only)
        assert refused["result"]["isError"] is True
        assert "elicitation.url" in text(refused)


async def test_a_2025_03_26_client_gets_no_elicitation_create_whatever_it_declares() -> None:
    async with raw_client("2025-03-26", {"elicitation": {}}) as client:
        deployed = await client.request("tools/call", {"name": "deploy", "arguments": {"service": "search"}})
        status = await client.request("tools/call", {"name": "service_status", "arguments": {}})
    assert client.server_requests == []
    assert deployed["result"]["isError"] is True
    assert text(deployed) == NEEDS_FORMS
    assert status.get("error", {}).get("code") != wire_codes.URL_ELICITATION_REQUIRED
    assert status["result"]["isError"] is True

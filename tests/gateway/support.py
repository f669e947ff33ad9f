"""Helpers for the gateway tests: the mcpServers file, a gateway over stdio or HTTP, answering callbacks."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as t
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_elicit.gateway import Gateway, parse_config

PEERS = str(Path(__file__).with_name("peers.py"))


def servers(
    *, reference: bool = True, broken: bool = False, no_elicitation: str = "refuse"
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "sdk": {"command": sys.executable, "args": [PEERS, "sdk"], "noElicitation": no_elicitation},
        "fm": {"command": sys.executable, "args": [PEERS, "fastmcp"]},
    }
    if reference:
        found["ref"] = {
            "command": sys.executable,
            "args": ["-m", "mcp_elicit", "serve-reference", "--transport", "stdio"],
        }
    if broken:
        found["broken"] = {"command": "/nonexistent/mcp-server"}
    return found


def write_config(path: Path, users: dict[str, str] | None = None, **kw: Any) -> Path:
    path.write_text(json.dumps({"mcpServers": servers(**kw), **({"users": users} if users else {})}))
    return path


def stdio_gateway(config: Path) -> StdioServerParameters:
    args = ["-m", "mcp_elicit", "gateway", "--config", str(config)]
    # The whole environment, not the SDK's default subset: the test's own XDG trail (tests/conftest.py).
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


class Answers:
    """An elicitation callback: answers every form with `content`, remembering each message."""

    def __init__(self, content: dict[str, Any] | None = None, action: str = "accept") -> None:
        self.content = content if content is not None else {"name": "ann"}
        self.action = action
        self.messages: list[str] = []

    async def __call__(self, ctx: Any, params: Any) -> t.ElicitResult:
        self.messages.append(params.message)
        if self.action != "accept":
            return t.ElicitResult(action=self.action)  # type: ignore[arg-type]
        return t.ElicitResult(action="accept", content=self.content)


@asynccontextmanager
async def http_gateway(config_text: str, **kw: Any) -> AsyncIterator[tuple[Gateway, str]]:
    """An in-process gateway serving streamable HTTP on a free loopback port."""
    ready = anyio.Event()
    port: list[int] = []

    def started(p: int) -> None:
        port.append(p)
        ready.set()

    stop = anyio.Event()
    async with Gateway(parse_config(config_text), **kw) as gw, anyio.create_task_group() as tg:
        tg.start_soon(gw.serve_http, "127.0.0.1", 0, started, stop)
        with anyio.fail_after(30):
            await ready.wait()
        try:
            yield gw, f"http://127.0.0.1:{port[0]}/mcp"
        finally:
            stop.set()


async def greet_at_once(clients: dict[str, Client]) -> dict[str, Any]:
    """Each client calls `greet` at the same time; their results by name."""
    results: dict[str, Any] = {}

    async def call(who: str, client: Client) -> None:
        results[who] = await client.call_tool("greet", {})

    async with anyio.create_task_group() as tg:
        for who, client in clients.items():
            tg.start_soon(call, who, client)
    return results


def http_client(url: str, token: str | None, mode: str, callback: Any = None, **more: Any) -> Client:
    """The SDK's `Client` over streamable HTTP; `more` goes to it as is (e.g. `message_handler`)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60))
    kw = {"elicitation_callback": callback} if callback is not None else {}
    return Client(transport, mode=mode, **kw, **more)

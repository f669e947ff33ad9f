"""Gateway processes for the tests: `mcp-elicit gateway --listen 127.0.0.1:0` as a real subprocess,
its stderr drained into lines (so a busy log never blocks it, and tests can read what it said)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

STARTUP_BOUND_SECONDS = 60.0
_URL = re.compile(r"mcp-elicit gateway: (http://127\.0\.0\.1:\d+/mcp)")


@dataclass
class GatewayProcess:
    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    url: str = ""
    ready: threading.Event = field(default_factory=threading.Event)
    said: threading.Condition = field(default_factory=threading.Condition)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self.said:
                self.lines.append(line.rstrip("\n"))
                self.said.notify_all()
            found = _URL.search(line)
            if found and not self.url:
                self.url = found.group(1)
                self.ready.set()
        self.ready.set()  # exited: whoever waits learns it at once

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)

    def log(self) -> str:
        return "\n".join(self.lines)

    async def wait_for_line(self, text: str) -> list[str]:
        """The log lines containing `text`, once there is one (bounded)."""

        def wait() -> list[str]:
            with self.said:
                self.said.wait_for(lambda: any(text in line for line in self.lines), STARTUP_BOUND_SECONDS)
                return [line for line in self.lines if text in line]

        return await anyio.to_thread.run_sync(wait)


@contextmanager
def gateway_process(config: Path, env: dict[str, str] | None = None) -> Iterator[GatewayProcess]:
    argv = [sys.executable, "-m", "mcp_elicit", "gateway", "--config", str(config), "--listen", "127.0.0.1:0"]
    proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stderr=subprocess.PIPE, text=True)
    gateway = GatewayProcess(proc)
    threading.Thread(target=gateway._drain, daemon=True).start()
    try:
        yield gateway
    finally:
        gateway.stop()


async def started(gateway: GatewayProcess) -> str:
    """The gateway's MCP URL once it listens (bounded)."""
    done = await anyio.to_thread.run_sync(gateway.ready.wait, STARTUP_BOUND_SECONDS)
    assert done, f"the gateway did not start:\n{gateway.log()}"
    assert gateway.url, f"the gateway exited:\n{gateway.log()}"
    return gateway.url


def answer(action: str = "accept", content: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-07-28 retry's `inputResponses` for the gateway's one question."""
    return {"q": {"action": action, **({"content": content} if content is not None else {})}}

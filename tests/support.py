"""Small helpers shared by the tests: a scripted elicitation callback that records what it saw."""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as t

Responder = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class ScriptedCallback:
    """Answers each elicitation with the next scripted response and keeps the params it was sent."""

    script: list[dict[str, Any] | Responder]
    seen: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, context: Any, params: t.ElicitRequestParams) -> t.ElicitResult | t.ErrorData:
        wire = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.seen.append(wire)
        if not self.script:
            return t.ElicitResult(action="cancel")
        step = self.script.pop(0)
        answer = step(wire) if callable(step) else step
        return t.ElicitResult.model_validate(answer)


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def lines_of(stream: Iterable[str] | None) -> queue.Queue[str | None]:
    """The lines of `stream` (a subprocess's pipe), read by a thread into a queue; None once it
    ends. Tests wait on the queue with a bound instead of blocking on the pipe."""
    assert stream is not None
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def home_env(tmp_path: Path) -> dict[str, str]:
    """An environment for a command-line run that sees nothing of this machine's user: a fresh
    HOME and XDG folders under `tmp_path`, and only this venv's scripts on PATH."""
    home = tmp_path / "home"
    return {
        "PATH": str(Path(sys.executable).parent),
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
    }

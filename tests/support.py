"""Small helpers shared by the tests: a scripted elicitation callback that records what it saw."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
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

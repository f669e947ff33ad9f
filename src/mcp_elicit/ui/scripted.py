"""A UI that answers from a script: for automation, CI and tests (`mcp-elicit call --answers FILE`).

The script is a list of steps, or an object `{"steps": [...], "otherwise": ...}`:

```json
{
  "steps": [
    {"match": {"tool": "deploy"}, "action": "accept",
     "content": {"environment": "staging", "replicas": 2}},
    {"match": {"message": "production"}, "action": "decline"},
    {"accept_defaults": true, "content": {"name": "Ada"}},
    {"match": {"mode": "url"}, "action": "cancel", "repeat": true}
  ],
  "otherwise": "decline"
}
```

Each question takes the first step, in file order, whose `match` fits it and that has not been used
yet (a step with `"repeat": true` can be used again). Steps that do not fit stay for later
questions, so a script can be written in the order questions arrive or keyed by what they are about.

- `action`: `accept` (default), `decline` or `cancel`.
- `content`: the answers of an accept, field name to value. Fields left out get their defaults
  when the pipeline validates; an invalid answer is not sent (the question is cancelled).
- `accept_defaults`: accept with the pre-filled defaults, `content` overriding some of them.
- `match` (all keys optional, all must fit): `message` (a substring of the cleaned message),
  `tool` (the tool, prompt or resource the question belongs to), `method` (`tools/call`,
  `prompts/get`, `resources/read`), `server` (the server's name), `mode` (`form` or `url`),
  `fields` (names the form must have).
- `otherwise`: what a question no step fits gets: `decline` (default), `cancel` or
  `accept_defaults`. The UI says so in a notice.

In Python, `ScriptedUI(steps)` takes the same steps as dicts or `Step`s, or a callable
`(prompt) -> UIResult | dict | None` (sync or async; a dict is a step, None means unscripted).
`seen` keeps every prompt the UI was shown and `notices` every notice, for assertions.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from mcp_elicit.errors import ConfigError
from mcp_elicit.ui.base import FormPrompt, Requester, UIResult, UrlPrompt

__all__ = ["Match", "ScriptedUI", "Step"]

Prompt = FormPrompt | UrlPrompt
ScriptFunction = Callable[[Prompt], Any]

_ACTIONS: Final = ("accept", "decline", "cancel")
_OTHERWISE: Final = ("decline", "cancel", "accept_defaults")
_STEP_KEYS: Final = frozenset({"match", "action", "content", "accept_defaults", "repeat"})
_MATCH_KEYS: Final = frozenset({"message", "tool", "method", "server", "mode", "fields"})


@dataclass(frozen=True, slots=True)
class Match:
    """Which questions a step answers; every given key must fit."""

    message: str | None = None
    tool: str | None = None
    method: str | None = None
    server: str | None = None
    mode: Literal["form", "url"] | None = None
    fields: tuple[str, ...] = ()

    def fits(self, prompt: Prompt) -> bool:
        is_form = isinstance(prompt, FormPrompt)
        return (
            (self.message is None or self.message in prompt.message)
            and (self.tool is None or self.tool == prompt.purpose.target)
            and (self.method is None or self.method == prompt.purpose.method)
            and (self.server is None or self.server == prompt.requester.name)
            and (self.mode is None or self.mode == ("form" if is_form else "url"))
            and (
                not self.fields
                or (isinstance(prompt, FormPrompt) and set(self.fields) <= set(prompt.form.names))
            )
        )


@dataclass(frozen=True, slots=True)
class Step:
    """One scripted answer (see the module docstring for the JSON form)."""

    action: Literal["accept", "decline", "cancel"] = "accept"
    content: Mapping[str, Any] | None = None
    accept_defaults: bool = False
    match: Match = field(default_factory=Match)
    repeat: bool = False

    def answer(self, prompt: Prompt) -> UIResult:
        if self.action != "accept" or isinstance(prompt, UrlPrompt):
            return UIResult(self.action, decided_by="script")
        base = dict(prompt.values) if self.accept_defaults else {}
        return UIResult("accept", {**base, **(self.content or {})}, decided_by="script")


class ScriptedUI:
    """Answers from a script; a question nobody scripted gets `otherwise` (decline) and a notice."""

    def __init__(
        self,
        script: Iterable[Step | Mapping[str, Any]] | ScriptFunction | None = None,
        *,
        otherwise: Literal["decline", "cancel", "accept_defaults"] = "decline",
    ) -> None:
        if otherwise not in _OTHERWISE:
            raise ConfigError("otherwise", f"must be one of {', '.join(_OTHERWISE)}")
        self._function: ScriptFunction | None = None
        self._steps: list[Step] = []
        if callable(script):
            self._function = script
        elif script is not None:
            self._steps = [
                s if isinstance(s, Step) else _step(s, f"steps[{i}]") for i, s in enumerate(script)
            ]
        self._used: set[int] = set()
        self.otherwise = otherwise
        self.seen: list[Prompt] = []
        self.notices: list[str] = []

    @classmethod
    def accept_defaults(cls) -> ScriptedUI:
        """Accept every form with its defaults (and consent to every URL): the conformance client."""
        return cls(otherwise="accept_defaults")

    @classmethod
    def from_json(cls, data: Any, *, source: str = "") -> ScriptedUI:
        """A script from parsed JSON: a list of steps or `{"steps": [...], "otherwise": ...}`."""
        otherwise: Any = "decline"
        if isinstance(data, Mapping):
            unknown = set(data) - {"steps", "otherwise"}
            if unknown:
                raise ConfigError(sorted(unknown)[0], "unknown key (expected steps, otherwise)", source)
            otherwise = data.get("otherwise", "decline")
            if otherwise not in _OTHERWISE:
                raise ConfigError("otherwise", f"must be one of {', '.join(_OTHERWISE)}", source)
            data = data.get("steps", [])
        if not isinstance(data, list):
            raise ConfigError("steps", "must be a list of steps", source)
        try:
            steps = [_step(s, f"steps[{i}]") for i, s in enumerate(data)]
        except ConfigError as err:
            raise ConfigError(err.key, err.problem, source) from None
        return cls(steps, otherwise=otherwise)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedUI:
        """A script from a JSON file (see the module docstring)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ConfigError("", f"cannot read the answers file: {err}", str(path)) from err
        return cls.from_json(data, source=str(path))

    # -- the UI protocol ------------------------------------------------------------------------

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        return await self._answer(prompt)

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        return await self._answer(prompt)

    async def notice(self, requester: Requester, text: str) -> None:
        self.notices.append(text)

    async def _answer(self, prompt: Prompt) -> UIResult:
        self.seen.append(prompt)
        if isinstance(prompt, FormPrompt) and prompt.errors:
            # The pipeline refused this script's answer; asking the script again cannot help.
            problems = "; ".join(f"{name or 'form'}: {why}" for name, why in prompt.errors.items())
            self.notices.append(f"The scripted answer was refused ({problems}): cancelled.")
            return UIResult("cancel", decided_by="script")
        scripted = await self._scripted(prompt)
        if scripted is not None:
            return scripted
        if self.otherwise == "accept_defaults":
            return Step(accept_defaults=True).answer(prompt)
        what = {"decline": "declined", "cancel": "cancelled"}[self.otherwise]
        self.notices.append(f"No scripted answer for {prompt.message[:80]!r}: {what}.")
        return UIResult("decline" if self.otherwise == "decline" else "cancel", decided_by="script")

    async def _scripted(self, prompt: Prompt) -> UIResult | None:
        if self._function is not None:
            result = self._function(prompt)
            if inspect.isawaitable(result):
                result = await result
            if result is None or isinstance(result, UIResult):
                return result
            step = result if isinstance(result, Step) else _step(result, "result")
            return step.answer(prompt)
        for i, step in enumerate(self._steps):
            if (step.repeat or i not in self._used) and step.match.fits(prompt):
                self._used.add(i)
                return step.answer(prompt)
        return None


def _step(raw: Any, where: str) -> Step:
    if not isinstance(raw, Mapping):
        raise ConfigError(where, "a step must be an object")
    unknown = set(raw) - _STEP_KEYS
    if unknown:
        raise ConfigError(
            f"{where}.{sorted(unknown)[0]}", f"unknown key (expected {', '.join(sorted(_STEP_KEYS))})"
        )
    action = raw.get("action", "accept")
    if action not in _ACTIONS:
        raise ConfigError(f"{where}.action", f"must be one of {', '.join(_ACTIONS)}")
    content = raw.get("content")
    if content is not None and not (
        isinstance(content, Mapping) and all(isinstance(k, str) for k in content)
    ):
        raise ConfigError(f"{where}.content", "must be an object of field name to value")
    for key in ("accept_defaults", "repeat"):
        if not isinstance(raw.get(key, False), bool):
            raise ConfigError(f"{where}.{key}", "must be true or false")
    if raw.get("accept_defaults") and action != "accept":
        raise ConfigError(f"{where}.accept_defaults", "only with action accept")
    return Step(
        action=action,
        content=dict(content) if content is not None else None,
        accept_defaults=raw.get("accept_defaults", False),
        match=_match(raw.get("match", {}), f"{where}.match"),
        repeat=raw.get("repeat", False),
    )


def _match(raw: Any, where: str) -> Match:
    if not isinstance(raw, Mapping):
        raise ConfigError(where, "must be an object")
    unknown = set(raw) - _MATCH_KEYS
    if unknown:
        raise ConfigError(
            f"{where}.{sorted(unknown)[0]}", f"unknown key (expected {', '.join(sorted(_MATCH_KEYS))})"
        )
    for key in ("message", "tool", "method", "server"):
        if key in raw and not isinstance(raw[key], str):
            raise ConfigError(f"{where}.{key}", "must be a string")
    if raw.get("mode", "form") not in ("form", "url"):
        raise ConfigError(f"{where}.mode", "must be form or url")
    fields = raw.get("fields", [])
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise ConfigError(f"{where}.fields", "must be a list of field names")
    return Match(
        message=raw.get("message"),
        tool=raw.get("tool"),
        method=raw.get("method"),
        server=raw.get("server"),
        mode=raw.get("mode"),
        fields=tuple(fields),
    )

"""A UI that answers from a script: for automation, CI and tests (`mcp-elicit call --answers FILE`).

The script is a list of steps, or an object `{"steps": [...], "otherwise": ...}`:

```json
{
  "steps": [
    {"match": {"tool": "deploy"}, "action": "accept",
     "content": {"environment": "staging", "replicas": 2}},
    {"match": {"message": "production"}, "action": "decline"},
    {"accept_defaults": true, "content": {"name": "Ada"}},
    {"url": "open", "match": {"tool": "connect_service"}},
    {"match": {"mode": "url"}, "action": "cancel", "repeat": true}
  ],
  "otherwise": "decline",
  "waiting": ["retry"]
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
- `url`: consent for a URL question (U3): `open` (accept: the client opens the page), `decline`
  or `cancel`. Shorthand for `"match": {"mode": "url"}` with that action.
- `otherwise`: what a question no step fits gets: `decline` (default), `cancel` or
  `accept_defaults`. The UI says so in a notice.
- `waiting`: what the script does on each waiting screen after a page was opened, in order:
  `retry` (check now), `open` (open the page again) or `cancel`; once the list is used up (or
  without it) the script just waits for the page to be finished.

Consent to open a page must be explicit: a URL question is only answered by a step that names URL
mode (`url`, or `match.mode: "url"`); steps without it are for forms, and `otherwise:
accept_defaults` declines a URL question.

In Python, `ScriptedUI(steps)` takes the same steps as dicts or `Step`s, or a callable
`(prompt) -> UIResult | dict | None` (sync or async; a dict is a step, None means unscripted).
`waiting` takes the same choices, or a callable `(waiting) -> choice | None` (None: just wait).
`seen` keeps every prompt the UI was shown, `waits` every waiting screen and `notices` every
notice, for assertions. The page itself is driven by the opener the client is given
(`UrlMode(opener=...)`), not by the UI.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import anyio

from mcp_elicit.client.ui_protocol import FormPrompt, Requester, UIResult, UrlPrompt, UrlWaiting, WaitChoice
from mcp_elicit.core.actions import ACTIONS, Action
from mcp_elicit.core.text import clean_text
from mcp_elicit.errors import ConfigError

__all__ = ["Match", "ScriptedUI", "Step"]

Prompt = FormPrompt | UrlPrompt
ScriptFunction = Callable[[Prompt], Any]
WaitFunction = Callable[[UrlWaiting], Any]

_OTHERWISE: Final = ("decline", "cancel", "accept_defaults")
_STEP_KEYS: Final = frozenset({"match", "action", "content", "accept_defaults", "repeat", "url"})
_URLACTIONS: Final = {"open": "accept", "decline": "decline", "cancel": "cancel"}
_WAIT_CHOICES: Final = ("retry", "open", "cancel")
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
            # a URL question needs a step that names URL mode: consent is never implied (U3)
            and (self.mode == "url" if not is_form else self.mode in (None, "form"))
            and (
                not self.fields
                or (isinstance(prompt, FormPrompt) and set(self.fields) <= set(prompt.form.names))
            )
        )


@dataclass(frozen=True, slots=True)
class Step:
    """One scripted answer (see the module docstring for the JSON form)."""

    action: Action = "accept"
    content: Mapping[str, Any] | None = None
    accept_defaults: bool = False
    match: Match = field(default_factory=Match)
    repeat: bool = False

    def answer(self, prompt: Prompt) -> UIResult:
        if self.action != "accept" or isinstance(prompt, UrlPrompt):
            return UIResult(self.action, decided_by="script")
        base = dict(prompt.values) if self.accept_defaults else {}
        return UIResult("accept", {**base, **(self.content or {})}, decided_by="script")


# Characters of the reason a refused scripted answer leaves in its outcome (`call --json`).
MAX_REASON_CHARS: Final = 500

# What a scripted UI remembers of what it was shown (`seen`, `notices`, `waits`), each: the most
# recent ones. A script can serve a process for days; its history must not grow with every question
# (memory, and the garbage collector's work on every object kept).
MAX_REMEMBERED: Final = 1_000


def _remember(kept: list[Any], item: Any) -> None:
    kept.append(item)
    if len(kept) > MAX_REMEMBERED:
        del kept[: len(kept) - MAX_REMEMBERED]


class ScriptedUI:
    """Answers from a script; a question nobody scripted gets `otherwise` (decline) and a notice.

    `seen`, `notices` and `waits` keep the last `MAX_REMEMBERED` prompts, notices and waiting screens.
    """

    scripted: Final = True  # its choices are recorded as decided_by "script", never "person"

    def __init__(
        self,
        script: Iterable[Step | Mapping[str, Any]] | ScriptFunction | None = None,
        *,
        otherwise: Literal["decline", "cancel", "accept_defaults"] = "decline",
        waiting: Iterable[WaitChoice] | WaitFunction = (),
    ) -> None:
        if otherwise not in _OTHERWISE:
            raise ConfigError("otherwise", f"must be one of {', '.join(_OTHERWISE)}")
        self._wait_function: WaitFunction | None = None
        self._waiting: list[WaitChoice] = []
        if callable(waiting):
            self._wait_function = waiting
        else:
            self._waiting = [_wait_choice(c, f"waiting[{i}]") for i, c in enumerate(waiting)]
        self.waits: list[UrlWaiting] = []
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
        """Accept every form with its defaults (URL questions are declined): the conformance client."""
        return cls(otherwise="accept_defaults")

    @classmethod
    def from_json(cls, data: Any, *, source: str = "") -> ScriptedUI:
        """A script from parsed JSON: a list of steps or `{"steps": [...], "otherwise": ...}`."""
        otherwise: Any = "decline"
        waiting: Any = []
        if isinstance(data, Mapping):
            unknown = set(data) - {"steps", "otherwise", "waiting"}
            if unknown:
                raise ConfigError(
                    sorted(unknown)[0], "unknown key (expected steps, otherwise, waiting)", source
                )
            otherwise = data.get("otherwise", "decline")
            if otherwise not in _OTHERWISE:
                raise ConfigError("otherwise", f"must be one of {', '.join(_OTHERWISE)}", source)
            waiting = data.get("waiting", [])
            if not isinstance(waiting, list):
                raise ConfigError("waiting", f"must be a list of {', '.join(_WAIT_CHOICES)}", source)
            data = data.get("steps", [])
        if not isinstance(data, list):
            raise ConfigError("steps", "must be a list of steps", source)
        try:
            steps = [_step(s, f"steps[{i}]") for i, s in enumerate(data)]
            return cls(steps, otherwise=otherwise, waiting=waiting)
        except ConfigError as err:
            raise ConfigError(err.key, err.problem, source) from None

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

    async def wait_url(self, waiting: UrlWaiting) -> WaitChoice:
        """The next scripted choice on a waiting screen; without one, wait to be cancelled."""
        _remember(self.waits, waiting)
        choice: Any = None
        if self._wait_function is not None:
            choice = self._wait_function(waiting)
            if inspect.isawaitable(choice):
                choice = await choice
            if choice is not None:
                choice = _wait_choice(choice, "waiting result")
        elif self._waiting:
            choice = self._waiting.pop(0)
        if choice is None:
            await anyio.sleep_forever()
        return choice  # type: ignore[no-any-return]

    async def notice(self, requester: Requester, text: str) -> None:
        _remember(self.notices, text)

    async def _answer(self, prompt: Prompt) -> UIResult:
        _remember(self.seen, prompt)
        if isinstance(prompt, FormPrompt) and prompt.errors:
            # The pipeline refused this script's answer; asking the script again cannot help.
            problems = "; ".join(f"{name or 'form'}: {why}" for name, why in prompt.errors.items())
            _remember(self.notices, f"The scripted answer was refused ({problems}): cancelled.")
            reason = clean_text(
                f"scripted_answer_refused: {problems}", limit=MAX_REASON_CHARS, multiline=False
            )
            return UIResult("cancel", decided_by="script", reason=reason)
        scripted = await self._scripted(prompt)
        if scripted is not None:
            return scripted
        if self.otherwise == "accept_defaults" and isinstance(prompt, FormPrompt):
            return Step(accept_defaults=True).answer(prompt)
        if isinstance(prompt, UrlPrompt):
            _remember(
                self.notices, f"No scripted consent to open the page for {prompt.message[:80]!r}: declined."
            )
            return UIResult("decline", decided_by="script")
        what = {"decline": "declined", "cancel": "cancelled"}[self.otherwise]
        _remember(self.notices, f"No scripted answer for {prompt.message[:80]!r}: {what}.")
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


def _object(raw: Any, where: str, keys: frozenset[str], what: str) -> Mapping[str, Any]:
    """`raw` as an object with only `keys`; ConfigError naming the first unknown key otherwise."""
    if not isinstance(raw, Mapping):
        raise ConfigError(where, f"{what} must be an object")
    unknown = set(raw) - keys
    if unknown:
        raise ConfigError(
            f"{where}.{sorted(unknown)[0]}", f"unknown key (expected {', '.join(sorted(keys))})"
        )
    return raw


def _step(raw: Any, where: str) -> Step:
    raw = _object(raw, where, _STEP_KEYS, "a step")
    action = raw.get("action", "accept")
    if action not in ACTIONS:
        raise ConfigError(f"{where}.action", f"must be one of {', '.join(ACTIONS)}")
    match = _match(raw.get("match", {}), f"{where}.match")
    if "url" in raw:
        if raw["url"] not in _URLACTIONS:
            raise ConfigError(f"{where}.url", f"must be one of {', '.join(_URLACTIONS)}")
        if "action" in raw or "content" in raw or raw.get("accept_defaults") or match.mode == "form":
            raise ConfigError(f"{where}.url", "a URL step has no action, content or form match")
        action = _URLACTIONS[raw["url"]]
        match = dataclasses.replace(match, mode="url")
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
        match=match,
        repeat=raw.get("repeat", False),
    )


def _wait_choice(raw: Any, where: str) -> WaitChoice:
    if raw not in _WAIT_CHOICES:
        raise ConfigError(where, f"must be one of {', '.join(_WAIT_CHOICES)}")
    return raw  # type: ignore[no-any-return]


def _match(raw: Any, where: str) -> Match:
    raw = _object(raw, where, _MATCH_KEYS, "a match")
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

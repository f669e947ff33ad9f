"""The stages of the client pipeline, in order. Each is small and replaceable.

A stage is any object with a `name` and `async __call__(elicitation) -> Decision | None`: it reads
the `Elicitation`, may fill in what it established, and returns None to pass it on or a `Decision`
to end the chain (see `client/model.py`). The default chain:

1. `identify`: cleans who is asking (server name, title, version, where it runs) and for what;
   warns when the question cannot be tied to a request. Never decides.
2. `check_mode`: params must be an object with a string `message`; `mode` absent means form (F4);
   a mode the client did not declare is refused with -32602 (C1) and never shown.
3. `gate_schema`: the strict parser on `requestedSchema` (F1, F2, the limits); a schema the spec
   does not allow is refused with -32602 naming the field and the problem, never half-rendered.
4. `clean_text`: message, titles, descriptions and option labels made safe to show
   (`core/text.py`); defaults pre-filled when safe (F6). Never decides.
5. *(extension point)*: URL checks, the secret guard, policy and auditing plug in here, before
   `ask`, and decide with `Refuse` or `Reply` (a denial is a value).
6. `ask`: one question at a time through the UI, with an idle timeout; the answer is validated on
   the client and an invalid one goes back to the person (F7), a bounded number of times.

`Pipeline.insert(stage, before="ask")` adds a stage; `Pipeline.replace(stage)` swaps the one with
the same name.
"""

from __future__ import annotations

import dataclasses
import logging
import marshal
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final, Protocol, cast, runtime_checkable

import anyio

from mcp_elicit.client.asking import show_bounded
from mcp_elicit.client.model import Decision, Elicitation, Refuse, Reply
from mcp_elicit.client.names import cleaned_requester
from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, UserInterface
from mcp_elicit.core import limits
from mcp_elicit.core.actions import Action
from mcp_elicit.core.consent import DecidedBy
from mcp_elicit.core.forms import MISSING, Field, Form, Option, parse_schema
from mcp_elicit.core.revisions import wire_revision
from mcp_elicit.core.text import clean_text, has_hidden_characters, sanitize
from mcp_elicit.errors import AnswerError, SchemaError

__all__ = [
    "AnswerWithoutAsking",
    "AskThroughUI",
    "CheckMode",
    "CleanText",
    "GateSchema",
    "Identify",
    "Stage",
    "default_stages",
]

logger = logging.getLogger(__name__)

MODES: Final = frozenset({"form", "url"})

# Characters of a refusal message sent back to the server: the first problems are enough to fix it.
_MAX_REFUSAL_CHARS: Final = 1_000
_REFUSAL_PROBLEMS: Final = 5


@runtime_checkable
class Stage(Protocol):
    name: str

    async def __call__(self, e: Elicitation) -> Decision | None: ...


class Recent:
    """The last few results of a pure, costly step, keyed by its input (least recently used out).

    A server asks the same forms again and again; parsing and cleaning a schema it sent before
    then costs one lookup. Only small inputs are kept, so a hostile server cannot make the cache
    hold much (`CACHED_FORMS` entries of at most `CACHED_SCHEMA_CHARS` characters each).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        value = self.items.get(key)
        if value is not None:
            self.items.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        self.items[key] = value
        if len(self.items) > self.size:
            self.items.popitem(last=False)


# Forms kept parsed and cleaned per stage, and the size of a schema (as JSON) worth keeping;
# server identities kept cleaned (one per server a pipeline serves, in practice).
CACHED_FORMS: Final = 32
CACHED_SCHEMA_CHARS: Final = 16_384
_CACHED_IDENTITIES: Final = 32


class Identify:
    """Who is asking and for what, cleaned for display; says so when the request is unknown."""

    name = "identify"

    def __init__(self) -> None:
        self._recent = Recent(_CACHED_IDENTITIES)  # the same server asks again and again

    async def __call__(self, e: Elicitation) -> Decision | None:
        raw = e.requester
        requester = self._recent.get(raw)
        if requester is None:
            requester = cleaned_requester(raw)
            self._recent.put(raw, requester)
        e.requester = requester
        p = e.purpose
        if p.target is not None and not _plain(p.target):
            # The target is the person's own request (a tool name, a resource URI): not defanged.
            target = clean_text(p.target, limit=limits.MAX_TITLE_CHARS, multiline=False, defang=False)
            e.purpose = Purpose(p.method, target, p.arguments)
        if e.attribution == "none":
            e.warnings.append("This question could not be tied to a request you made.")
        return None


class CheckMode:
    """The request's shape and mode: a form or URL request of a mode the client declared (F4, C1)."""

    name = "check_mode"

    async def __call__(self, e: Elicitation) -> Decision | None:
        params = e.params
        if not isinstance(params, Mapping):
            return Refuse("params_not_object", "elicitation/create params must be an object")
        mode = params.get("mode", "form")
        if not isinstance(mode, str) or mode not in MODES:
            return Refuse("unknown_mode", f"unknown elicitation mode {_brief(mode)}; expected form or url")
        e.mode = mode
        if mode not in e.declared_modes:
            return Refuse("undeclared_mode", f"this client did not declare the {mode} elicitation mode")
        if not isinstance(params.get("message"), str):
            return Refuse("bad_params", "message must be a string")
        if mode == "url":
            if not isinstance(params.get("url"), str):
                return Refuse("bad_params", "url must be a string")
            e.url = params["url"]
        return None


def _schema_key(schema: Any, revision: str) -> bytes | None:
    # marshal tells 1, 1.0 and True apart (the strict parser does too), keeps key order like the
    # wire, and costs a third of repr (a quarter of json.dumps). Wire JSON holds only types it takes.
    try:
        data = marshal.dumps(schema)
    except (ValueError, RecursionError):  # not plain JSON values; absurd nesting
        return None
    return revision.encode() + b":" + data if len(data) <= CACHED_SCHEMA_CHARS else None


class GateSchema:
    """The strict parser on `requestedSchema` (F1, F2, limits); refuse rather than half-render."""

    name = "gate_schema"

    def __init__(self) -> None:
        self._recent = Recent(CACHED_FORMS)

    async def __call__(self, e: Elicitation) -> Decision | None:
        if e.mode != "form":
            return None
        params = e.params
        if "requestedSchema" not in params:
            return Refuse("schema", "a form request must include requestedSchema (F4)")
        revision = wire_revision(e.protocol)
        key = _schema_key(params["requestedSchema"], revision)
        e.schema_key = key
        if key is not None and (known := self._recent.get(key)) is not None:
            e.form, unfit = known
            e.warnings.extend(_unfit_default_warnings(unfit))
            return None
        try:
            form, unfit = _parse_without_unfit_defaults(params["requestedSchema"], revision)
        except SchemaError as err:
            shown = "; ".join(
                f"{f'field {p.field!r}' if p.field else 'schema'}: {p.keyword}: {p.problem}"
                for p in err.problems[:_REFUSAL_PROBLEMS]
            )
            more = len(err.problems) - _REFUSAL_PROBLEMS
            text = f"requestedSchema refused: {shown}" + (f" (+{more} more)" if more > 0 else "")
            return Refuse("schema", text[:_MAX_REFUSAL_CHARS])
        # Field names and option values travel back in the answer and cannot be cleaned; the spec
        # has no use for hidden characters in them, so a form that has some is refused. The form
        # model refuses them by the same rule (so the parser above has already); this check keeps
        # the client's own guard in the client.
        for f in form.fields:
            if has_hidden_characters(f.name):
                return Refuse(
                    "schema", f"requestedSchema refused: field {f.name!r}: hidden characters in the name"
                )
            for o in f.options:
                if has_hidden_characters(o.value):
                    return Refuse(
                        "schema",
                        f"requestedSchema refused: field {f.name!r}: hidden characters in option {o.value!r}",
                    )
        if key is not None:
            self._recent.put(key, (form, unfit))
        e.form = form
        e.warnings.extend(_unfit_default_warnings(unfit))
        return None


def _parse_without_unfit_defaults(schema: Any, revision: str) -> tuple[Form, tuple[str, ...]]:
    """The strict parse, except that a default which does not fit its own field (a peer's
    optional `str = ""` with format uri, a number outside its range) is left out rather than
    refusing the whole form: the field is asked without a pre-filled value (F6 pre-fills only
    what is valid). Returns the form and the names of the fields whose default was left out;
    any other problem still refuses the form."""
    try:
        return parse_schema(schema, revision=revision), ()
    except SchemaError as err:
        unfit = {p.field for p in err.problems if p.keyword == "default" and p.field}
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if (
            not unfit
            or any(p.keyword != "default" or p.field not in unfit for p in err.problems)
            or not isinstance(properties, Mapping)
            or not unfit <= set(properties)
        ):
            raise
        trimmed = {
            **schema,
            "properties": {
                name: (
                    {k: v for k, v in prop.items() if k != "default"}
                    if name in unfit and isinstance(prop, Mapping)
                    else prop
                )
                for name, prop in properties.items()
            },
        }
        return parse_schema(trimmed, revision=revision), tuple(sorted(unfit))


def _unfit_default_warnings(unfit: tuple[str, ...]) -> list[str]:
    return [
        f"The server's default for {name!r} was not pre-filled: it does not fit the field." for name in unfit
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class _Shown:
    """A form as shown: cleaned, with its safe defaults, the titles of held-back defaults, and
    whether its text hid anything."""

    source: Form
    form: Form
    values: Mapping[str, Any]
    held_back: tuple[str, ...]
    hidden: bool


class CleanText:
    """Everything the server wrote, made safe to show (core/text.py); defaults pre-filled if safe."""

    name = "clean_text"

    def __init__(self) -> None:
        self._recent = Recent(CACHED_FORMS)
        self._messages = Recent(CACHED_FORMS)  # a server sends the same message again and again

    async def __call__(self, e: Elicitation) -> Decision | None:
        raw = e.params.get("message", "") if isinstance(e.params, Mapping) else ""
        cacheable = isinstance(raw, str) and len(raw) <= CACHED_SCHEMA_CHARS
        message = self._messages.get(raw) if cacheable else None
        if message is None:
            message = sanitize(raw, limit=limits.MAX_MESSAGE_CHARS)
            if cacheable:
                self._messages.put(raw, message)
        e.message = message.text
        suspicious = message.suspicious
        if message.cut:
            e.warnings.append(f"The message was cut at {limits.MAX_MESSAGE_CHARS} characters.")
        if e.form is not None:
            shown = self._shown(e.form)
            e.prompt_form = shown.form
            # A copy per question: the person's answers to a multi-select must not reach the cache.
            e.values = {k: list(v) if isinstance(v, list) else v for k, v in shown.values.items()}
            if shown.held_back:
                e.warnings.extend(
                    f"The server's default for {title!r} was not pre-filled: "
                    "it contained hidden or control characters."
                    for title in shown.held_back
                )
            suspicious = suspicious or shown.hidden
        if suspicious:
            e.warnings.append(
                "The server's text contained terminal control sequences or hidden characters: "
                "they were removed or are shown as ⟨U+…⟩."
            )
        return None

    def _shown(self, form: Form) -> _Shown:
        # Keyed by identity: GateSchema hands out the same Form for the same schema. The entry
        # keeps its source alive, so the id cannot be reused by another form while cached.
        cached = self._recent.get(id(form))
        if cached is not None and cached.source is form:
            return cast(_Shown, cached)
        fields, held_back, hidden = [], [], False
        for f in form.fields:
            field, field_hidden, held = _clean_field(f)
            fields.append(field)
            hidden = hidden or field_hidden
            if held:
                held_back.append(field.title or field.name)
        prompt_form = Form(tuple(fields))
        values = {
            f.name: list(f.default) if f.kind == "multi_select" else f.default
            for f in prompt_form.fields
            if f.has_default
        }
        shown = _Shown(form, prompt_form, values, tuple(held_back), hidden)
        self._recent.put(id(form), shown)
        return shown


def _clean_field(f: Field) -> tuple[Field, bool, bool]:
    """The field as shown (cleaned title, description, option labels), whether anything was hidden
    in its text, and whether an unsafe string default was held back."""
    title = sanitize(
        f.title if f.title is not None else f.name, limit=limits.MAX_TITLE_CHARS, multiline=False
    )
    description = (
        sanitize(f.description, limit=limits.MAX_DESCRIPTION_CHARS) if f.description is not None else None
    )
    hidden = title.suspicious or (description is not None and description.suspicious)
    changes: dict[str, Any] = {"title": title.text, "description": description and description.text}
    if f.options:
        labels = [
            sanitize(
                o.title if o.title is not None else o.value, limit=limits.MAX_TITLE_CHARS, multiline=False
            )
            for o in f.options
        ]
        hidden = hidden or any(label.suspicious for label in labels)
        # Every option gets a title, so a UI never has to show a raw value.
        changes["options"] = tuple(
            Option(o.value, label.text) for o, label in zip(f.options, labels, strict=True)
        )
        changes["titled"] = True
    held_back = f.kind == "string" and isinstance(f.default, str) and has_hidden_characters(f.default)
    if held_back:
        changes["default"] = MISSING
    return dataclasses.replace(f, **changes), hidden, held_back


class AskThroughUI:
    """Ask through the UI, one question at a time, with an idle timeout; validate before sending."""

    name = "ask"

    def __init__(
        self,
        ui: UserInterface,
        *,
        idle_timeout: float | None = limits.ELICITATION_IDLE_TIMEOUT_SECONDS,
        max_reasks: int = limits.MAX_REASKS,
        max_waiting: int = limits.MAX_WAITING_ELICITATIONS,
    ) -> None:
        self.ui = ui
        self.idle_timeout = idle_timeout
        self.max_reasks = max_reasks
        self.max_waiting = max_waiting
        # fast_acquire: an uncontended lock (the usual case) costs no trip through the event loop.
        self._turn = anyio.Lock(fast_acquire=True)
        self._waiting = 0

    async def __call__(self, e: Elicitation) -> Decision | None:
        if self._waiting >= self.max_waiting:
            return Reply("cancel", "rate_limit", reason="queue_full")
        self._waiting += 1
        try:
            await self._turn.acquire()
        finally:
            self._waiting -= 1
        try:
            return await (self._ask_url(e) if e.mode == "url" else self._ask_form(e))
        finally:
            self._turn.release()

    async def _ask_form(self, e: Elicitation) -> Decision:
        form = e.prompt_form
        if form is None:
            return Reply("cancel", "error", reason="no_form")
        prompt = FormPrompt(
            e.requester, e.purpose, e.message, form, values=e.values, warnings=tuple(e.warnings)
        )
        decided_by: DecidedBy = "person"
        for _ in range(self.max_reasks + 1):
            result = await show_bounded(self.ui.ask_form, prompt, self.idle_timeout)
            if isinstance(result, Reply):
                return result
            decided_by = result.decided_by
            if result.action != "accept":
                return Reply(result.action, decided_by, reason=result.reason)
            try:
                return Reply("accept", decided_by, content=form.validate(result.content or {}))
            except AnswerError as err:
                given = result.content if isinstance(result.content, Mapping) else {}
                prompt = dataclasses.replace(
                    prompt,
                    values={**prompt.values, **{k: v for k, v in given.items() if k in form.names}},
                    errors={
                        p.field: clean_text(p.detail or p.code, limit=limits.MAX_TITLE_CHARS, multiline=False)
                        for p in err.problems
                    },
                )
        return Reply("cancel", decided_by, reason="invalid_answers")

    async def _ask_url(self, e: Elicitation) -> Decision:
        if e.url_prompt is None:
            # Showing an unchecked URL is not safe (U3, U4): URL mode needs the URL check stage.
            await self.ui.notice(e.requester, "A URL request was cancelled: no URL check is configured.")
            return Reply("cancel", "error", reason="url_unchecked")
        result = await show_bounded(self.ui.ask_url, e.url_prompt, self.idle_timeout)
        if isinstance(result, Reply):
            return result
        return Reply(result.action, result.decided_by, reason=result.reason)


class AnswerWithoutAsking:
    """Reply every question that reaches it the same way, without asking, and say so.

    `mcp-elicit call` puts one before `ask` when there is no terminal and no scripted answers:
    it never waits for input, and every question is cancelled with `decided_by="no_terminal"`.
    """

    def __init__(
        self,
        ui: UserInterface,
        action: Action = "cancel",
        decided_by: Any = "no_terminal",
        reason: str = "no_terminal",
        notice: str = "No terminal to ask on: the question was cancelled.",
        name: str = "answer_without_asking",
    ) -> None:
        self.ui = ui
        self.action: Action = action
        self.decided_by = decided_by
        self.reason = reason
        self.notice = notice
        self.name = name

    async def __call__(self, e: Elicitation) -> Decision | None:
        await self.ui.notice(e.requester, self.notice)
        return Reply(self.action, self.decided_by, reason=self.reason)


def default_stages(
    ui: UserInterface,
    *,
    idle_timeout: float | None = limits.ELICITATION_IDLE_TIMEOUT_SECONDS,
    max_reasks: int = limits.MAX_REASKS,
    max_waiting: int = limits.MAX_WAITING_ELICITATIONS,
) -> list[Stage]:
    return [
        Identify(),
        CheckMode(),
        GateSchema(),
        CleanText(),
        AskThroughUI(ui, idle_timeout=idle_timeout, max_reasks=max_reasks, max_waiting=max_waiting),
    ]


def _plain(text: str) -> bool:
    """Printable ASCII within the title limit: nothing to clean (the usual tool name)."""
    return len(text) <= limits.MAX_TITLE_CHARS and text.isascii() and text.isprintable()


def _line(text: str, limit: int) -> str:
    return clean_text(text, limit=limit, multiline=False)


def _brief(value: object) -> str:
    return repr(value)[:60] if isinstance(value, str) else f"of type {type(value).__name__}"

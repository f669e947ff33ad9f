"""`ask`, `confirm` and `gather`: one call for the tool author, the same on both protocol eras.

On a 2025-11-25 (or older) session each question is pushed as a server-to-client request and
awaited, up to a timeout. On a 2026-07-28 request the run ends with an InputRequiredResult and,
when the client retries, each call hands back its recorded answer (see `rounds`). Either way a
form answer is validated against the form before the tool sees it (F7, M4): an invalid answer
is asked again, at most `max_invalid_answers` times, then the tool gets AnswerError.

Every question goes out under a key. The key is what a 2026-07-28 client answers under, so it
is part of the tool's contract: pass `key=` to choose a stable, meaningful one; the default is
`elicitation-<n>` for the n-th question of the call.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

from mcp_elicit.core.actions import ACTIONS, Action
from mcp_elicit.core.forms import Field, Form, form_of
from mcp_elicit.core.limits import MAX_MESSAGE_CHARS
from mcp_elicit.core.retry_hints import retry_message
from mcp_elicit.core.revisions import wire_revision
from mcp_elicit.core.sensitive import classify_schema
from mcp_elicit.errors import (
    AnswerError,
    FieldProblem,
    FormDefinitionError,
    InvalidArgument,
    SecretInForm,
)
from mcp_elicit.server import audit, rounds, sdk
from mcp_elicit.server.eras import Era, era_of, question_key

__all__ = ["Answer", "Question", "RawRequest", "RecordAs", "ask", "client_supports", "confirm", "gather"]

logger = logging.getLogger("mcp_elicit.server")
T = TypeVar("T")
_CAPABILITY_OF = {
    "elicitation/create": "elicitation.form",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


class RecordAs(Protocol):
    """An application's say in the one consent record of its question (`ask(record_as=...)`).

    Called once with the answer (None when the question failed) and the kit's reason
    ("declined_in_form", "timeout", ...), it returns the record's (message, reason, details).
    The kit keeps the rest: action, who decided, the form, the latency, the answer values at
    the request_response level. A plain function of that shape is one."""

    def __call__(self, answer: Any, reason: str, /) -> tuple[str, str, Mapping[str, Any] | None]: ...


@dataclass(frozen=True, slots=True)
class Answer(Generic[T]):
    """What the person did: `data` holds the typed answer when they accepted."""

    action: Action
    data: T | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"

    @property
    def declined(self) -> bool:
        return self.action == "decline"

    @property
    def cancelled(self) -> bool:
        return self.action == "cancel"


@dataclass(frozen=True, slots=True)
class Question:
    """A form question for `gather`: the message and the form (a type or a Form).

    `allow_secret_fields` overrides the secret guard (F5) for this question; the override is
    logged with the field names and reasons. Prefer URL mode for anything secret.

    `declines` names choices in the form that mean no, as (field, value) pairs (a "Don't run it"
    option, an unticked confirmation): a submitted form with one of them is recorded as a decline
    (reason `declined_in_form`), so the consent trail counts what the person chose, not that the
    form was submitted. The tool still gets the accepted answer with its data.
    """

    message: str
    form: Any
    allow_secret_fields: bool = False
    declines: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class RawRequest:
    """Any other input request for `gather` (`sampling/createMessage`, `roots/list`), passed through
    as wire params; its result comes back as the raw result dict."""

    method: Literal["sampling/createMessage", "roots/list"]
    params: Mapping[str, Any] | None = None


def client_supports(ctx: Any, capability: str) -> bool:
    """True when the client declared `capability` for this request: "elicitation.form",
    "elicitation.url", "sampling" or "roots"."""
    return capability in sdk.declared_capabilities(ctx)


@dataclass(frozen=True)
class _Step:
    """One step of a call: keyed wire requests, the forms that check the elicitation answers, the
    form fields the secret guard blocks (only when the override was used), the capabilities the
    step needs and the digest that pins recorded answers to it. Built once per form, message, key
    and revision (see `_step_of`), so a replayed question costs a dictionary lookup."""

    requests: dict[str, dict[str, Any]]
    forms: dict[str, Form]
    secret_refused: dict[str, dict[str, tuple[str, ...]]]
    secret_overridden: dict[str, dict[str, tuple[str, ...]]]
    needs: tuple[str, ...]
    digest: str
    declines: dict[str, tuple[tuple[str, Any], ...]] = dataclasses.field(default_factory=dict)

    def settle(self, key: str, response: Any) -> tuple[Any, Any]:
        """A fresh response as (what the tool gets, what the state records). A form answer is
        validated (F7, M4) and recorded as the checked values, so a replay need not check it again."""
        form = self.forms.get(key)
        if form is None:  # sampling and roots results pass through as they are
            if not isinstance(response, dict):
                raise AnswerError((FieldProblem(key, "type", "not a result object"),))
            return response, response
        action = response.get("action") if isinstance(response, dict) else None
        if action not in ACTIONS:
            raise AnswerError((FieldProblem("", "action", f"not one of {ACTIONS}"),))
        if action != "accept":
            return Answer(action), {"action": action}
        values = form.validate(response.get("content"))
        return Answer("accept", form.build(values)), {"action": "accept", "content": values}

    def replay(self, key: str, recorded: Any) -> Any:
        """A response recorded in an earlier round, back as what the tool gets. The state is sealed
        by the SDK and was written from checked values, so it is trusted as it stands."""
        form = self.forms.get(key)
        if form is None:
            return recorded
        if recorded.get("action") != "accept":
            return Answer(recorded.get("action"))
        return Answer("accept", form.build(recorded.get("content") or {}))

    def retry(self, key: str, error: AnswerError) -> dict[str, Any]:
        """The request `key` asked again after the invalid answer `error`: a form question's message
        opens with what was wrong and what the fields expect (never the value sent)."""
        request, form = self.requests[key], self.forms.get(key)
        if form is None:
            return request
        params = request["params"]
        message = retry_message(str(params.get("message", "")), form, error.problems)
        return {**request, "params": {**params, "message": message}}

    def message(self, key: str) -> str:
        return str(self.requests[key]["params"].get("message", ""))

    def schema(self, key: str) -> dict[str, Any] | None:
        schema = self.requests[key]["params"].get("requestedSchema")
        return schema if isinstance(schema, dict) else None


def _build_step(revision: str, items: tuple[tuple[str, Question | RawRequest], ...]) -> _Step:
    requests: dict[str, dict[str, Any]] = {}
    forms: dict[str, Form] = {}
    refused: dict[str, dict[str, tuple[str, ...]]] = {}
    overridden: dict[str, dict[str, tuple[str, ...]]] = {}
    declines: dict[str, tuple[tuple[str, Any], ...]] = {}
    for key, item in items:
        if isinstance(item, Question):
            if item.declines:
                declines[key] = item.declines
            if len(item.message) > MAX_MESSAGE_CHARS:
                raise FormDefinitionError("", "message", f"longer than {MAX_MESSAGE_CHARS} characters")
            form = form_of(item.form)
            forms[key] = form
            wire = form.to_wire(revision)
            requests[key] = sdk.form_request(item.message, wire)
            blocked = _secret_fields(wire)
            if blocked and item.allow_secret_fields:
                overridden[key] = blocked
            elif blocked:
                refused[key] = blocked
        else:
            requests[key] = {"method": item.method, "params": dict(item.params or {})}
    needs = tuple(dict.fromkeys(_CAPABILITY_OF[r["method"]] for r in requests.values()))
    digest = rounds.question_digest(requests)
    return _Step(requests, forms, refused, overridden, needs, digest, declines)


# Steps built so far, per revision and (key, question) pairs; bounded, least recently used out.
STEP_CACHE_SIZE = 1024
_cached_step = functools.lru_cache(maxsize=STEP_CACHE_SIZE)(_build_step)


def _step_of(era: Era, items: Mapping[str, Question | RawRequest]) -> _Step:
    revision = wire_revision(era.protocol_version)
    pairs = tuple(items.items())
    try:
        step = _cached_step(revision, pairs)
    except TypeError:  # an unhashable form or raw request (a list default, params): build it afresh
        step = _build_step(revision, pairs)
    era.need(step.needs)
    return step


def _secret_fields(wire: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """Fields the secret guard blocks (F5)."""
    verdict = classify_schema(wire)
    return {f.name: f.reasons for f in verdict.fields if f.verdict == "block"}


@sdk.carrying
async def gather(
    ctx: Any,
    items: Mapping[str, Question | RawRequest],
    *,
    timeout: float | None = None,
    record_as: Mapping[str, RecordAs] | None = None,
) -> dict[str, Any]:
    """Ask several things in one step: on 2026-07-28 they travel in one InputRequiredResult.

    Returns, per key, an `Answer` for a `Question` and the raw result dict for a `RawRequest`.
    `record_as` gives, per key, the application's part of that question's record (see `ask`).
    """
    if not items:
        raise InvalidArgument("items", "gather() needs at least one question")
    era = era_of(ctx)
    step = _step_of(era, items)
    if step.secret_overridden:
        fields = sorted(f for blocked in step.secret_overridden.values() for f in blocked)
        logger.warning("secret guard overridden for form fields %s", fields)
    if step.secret_refused:
        for key in step.secret_refused:
            await audit.record(
                ctx,
                era.settings,
                "cancel",
                "secret_guard",
                step.message(key),
                reason="secret_in_form",
                requested_schema=step.schema(key),
                mode="none",  # stopped before it was sent: nobody saw it
            )
        raise SecretInForm({f: r for fields in step.secret_refused.values() for f, r in fields.items()})

    notes = record_as or {}

    async def on_fail(key: str, reason: str, started: float) -> None:
        await _record_failure(ctx, era, step, key, reason, started, notes.get(key))

    async def on_answer(key: str, answer: Any, latency_ms: float) -> None:
        await _record_answer(ctx, era, step, key, answer, latency_ms, notes.get(key))

    return await era.exchange(step, on_fail, on_answer, timeout)


async def _record_answer(
    ctx: Any, era: Era, step: _Step, key: str, answer: Any, latency_ms: float, note: RecordAs | None
) -> None:
    if key not in step.forms:
        return  # sampling and roots requests are not elicitations
    reason = "secret_guard_overridden" if key in step.secret_overridden else ""
    content = answer.data if isinstance(answer, Answer) and answer.accepted else None
    action = answer.action
    if content is not None and key in step.declines:
        chosen = _plain(content) or {}
        if any(field in chosen and chosen[field] == value for field, value in step.declines[key]):
            action, reason = "decline", reason or "declined_in_form"
    message, details = step.message(key), None
    if note is not None:
        message, reason, details = note(answer, reason)
    if getattr(era.settings.audit, "level", None) != "request_response":
        content = None  # only that level stores answer values: no copy of them for the others
    await audit.record(
        ctx,
        era.settings,
        action,
        "person",
        message,
        reason=reason,
        requested_schema=step.schema(key),
        content=_plain(content),
        latency_ms=latency_ms,
        details=details,
    )


def _plain(data: Any) -> dict[str, Any] | None:
    """The answer as JSON-like values for the audit record (the user's own type may be a model)."""
    if data is None:
        return None
    if isinstance(data, dict):
        return data
    dump = getattr(data, "model_dump", None)
    if callable(dump):
        return dict(dump(mode="json"))
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
    return None


@overload
async def ask(
    ctx: Any,
    message: str,
    form: type[T],
    *,
    key: str | None = None,
    timeout: float | None = None,
    declines: Mapping[str, Any] | None = None,
    record_as: RecordAs | None = None,
) -> Answer[T]: ...
@overload
async def ask(
    ctx: Any,
    message: str,
    form: Form,
    *,
    key: str | None = None,
    timeout: float | None = None,
    allow_secret_fields: bool = False,
    declines: Mapping[str, Any] | None = None,
    record_as: RecordAs | None = None,
) -> Answer[Any]: ...
async def ask(
    ctx: Any,
    message: str,
    form: Any,
    *,
    key: str | None = None,
    timeout: float | None = None,
    allow_secret_fields: bool = False,
    declines: Mapping[str, Any] | None = None,
    record_as: RecordAs | None = None,
) -> Answer[Any]:
    """Ask the person behind the client to fill `form` (a pydantic model, dataclass, TypedDict
    or Form) and return what they did.

    `declines` maps a field to the choice in it that means no (`{"decision": "dont_run"}`): a
    form submitted with it is recorded as a decline (see `Question`).

    `record_as(answer, reason)` lets the application write the question's one consent record
    with its own facts instead of a second record of its own: it returns the record's message,
    reason and details (`RecordAs`); it is called once, with None for the answer when the
    question failed (timeout, client gone or refused, invalid answers).

    Raises CapabilityError (2025-11-25) or answers -32021 (2026-07-28) when the client did not
    declare form elicitation; ElicitationTimeout when a pushed question is not answered within
    `timeout` seconds; ClientGone when the client disconnects first; AnswerError after repeated
    invalid answers; SecretInForm, before anything is sent, when a field asks for a secret (F5).
    """
    name = question_key(key)
    no = tuple((declines or {}).items())
    question = Question(message, form, allow_secret_fields, no)
    notes = {name: record_as} if record_as is not None else None
    answers = await gather(ctx, {name: question}, timeout=timeout, record_as=notes)
    answer: Answer[Any] = answers[name]
    return answer


async def _record_failure(
    ctx: Any, era: Era, step: _Step, key: str, reason: str, started: float, note: RecordAs | None
) -> None:
    if key not in step.forms:
        return
    settings = era.settings
    message, said, details = step.message(key), reason, None
    if note is not None:
        message, said, details = note(None, reason)
    await audit.record(
        ctx,
        settings,
        "cancel" if reason == "timeout" else "error",
        "timeout" if reason == "timeout" else "error",
        message,
        reason=said,
        requested_schema=step.schema(key),
        latency_ms=(settings.clock() - started) * 1000,
        details=details,
    )


_CONFIRM_FIELD = "confirm"


async def confirm(
    ctx: Any,
    message: str,
    *,
    label: str = "Yes, go ahead",
    key: str | None = None,
    timeout: float | None = None,
) -> bool:
    """Ask a yes/no question for a destructive action; True only when the person accepted and ticked it.

    The form always has one boolean field (default False), never an empty schema. Submitted
    unticked, it is recorded as a decline (`declined_in_form`).
    """
    form = Form((Field(_CONFIRM_FIELD, "boolean", required=True, title=label, default=False),))
    answer = await ask(ctx, message, form, key=key, timeout=timeout, declines={_CONFIRM_FIELD: False})
    return answer.accepted and isinstance(answer.data, dict) and answer.data.get(_CONFIRM_FIELD) is True

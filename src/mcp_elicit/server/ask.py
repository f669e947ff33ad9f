"""`ask` and `confirm`: one call for the tool author, the same on both protocol eras.

On a 2025-11-25 (or older) session `ask` pushes `elicitation/create` and waits, up to a
timeout. On a 2026-07-28 request it ends the run with an InputRequiredResult and, when the
client retries, hands back the recorded answer (see `rounds`). Either way the answer is
validated against the form before the tool sees it (F7, M4): an invalid answer is asked
again, at most `max_invalid_answers` times, then the tool gets AnswerError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, overload

import anyio
from mcp.server.mcpserver import Context

from mcp_elicit.core.forms import Field, Form, form_of
from mcp_elicit.core.revisions import is_modern, wire_revision
from mcp_elicit.errors import (
    AnswerError,
    CapabilityError,
    ClientGone,
    ElicitationTimeout,
    FieldProblem,
    NotInstalled,
)
from mcp_elicit.server import rounds, sdk

__all__ = ["Answer", "ask", "confirm"]

T = TypeVar("T")
Action = Literal["accept", "decline", "cancel"]
_ACTIONS = ("accept", "decline", "cancel")


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


def _settle(form: Form, response: dict[str, Any]) -> Answer[Any]:
    """Turn a raw ElicitResult into an Answer, or raise AnswerError when it is not valid."""
    action = response.get("action")
    if action not in _ACTIONS:
        raise AnswerError((FieldProblem("", "action", f"not one of {_ACTIONS}"),))
    if action != "accept":
        return Answer(action)
    return Answer("accept", form.parse(response.get("content")))


def _require_mode(ctx: Context[Any, Any], mode: str) -> None:
    if mode not in sdk.declared_modes(ctx):
        if is_modern(sdk.protocol_version(ctx)):
            raise sdk.missing_capability_error(mode)
        raise CapabilityError(mode)


@overload
async def ask(
    ctx: Context[Any, Any], message: str, form: type[T], *, timeout: float | None = None
) -> Answer[T]: ...
@overload
async def ask(
    ctx: Context[Any, Any], message: str, form: Form, *, timeout: float | None = None
) -> Answer[Any]: ...
async def ask(
    ctx: Context[Any, Any], message: str, form: Any, *, timeout: float | None = None
) -> Answer[Any]:
    """Ask the person behind the client to fill `form` (a pydantic model, dataclass,
    TypedDict or Form) and return what they did.

    Raises CapabilityError (2025-11-25) or answers -32021 (2026-07-28) when the client did
    not declare form elicitation; ElicitationTimeout when a pushed question is not answered
    within `timeout` seconds; AnswerError after repeated invalid answers.
    """
    the_form = form_of(form)
    version = sdk.protocol_version(ctx)
    request = sdk.form_request(message, the_form.to_wire(wire_revision(version)))
    _require_mode(ctx, "form")
    if is_modern(version):
        return await _ask_in_rounds(the_form, request)
    return await _ask_by_push(ctx, the_form, request, timeout)


async def _ask_by_push(
    ctx: Context[Any, Any], form: Form, request: dict[str, Any], timeout: float | None
) -> Answer[Any]:
    settings = rounds.current_settings()
    seconds = settings.ask_timeout if timeout is None else timeout
    params = request["params"]
    error: AnswerError | None = None
    for _ in range(settings.max_invalid_answers):
        try:
            with anyio.fail_after(seconds):
                response = await sdk.push_form(ctx, params["message"], params["requestedSchema"])
        except TimeoutError:
            raise ElicitationTimeout(seconds) from None
        except sdk.PeerGone:
            raise ClientGone("the client disconnected before answering") from None
        try:
            return _settle(form, response if response is not None else {})
        except AnswerError as exc:
            error = exc
    assert error is not None
    raise error


async def _ask_in_rounds(form: Form, request: dict[str, Any]) -> Answer[Any]:
    rnd = rounds.current_round()
    if rnd is None:
        raise NotInstalled("ask() on a 2026-07-28 request needs mcp_elicit.server.install(server)")
    if rnd.cursor >= rounds.MAX_ASKS_PER_CALL:
        raise AnswerError((FieldProblem("", "too_many_questions", f"over {rounds.MAX_ASKS_PER_CALL}"),))
    candidate = rounds.next_answer(rnd, request)
    if candidate is None:
        raise rounds.pend(rnd, request, rnd.cursor - 1)
    try:
        answer = _settle(form, candidate.response)
    except AnswerError:
        bad = candidate.bad + 1
        if not candidate.fresh or bad >= rnd.settings.max_invalid_answers:
            raise
        raise rounds.pend(rnd, request, candidate.index, bad) from None  # M4: ask again
    content = candidate.response.get("content") if answer.accepted else None
    rounds.record(rnd, candidate, answer.action, content)
    return answer


_CONFIRM_FIELD = "confirm"


async def confirm(
    ctx: Context[Any, Any], message: str, *, label: str = "Yes, go ahead", timeout: float | None = None
) -> bool:
    """Ask a yes/no question for a destructive action; True only when the person accepted and ticked it.

    The form always has one boolean field (default False), never an empty schema.
    """
    form = Form((Field(_CONFIRM_FIELD, "boolean", required=True, title=label, default=False),))
    answer = await ask(ctx, message, form, timeout=timeout)
    return answer.accepted and isinstance(answer.data, dict) and answer.data.get(_CONFIRM_FIELD) is True

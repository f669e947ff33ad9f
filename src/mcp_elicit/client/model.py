"""The values that flow through the client pipeline: an elicitation, a decision, an outcome.

An `Elicitation` is one question on its way to the person. The adapter (`client/sdk.py`) creates it
from the SDK's request with the raw wire params (untrusted JSON); each stage reads it, may fill in
what it established (the mode, the parsed form, the cleaned text) and either lets it pass (returns
None) or ends the chain with a `Decision`:

- `Refuse`: answer with a JSON-RPC error (-32602 by default) and show nothing. On 2025-11-25 the
  server receives the error; on 2026-07-28, which has no per-question error slot, the call the
  question belongs to ends with that error on the client.
- `Reply`: accept (with content), decline or cancel, and who decided. (Not `Answer`: that is the
  server's result of `ask`.)

Every elicitation ends as one `Outcome` record (what `mcp-elicit call --json` lists and the audit
stage stores): never any answer value, only field names.
"""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mcp_elicit.client.ui_protocol import Purpose, Requester, UrlPrompt
from mcp_elicit.core.actions import Action
from mcp_elicit.core.consent import DecidedBy
from mcp_elicit.core.forms import Form
from mcp_elicit.core.revisions import is_modern
from mcp_elicit.core.wire_codes import INVALID_PARAMS

if TYPE_CHECKING:  # annotations only: importing the URL checks costs more than a client needs
    from mcp_elicit.core.policy import PolicyDecision, Request
    from mcp_elicit.core.sensitive import FormVerdict
    from mcp_elicit.core.urls import UrlVerdict

__all__ = [
    "Attribution",
    "CallRegistry",
    "Decision",
    "Elicitation",
    "Outcome",
    "Refuse",
    "Reply",
]

# "relay": a gateway tied it to the downstream call it relays the question for (gateway/relay.py).
Attribution = Literal["exact", "sole_call_in_flight", "relay", "none"]
"""How the question was tied to a request: by the call's own context (exact), because exactly one
call was in flight on this connection when it arrived, or not at all (the prompt says so)."""


@dataclass(frozen=True, slots=True)
class Refuse:
    """End the chain with a JSON-RPC error; nothing is shown. `reason` is a stable code."""

    reason: str
    message: str
    code: int = INVALID_PARAMS
    decided_by: DecidedBy = "gate"


@dataclass(frozen=True, slots=True)
class Reply:
    """End the chain with an answer to the server. `content` only with accept on a form."""

    action: Action
    decided_by: DecidedBy
    content: Mapping[str, Any] | None = None
    reason: str = ""


Decision = Refuse | Reply


@dataclass(eq=False)
class Elicitation:
    """One question in the pipeline. Stages fill in the fields below the line as they go."""

    params: Any  # the raw wire params: untrusted, not even known to be an object
    protocol: str  # the negotiated protocol version
    requester: Requester
    purpose: Purpose = field(default_factory=Purpose)
    attribution: Attribution = "none"
    declared_modes: frozenset[str] = frozenset({"form"})
    request_id: str | int | None = None
    time: float = 0.0  # wall clock, seconds
    # -- filled in by the stages ------------------------------------------------------------------
    mode: str | None = None
    form: Form | None = None  # as parsed from requestedSchema (raw server text in titles)
    prompt_form: Form | None = None  # the form to show: cleaned titles, every option titled
    message: str = ""  # cleaned
    values: dict[str, Any] = field(default_factory=dict)  # pre-filled answers (safe defaults)
    url: str | None = None  # raw URL of a URL-mode request, for the URL check stage
    url_prompt: UrlPrompt | None = None  # set by the URL check stage; without it URL mode is cancelled
    warnings: list[str] = field(default_factory=list)
    # -- what the guard stages established, for later stages and the audit trail ---------------
    schema_key: bytes | None = None  # the schema gate's exact cache key for requestedSchema
    form_verdict: FormVerdict | None = None  # the secret guard's classification of the form
    url_verdict: UrlVerdict | None = None  # the URL check's verdict (URL mode)
    elicitation_id: str | None = None  # a pushed URL request's elicitationId
    url_listed: bool = False  # the URL came in a -32042 list, not as a request of its own
    policy_request: Request | None = None  # what the policy stage evaluated
    policy_decision: PolicyDecision | None = None  # and what it said
    # -- set by the pipeline ----------------------------------------------------------------------
    decision: Decision | None = None  # the decision as recorded, for observers
    outcome: Outcome | None = None  # and its outcome (a withdrawn question's too)
    # An effect deferred until the decision is on record (URL mode opens the page then); it
    # returns the final decision, which is recorded again when it differs.
    after_recorded: Callable[[], Awaitable[Decision]] | None = None

    @property
    def delivery(self) -> Literal["push", "embedded"]:
        """`push` (elicitation/create, 2025-11-25) or `embedded` (InputRequiredResult, 2026-07-28)."""
        return "embedded" if is_modern(self.protocol) else "push"


@dataclass(frozen=True, slots=True)
class Outcome:
    """The record of one elicitation; `to_json` is what `call --json` prints."""

    time: float
    protocol: str
    delivery: Literal["push", "embedded"]
    mode: str | None
    server: Requester
    purpose: Purpose
    attribution: Attribution
    action: Literal["accept", "decline", "cancel", "error"]
    decided_by: str
    reason: str = ""
    detail: str = ""
    fields: tuple[str, ...] = ()
    latency_ms: float = 0.0

    @classmethod
    def of(cls, e: Elicitation, decision: Decision, latency_ms: float = 0.0) -> Outcome:
        if isinstance(decision, Refuse):
            action: Literal["accept", "decline", "cancel", "error"] = "error"
            reason, detail = decision.reason, decision.message
        else:
            action, reason, detail = decision.action, decision.reason, ""
        form = e.prompt_form or e.form
        return cls(
            time=e.time,
            protocol=e.protocol,
            delivery=e.delivery,
            mode=e.mode,
            server=e.requester,
            purpose=e.purpose,
            attribution=e.attribution,
            action=action,
            decided_by=decision.decided_by,
            reason=reason,
            detail=detail,
            fields=form.names if form is not None else (),
            latency_ms=round(latency_ms, 3),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "server": self.server.name,
            "server_title": self.server.title,
            "server_version": self.server.version,
            "where": self.server.where,
            "method": self.purpose.method,
            "target": self.purpose.target,
            "attribution": self.attribution,
            "action": self.action,
            "decided_by": self.decided_by,
            "reason": self.reason,
            "detail": self.detail,
            "fields": list(self.fields),
            "protocol": self.protocol,
            "delivery": self.delivery,
            "latency_ms": self.latency_ms,
        }


# -- which request does a question belong to? ------------------------------------------------------

_CURRENT_CALL: contextvars.ContextVar[tuple[CallRegistry, Purpose] | None] = contextvars.ContextVar(
    "mcp_elicit_current_call", default=None
)


class CallRegistry:
    """The calls in flight on one connection, so each question can be tied to the request it serves.

    Wrap every request that may ask (tools/call, prompts/get, resources/read) in `track`. A question
    that arrives in the call's own context (2026-07-28 embedded requests always do, 2025-11-25
    pushes over streamable HTTP do too) is attributed exactly; otherwise it is attributed only when
    exactly one call is in flight, and never guessed among several.
    """

    def __init__(self) -> None:
        self._in_flight: dict[int, Purpose] = {}
        self._ids = itertools.count()

    @contextmanager
    def track(self, method: str, target: str | None, arguments: Mapping[str, Any] | None) -> Iterator[None]:
        purpose = Purpose(method=method, target=target, arguments=dict(arguments or {}))
        key = next(self._ids)
        self._in_flight[key] = purpose
        token = _CURRENT_CALL.set((self, purpose))
        try:
            yield
        finally:
            _CURRENT_CALL.reset(token)
            del self._in_flight[key]

    def attribute(self, context: contextvars.Context | None = None) -> tuple[Purpose, Attribution]:
        """The purpose of a question arriving now, seen from `context` (default: the current one)."""
        current = context.get(_CURRENT_CALL) if context is not None else _CURRENT_CALL.get()
        if current is not None and current[0] is self:
            return current[1], "exact"
        if len(self._in_flight) == 1:
            return next(iter(self._in_flight.values())), "sole_call_in_flight"
        return Purpose(), "none"

    def __len__(self) -> int:
        return len(self._in_flight)

"""Guardrails in the client pipeline: the secret guard, the per-server policy, ask-first approval.

Three stages, all before `ask` (spec rules F5 and C4):

- `SecretGuard` ("secret_guard", in the default chain; it lives in `client/secret_guard.py` so the
  default chain does not import this module): a form that asks for a secret is never shown.
- `PolicyGate` ("policy"): `core.policy.evaluate` with the pipeline's clock (`Elicitation.time`).
  A refusal never reaches the person: ``deny`` and the embargo answer ``decline``
  (`decided_by="policy"`), a rate limit answers ``cancel`` (`decided_by="rate_limit"`); the
  reason is the policy's (``policy_deny``, ``embargo``, ``rate_limited``). The person gets one
  notice per streak of refusals, not one per refused question (a flood must not become a flood of
  notices).
- `AskFirst` ("approve"): when the policy says ``ask``, the person first approves that this server
  may ask now. ``approval="form"`` shows a form without fields whose message names the server and
  the request (accept lets it ask, decline or cancel refuse it: reason ``not_approved``);
  ``approval="notice"`` only tells the person which server is asking and goes on (for UIs that
  answer from a script: the script is the approval). An approval is remembered for the rest of
  the session (this pipeline), per server and mode, unless ``remember_approval=False``; so
  questions of one server that arrive while its approval is on screen wait for that one answer
  instead of each asking again: an accept lets them all ask, while after a refusal (or a timeout,
  or a withdrawn approval) the next one asks for its own approval (a refusal answers only the
  question whose approval was refused, and never lets another one through).

`Guardrails` holds the policy, its state and these settings; `install_guardrails(pipeline, policy)`
puts the stages in a pipeline (with `Pipeline.insert(stage, after=...)`) and adds the observer that
feeds the person's answers back to the embargo (`PolicyState.record_outcome`: only answers the
person gave, timeouts included; never refusals by policy, rate limit or the secret guard, and never
a script's answers).

Servers are matched by `server_ref`: the name the server declared, and where it runs (an
``http(s)://`` URL matches ``url`` globs, anything else, a command line, matches ``command``).
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio

from mcp_elicit.client.asking import show_bounded
from mcp_elicit.client.model import Decision, Elicitation, Outcome, Reply
from mcp_elicit.client.secret_guard import NOTICE_FIELDS, SecretGuard, tell
from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UserInterface
from mcp_elicit.core import limits
from mcp_elicit.core import policy as core_policy
from mcp_elicit.core.forms import Form
from mcp_elicit.core.policy import Deny, Policy, PolicyState, Request, ServerRef, evaluate
from mcp_elicit.errors import ConfigError

if TYPE_CHECKING:
    from mcp_elicit.client.pipeline import Pipeline
    from mcp_elicit.client.stages import Stage

__all__ = [
    "NOTICE_FIELDS",
    "Approval",
    "AskFirst",
    "Guardrails",
    "PolicyGate",
    "SecretGuard",
    "install_guardrails",
    "server_ref",
]

logger = logging.getLogger(__name__)

Approval = Literal["form", "notice"]

# How the approval's message goes on, for UIs that show a plain form; a UI that knows approvals
# (`FormPrompt.approval`) cuts the message here and asks "allow?" in its own words.
APPROVAL_TAIL: Final = " Accept (send this empty form)"
"""How `AskFirst` asks: a form without fields the person accepts or refuses, or a notice only."""

_VERBS = {"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource"}


def server_ref(requester: Requester) -> ServerRef:
    """The policy's view of a server: its declared name, and its URL or command line."""
    where = requester.where
    if where.startswith(("http://", "https://")):
        return ServerRef(name=requester.name, url=where)
    return ServerRef(name=requester.name, command=where)


def _about(purpose: Purpose) -> str:
    if purpose.target is None:
        return ""
    return f" for the {_VERBS.get(purpose.method or '', 'request')} {purpose.target}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "now"
    if seconds < 120:
        whole = max(1, math.ceil(seconds))
        return "the next second" if whole == 1 else f"the next {whole} seconds"
    return f"the next {math.ceil(seconds / 60)} minutes"


class Guardrails:
    """The policy, its state and how to ask first, for one client (or one gateway).

    `state` keeps rate-limit admissions and the embargo per (person, server); it lives in memory
    (a new `PolicyState` by default: one per connection). `clock` gives the time answers are
    recorded at (seconds, the same clock as `Pipeline.clock`). `person` names who answers, for a
    client shared by several people ("" for the only one).
    """

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        state: PolicyState | None = None,
        approval: Approval = "form",
        remember_approval: bool = True,
        person: str = "",
        clock: Callable[[], float] = time.time,
        idle_timeout: float | None = limits.ELICITATION_IDLE_TIMEOUT_SECONDS,
    ) -> None:
        if approval not in ("form", "notice"):
            raise ConfigError("approval", f"must be 'form' or 'notice', not {approval!r}")
        self.policy = policy if policy is not None else Policy()
        self.state = state if state is not None else PolicyState()
        self.approval: Approval = approval
        self.remember_approval = remember_approval
        self.person = person
        self.clock = clock
        self.idle_timeout = idle_timeout
        # (server key, mode) pairs the person approved this session; and the reason each
        # currently refused pair was last refused for, so a streak of refusals gives one notice.
        # Both bounded like the policy state itself.
        self._approved: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._refusing: OrderedDict[tuple[str, str], str] = OrderedDict()
        # The approval on screen now, per (server key, mode): set when it is answered (or withdrawn).
        self._asking: dict[tuple[str, str], anyio.Event] = {}

    def stages(self, ui: UserInterface) -> tuple[PolicyGate, AskFirst]:
        return PolicyGate(self, ui), AskFirst(self, ui)

    def observe(self, e: Elicitation, outcome: Outcome) -> None:
        """Pipeline observer: feed what the person answered to the embargo."""
        request = e.policy_request
        if request is not None and outcome.decided_by in ("person", "timeout"):
            self.state.record_outcome(request, outcome.action, self.clock())

    # -- bookkeeping shared by the stages ---------------------------------------------------------

    def _remember(self, table: OrderedDict[tuple[str, str], Any], key: tuple[str, str], value: Any) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > core_policy.MAX_TRACKED_PAIRS:
            table.popitem(last=False)

    def first_refusal(self, key: tuple[str, str], reason: str) -> bool:
        """True when this refusal starts a streak (the person should hear of it)."""
        if self._refusing.get(key) == reason:
            return False
        self._remember(self._refusing, key, reason)
        return True

    def admitted(self, key: tuple[str, str]) -> None:
        self._refusing.pop(key, None)

    def approved(self, key: tuple[str, str]) -> bool:
        return key in self._approved

    def approve(self, key: tuple[str, str]) -> None:
        if self.remember_approval:
            self._remember(self._approved, key, None)


class _GuardrailStage:
    """A pipeline stage of the guardrails: it keeps its bookkeeping in `guardrails` and speaks
    to the person through `ui`."""

    def __init__(self, guardrails: Guardrails, ui: UserInterface) -> None:
        self.guardrails = guardrails
        self.ui = ui


class PolicyGate(_GuardrailStage):
    """May this server ask now? `core.policy.evaluate`; a refusal never reaches the person."""

    name = "policy"

    async def __call__(self, e: Elicitation) -> Decision | None:
        if e.mode not in ("form", "url"):
            return None
        g = self.guardrails
        request = Request(server_ref(e.requester), "url" if e.mode == "url" else "form", g.person)
        decision = evaluate(g.policy, g.state, request, e.time)
        e.policy_request = request
        e.policy_decision = decision
        key = (request.server.key, request.mode)
        if not isinstance(decision, Deny):
            g.admitted(key)
            return None
        if g.first_refusal(key, decision.reason):
            await tell(self.ui, e.requester, _refusal_notice(decision, request.mode))
        return Reply(decision.action, decision.decided_by, reason=decision.reason)


def _refusal_notice(decision: Deny, mode: str) -> str:
    what = "web page requests" if mode == "url" else "questions"
    if decision.reason == "policy_deny":
        return f"Your policy does not let this server send {what}: they are declined without being shown."
    if decision.reason == "embargo":
        return (
            f"You turned this server down several times: its {what} are declined for "
            f"{_duration(decision.retry_after)}."
        )
    return f"This server is asking too often: its {what} are cancelled for {_duration(decision.retry_after)}."


class AskFirst(_GuardrailStage):
    """When the policy says ``ask``: let the person approve that this server asks now (C4)."""

    name = "approve"

    async def __call__(self, e: Elicitation) -> Decision | None:
        g = self.guardrails
        request = e.policy_request
        if request is None or not isinstance(e.policy_decision, core_policy.AskPerson):
            return None
        key = (request.server.key, request.mode)
        while g.remember_approval and key in g._asking:  # one approval on screen per server
            await g._asking[key].wait()  # bounded: that approval's own idle timeout
        if g.approved(key):
            return None
        what = "send you to a web page" if request.mode == "url" else "ask you a question"
        if g.approval == "notice":
            await tell(self.ui, e.requester, f"This server wants to {what}{_about(e.purpose)}.")
            g.approve(key)
            return None
        prompt = FormPrompt(
            e.requester,
            e.purpose,
            f"This server wants to {what}{_about(e.purpose)}.{APPROVAL_TAIL} to see "
            f"{'the address' if request.mode == 'url' else 'the question'}, or decline to refuse.",
            Form(()),
            approval=True,
        )
        answered = g._asking[key] = anyio.Event()
        try:
            result = await show_bounded(self.ui.ask_form, prompt, self.guardrails.idle_timeout)
            if not isinstance(result, Reply) and result.action == "accept":
                g.approve(key)
        finally:  # the questions waiting for this answer go on, whatever it was
            if g._asking.get(key) is answered:
                del g._asking[key]
            answered.set()
        if isinstance(result, Reply):
            return result
        if result.action == "accept":
            return None
        return Reply(result.action, result.decided_by, reason="not_approved")


def install_guardrails(
    pipeline: Pipeline,
    policy: Policy | None = None,
    *,
    guardrails: Guardrails | None = None,
    **options: Any,
) -> Guardrails:
    """Put the policy stages in `pipeline` and the embargo observer among its observers.

    `policy` (default: `Policy()`, every default) and `options` build a `Guardrails` (its clock is
    the pipeline's), unless `guardrails` is given. The policy stage goes right after `clean_text`
    (before the screening of a secret form, so a flood of them is rate limited too), the approval
    right after `secret_guard` (nobody approves a form that will be refused). A secret guard is
    added when the pipeline has none. Raises ConfigError when the pipeline already has a policy.
    """
    names = pipeline.names
    if "policy" in names:
        raise ConfigError("policy", "this pipeline already has a policy stage")
    if guardrails is None:
        options.setdefault("clock", pipeline.clock)
        guardrails = Guardrails(policy, **options)
    gate, approve = guardrails.stages(pipeline.ui)
    if "secret_guard" not in names:
        _insert_after(pipeline, SecretGuard(pipeline.ui), "clean_text")
    _insert_after(pipeline, gate, "clean_text")
    _insert_after(pipeline, approve, "secret_guard")
    pipeline.observers.append(guardrails.observe)
    return guardrails


def _insert_after(pipeline: Pipeline, stage: Stage, after: str) -> None:
    """Right after `after`; without it, before `ask`; without that, at the end."""
    names = pipeline.names
    if after in names:
        pipeline.insert(stage, after=after)
    elif "ask" in names:
        pipeline.insert(stage, before="ask")
    else:
        pipeline.insert(stage)

"""Guardrails in the client pipeline: the secret guard, the per-server policy, ask-first approval.

Three stages, all before `ask` (spec rules F5 and C4):

- `SecretGuard` ("secret_guard", in the default chain): `core.sensitive.classify_schema` on the
  request's raw `requestedSchema` and message. ``block``: the form is never shown, the server gets
  ``decline`` and the person a short notice (`decided_by="secret_guard"`, reason
  ``secret_in_form``). ``warn``: the form is shown with a warning.
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
  the session (this pipeline), per server and mode, unless ``remember_approval=False``.

`Guardrails` holds the policy, its state and these settings; `install_guardrails(pipeline, policy)`
puts the stages in a pipeline and adds the observer that feeds the person's answers back to the
embargo (`PolicyState.record_outcome`: only answers the person gave, timeouts included; never
refusals by policy, rate limit or the secret guard, and never a script's answers).

Servers are matched by `server_ref`: the name the server declared, and where it runs (an
``http(s)://`` URL matches ``url`` globs, anything else, a command line, matches ``command``).
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio

from mcp_elicit.client.model import Answer, Decision, Elicitation, Outcome
from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult, UserInterface
from mcp_elicit.core import limits
from mcp_elicit.core import policy as core_policy
from mcp_elicit.core.forms import Form
from mcp_elicit.core.policy import Deny, Policy, PolicyState, Request, ServerRef, evaluate
from mcp_elicit.core.sensitive import FormVerdict, classify_schema

if TYPE_CHECKING:
    from mcp_elicit.client.pipeline import Pipeline

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
"""How `AskFirst` asks: a form without fields the person accepts or refuses, or a notice only."""

# Field titles named in a secret-guard notice or warning; the rest are counted ("and 3 more"). A
# notice is one line on screen: three titles say what was asked without burying the point.
NOTICE_FIELDS: Final = 3
_VERBS = {"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource"}


def server_ref(requester: Requester) -> ServerRef:
    """The policy's view of a server: its declared name, and its URL or command line."""
    where = requester.where
    if where.startswith(("http://", "https://")):
        return ServerRef(name=requester.name, url=where)
    return ServerRef(name=requester.name, command=where)


async def _tell(ui: UserInterface, requester: Requester, text: str) -> None:
    """A notice that cannot fail the decision it explains."""
    try:
        await ui.notice(requester, text)
    except Exception:
        logger.exception("the UI failed to show a notice")


def _titles(e: Elicitation, names: tuple[str, ...]) -> str:
    """Cleaned titles of the named fields, quoted, at most a few."""
    form = e.prompt_form or e.form
    shown = []
    for name in names[:NOTICE_FIELDS]:
        title = name
        if form is not None and name in form.names:
            title = form.field(name).title or name
        shown.append(f"“{title}”")
    more = len(names) - NOTICE_FIELDS
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _about(purpose: Purpose) -> str:
    if purpose.target is None:
        return ""
    return f" for the {_VERBS.get(purpose.method or '', 'request')} {purpose.target}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "now"
    if seconds < 120:
        return f"the next {max(1, math.ceil(seconds))} seconds"
    return f"the next {math.ceil(seconds / 60)} minutes"


class SecretGuard:
    """Never show a form that asks for a secret (F5); warn about one that may."""

    name = "secret_guard"

    def __init__(self, ui: UserInterface) -> None:
        self.ui = ui

    async def __call__(self, e: Elicitation) -> Decision | None:
        if e.mode != "form" or e.form is None or not isinstance(e.params, Mapping):
            return None
        message = e.params.get("message")
        verdict = classify_schema(
            e.params.get("requestedSchema"), message if isinstance(message, str) else None
        )
        e.extras["form_verdict"] = verdict  # the audit record reuses it
        if verdict.verdict == "block":
            await _tell(
                self.ui,
                e.requester,
                f"This server asked for {_titles(e, verdict.blocked)} in a form. Secrets such as "
                "passwords, API keys, tokens and card numbers must never be typed into a form, so "
                "it was not shown and the server was told no.",
            )
            return Answer("decline", "secret_guard", reason="secret_in_form")
        if verdict.verdict == "warn":
            e.warnings.append(_warning(e, verdict))
        return None


def _warning(e: Elicitation, verdict: FormVerdict) -> str:
    if verdict.flagged:
        what = f"{_titles(e, verdict.flagged)} may be sensitive"
    else:
        what = "The message mentions a secret"
    return (
        f"{what}: servers must not ask for secrets in a form. Decline if it wants a password, key or token."
    )


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
            raise ValueError(f"approval must be 'form' or 'notice', not {approval!r}")
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

    def stages(self, ui: UserInterface) -> tuple[PolicyGate, AskFirst]:
        return PolicyGate(self, ui), AskFirst(self, ui)

    def observe(self, e: Elicitation, outcome: Outcome) -> None:
        """Pipeline observer: feed what the person answered to the embargo."""
        request = e.extras.get("policy_request")
        if isinstance(request, Request) and outcome.decided_by in ("person", "timeout"):
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


class PolicyGate:
    """May this server ask now? `core.policy.evaluate`; a refusal never reaches the person."""

    name = "policy"

    def __init__(self, guardrails: Guardrails, ui: UserInterface) -> None:
        self.guardrails = guardrails
        self.ui = ui

    async def __call__(self, e: Elicitation) -> Decision | None:
        if e.mode not in ("form", "url"):
            return None
        g = self.guardrails
        request = Request(server_ref(e.requester), "url" if e.mode == "url" else "form", g.person)
        decision = evaluate(g.policy, g.state, request, e.time)
        e.extras["policy_request"] = request
        e.extras["policy_decision"] = decision
        key = (request.server.key, request.mode)
        if not isinstance(decision, Deny):
            g.admitted(key)
            return None
        if g.first_refusal(key, decision.reason):
            await _tell(self.ui, e.requester, _refusal_notice(decision, request.mode))
        return Answer(decision.action, decision.decided_by, reason=decision.reason)


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


class AskFirst:
    """When the policy says ``ask``: let the person approve that this server asks now (C4)."""

    name = "approve"

    def __init__(self, guardrails: Guardrails, ui: UserInterface) -> None:
        self.guardrails = guardrails
        self.ui = ui

    async def __call__(self, e: Elicitation) -> Decision | None:
        g = self.guardrails
        request = e.extras.get("policy_request")
        if not isinstance(e.extras.get("policy_decision"), core_policy.AskPerson) or not isinstance(
            request, Request
        ):
            return None
        key = (request.server.key, request.mode)
        if g.approved(key):
            return None
        what = "send you to a web page" if request.mode == "url" else "ask you a question"
        if g.approval == "notice":
            await _tell(self.ui, e.requester, f"This server wants to {what}{_about(e.purpose)}.")
            g.approve(key)
            return None
        prompt = FormPrompt(
            e.requester,
            e.purpose,
            f"This server wants to {what}{_about(e.purpose)}. Accept (send this empty form) to see "
            f"{'the address' if request.mode == 'url' else 'the question'}, or decline to refuse.",
            Form(()),
        )
        result = await self._show(prompt)
        if isinstance(result, Answer):
            return result
        if result.action == "accept":
            g.approve(key)
            return None
        return Answer(result.action, result.decided_by, reason="not_approved")

    async def _show(self, prompt: FormPrompt) -> UIResult | Answer:
        """The approval on screen, bounded by the idle timeout; a failing UI cancels."""
        try:
            with anyio.move_on_after(self.guardrails.idle_timeout) as scope:
                result = await self.ui.ask_form(prompt)
        except KeyboardInterrupt:
            return Answer("cancel", "person", reason="interrupted")
        except Exception:
            logger.exception("the UI failed while asking for approval; the question is cancelled")
            return Answer("cancel", "error", reason="ui_failed")
        if scope.cancelled_caught:
            return Answer("cancel", "timeout", reason="idle_timeout")
        if not isinstance(result, UIResult) or result.action not in ("accept", "decline", "cancel"):
            return Answer("cancel", "error", reason="ui_failed")
        return result


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
    added when the pipeline has none. Raises ValueError when the pipeline already has a policy.
    """
    names = [s.name for s in pipeline.stages]
    if "policy" in names:
        raise ValueError("this pipeline already has a policy stage")
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


def _insert_after(pipeline: Pipeline, stage: Any, after: str) -> None:
    names = [s.name for s in pipeline.stages]
    if after in names:
        pipeline.stages.insert(names.index(after) + 1, stage)
    elif "ask" in names:
        pipeline.insert(stage, before="ask")
    else:
        pipeline.stages.append(stage)

"""The relay: an upstream question, once through our client pipeline, asked of the downstream caller.

Each user has their own upstream connections (`gateway/pool.py`), so a question that arrives on one
can only belong to that user's calls: two users never see each other's questions by construction.
`RelayUI` is the UI of those connections' pipelines: the schema gate, the secret guard, the URL
checks and the policy have run before it is called, and it asks the downstream client that made
the call: through the server kit (`gather`, which pushes) on 2025-11-25, or as a round of the
held call (`gateway/holds.py`) on 2026-07-28. A downstream client that
cannot ask gets, per the server's `noElicitation`, a refusal it can relay or the browser UI.

What the pipeline decides without asking (a secret-seeking form, a rate limit, the decline
embargo, a policy's deny) is said in the result of the tool call the question served, naming the
upstream server (`RelayUI.observe`): the pipeline's own notice when it gave one, else one line of
reason, so no refused tool call is silent. A prompt's or a resource read's result has no place
for it: there it is logged, and the streak's notice is not counted as given (the next refused
question gets it again), so a later tool call of the same streak still says it in full.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import secrets
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

import anyio

from mcp_elicit.client import ui_protocol as ui
from mcp_elicit.client.guardrails import Guardrails
from mcp_elicit.client.model import Decision, Elicitation, Outcome
from mcp_elicit.client.stages import AskThroughUI
from mcp_elicit.core.actions import ACTIONS
from mcp_elicit.core.forms import Form
from mcp_elicit.core.policy import Deny
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.core.revisions import LATEST, wire_revision
from mcp_elicit.errors import ElicitError
from mcp_elicit.gateway.config import NoElicitation
from mcp_elicit.gateway.holds import Hold
from mcp_elicit.gateway.urls import CompletionRoutes
from mcp_elicit.server import sdk as server_sdk
from mcp_elicit.server.questions import client_supports

__all__ = [
    "MAX_PENDING_PER_USER",
    "NO_FORM_MODE",
    "NO_URL_MODE",
    "RELAY_WAIT_SECONDS",
    "WIRE_CACHE_SIZE",
    "CallBook",
    "ConcurrentAsk",
    "DownstreamCall",
    "Pending",
    "RelayUI",
]

logger = logging.getLogger("mcp_elicit.gateway")

# Questions one user may have open through the gateway at once; more are cancelled upstream.
MAX_PENDING_PER_USER: Final = 8
# How long a relayed question waits for the downstream person before it ends as cancel.
RELAY_WAIT_SECONDS: Final = 600.0
# Wire requests of relayed forms kept built (per message, form and revision).
WIRE_CACHE_SIZE: Final = 256
# The downstream request a question is usually relayed beside (its result carries the notices).
TOOLS_CALL: Final = "tools/call"
# A consent record's reason when the downstream client declared no elicitation capability for the
# question's mode (decided_by "no_terminal": nobody could be asked).
NO_FORM_MODE: Final = "client_no_form_mode"
NO_URL_MODE: Final = "client_no_url_mode"
# The reasons of the other questions the gateway ends without asking anyone: no downstream call
# to show it beside, or the user's questions already open up to MAX_PENDING_PER_USER.
NO_CALL: Final = "no_call_in_flight"
TOO_MANY_OPEN: Final = "too_many_open_questions"
# The ask stage's reason when it gave up on answers that did not fit the form.
_UNFIT: Final = "invalid_answers"
# Who decided a question without asking anyone, per the pipeline's outcome.
_POLICY_DECIDERS: Final = frozenset({"policy", "rate_limit"})
# A refused question of a streak whose notice was already given, in one line (by the policy's reason).
_STREAK_REASONS: Final = {
    "rate_limited": "it asks too often (rate limit)",
    "embargo": "it was turned down several times (decline embargo)",
    "policy_deny": "the gateway's policy does not let it ask",
}


@dataclass(eq=False)
class DownstreamCall:
    """A downstream request being forwarded (`method`: a `tools/call` unless a `prompts/get` or a
    `resources/read`): who made it, to which upstream tool, prompt or URI (`tool`)."""

    ctx: Any
    user: str
    server: str
    tool: str
    refusals: list[str] = field(default_factory=list)  # questions this client could not be asked
    arguments: dict[str, Any] = field(default_factory=dict)
    hold: Hold | None = None  # a 2026-07-28 downstream: the question goes out as a round
    asking: int = 0  # questions of this call open downstream now
    method: str = TOOLS_CALL
    said: set[str] = field(default_factory=set)  # what `refusals` already says, by key
    unfit: str | None = None  # its last answer did not fit the form: said if the question ends on it

    def say(self, text: str, key: str | None = None) -> None:
        """Keep `text` for the call's result, once per `key` (default: the text itself), so a
        question asked again, or a flood refused within one call, is said once."""
        key = text if key is None else key
        if key not in self.said:
            self.said.add(key)
            self.refusals.append(text)


class Pending:
    """Relayed questions one user has open, across all their upstream connections."""

    def __init__(self) -> None:
        self.count = 0


class CallBook:
    """The calls one user has in flight on one upstream connection, so each question finds its call."""

    def __init__(self, pending: Pending | None = None) -> None:
        self.calls: list[DownstreamCall] = []
        self.budget = pending if pending is not None else Pending()
        self.idle = anyio.Event()  # set while no call is in flight (tests and shutdown wait on it)
        self.idle.set()

    @contextmanager
    def track(self, call: DownstreamCall) -> Iterator[None]:
        if not self.calls:
            self.idle = anyio.Event()
        self.calls.append(call)
        try:
            yield
        finally:
            self.calls.remove(call)
            if not self.calls:
                self.idle.set()

    def full(self, call: DownstreamCall) -> bool:
        """True (and said in `call`'s result) when the user has as many questions open as allowed."""
        if self.budget.count < MAX_PENDING_PER_USER:
            return False
        call.say(
            f"the server '{call.server}' asked a question that was cancelled: too many open questions "
            f"for this user (at most {MAX_PENDING_PER_USER})"
        )
        return True

    @contextmanager
    def asking(self, call: DownstreamCall) -> Iterator[None]:
        """One question of `call` open downstream: counted in the call and in the user's budget."""
        self.budget.count += 1
        call.asking += 1
        try:
            yield
        finally:
            self.budget.count -= 1
            call.asking -= 1

    def find(self, purpose: ui.Purpose) -> DownstreamCall | None:
        """The call a question serves. A pushed question carries no request id over stdio, and the
        SDK's tasks do not keep the calling context, so: the oldest call to that target with those
        arguments and no question open (tools ask in sequence), else looser matches. The connection
        is this user's alone, so the answer is never another user's. A held call its client
        abandoned (`Hold.abandoned`) is never a match: it cannot take a later call's question."""
        calls = [c for c in self.calls if c.hold is None or not c.hold.abandoned]
        same = [c for c in calls if c.tool == purpose.target]
        exact = [c for c in same if purpose.arguments is None or c.arguments == dict(purpose.arguments)]
        for found in (
            [c for c in exact if not c.asking],
            [c for c in same if not c.asking],
            exact,
            same,
            [c for c in calls if not c.asking],  # the client kit could not attribute it
            calls,
        ):
            if found:
                return found[0]
        return None


# The call the question being asked now was tied to (set by `ConcurrentAsk` around the UI's ask).
_ASKING_FOR: ContextVar[DownstreamCall | None] = ContextVar("mcp_elicit_gateway_asking_for", default=None)


class RelayUI:
    """The pipeline's UI on a user's upstream connection: asks the downstream caller."""

    def __init__(
        self,
        book: CallBook,
        server: str,
        no_elicitation: NoElicitation,
        browser: ui.UserInterface | None = None,
    ) -> None:
        self.book = book
        self.server = server
        self.no_elicitation = no_elicitation
        self.browser = browser
        self.routes = CompletionRoutes()
        self.guardrails: Guardrails | None = None  # the connection's, to restart a notice's streak
        self._told: list[str] = []  # notices of the question the pipeline is deciding now
        # Each question's call, as `tie` found it (dropped with the question).
        self._tied: weakref.WeakKeyDictionary[Elicitation, DownstreamCall] = weakref.WeakKeyDictionary()

    def tie(self, e: Elicitation) -> DownstreamCall | None:
        """The downstream call `e` is for, found once (`TieToCall`, the pipeline's first stage) and
        kept for the ask and the observer. When the client kit could not tie the question to a
        request (a push over stdio while several calls are in flight: it never guesses), `e` gets
        that call's purpose, so its consent record names the tool call it was relayed for."""
        call = self._tied.get(e)
        if call is None:
            call = self.book.find(e.purpose)
            if call is None:
                return None
            self._tied[e] = call
        if e.attribution == "none":
            e.purpose = ui.Purpose(call.method, call.tool, dict(call.arguments))
            e.attribution = "relay"
        return call

    def _call_of(self, purpose: ui.Purpose) -> DownstreamCall | None:
        """The call of the question being asked now: as tied, else as the book finds it."""
        return _ASKING_FOR.get() or self.book.find(purpose)

    async def ask_form(self, prompt: ui.FormPrompt) -> ui.UIResult:
        call = self._call_of(prompt.purpose)
        if call is None:
            logger.info("a question from %s arrived with no call in flight; cancelled", self.server)
            return ui.UIResult("cancel", decided_by="no_terminal", reason=NO_CALL)
        if not client_supports(call.ctx, "elicitation.form"):
            return await self._cannot_ask(call, prompt)
        if self.book.full(call):
            return ui.UIResult("cancel", decided_by="no_terminal", reason=TOO_MANY_OPEN)
        if prompt.errors:  # the pipeline asks again after an answer that did not fit: never a silent
            # drop, but said only if no later answer fits (`observe`): else the question was answered
            fields = ", ".join(sorted(prompt.errors))
            call.unfit = (
                f"the client's answer to the server '{self.server}' ({prompt.message[:200]!r}) did not "
                f"fit the form ({fields}); nothing was answered"
            )
            prompt = _asked_again(prompt)
        with self.book.asking(call):
            try:
                if call.hold is not None:
                    return await call.hold.ask(_form_wire(prompt, LATEST))
                # Pushed as is: the pipeline around this UI already ran the gate and the secret guard on
                # this form and checks the answer against it (asking again if it is invalid), so the
                # server kit's `gather` would only do all of that a second time.
                with anyio.move_on_after(RELAY_WAIT_SECONDS):
                    wire = _form_wire(prompt, wire_revision(server_sdk.protocol_version(call.ctx)))
                    raw = await server_sdk.push_request(call.ctx, wire)
                    return _ui_result(raw)
                return ui.UIResult("cancel", decided_by="timeout")
            except ElicitError as exc:
                return _unanswered(self.server, "question", exc)

    async def _cannot_ask(self, call: DownstreamCall, prompt: ui.FormPrompt | ui.UrlPrompt) -> ui.UIResult:
        if self.no_elicitation == "browser" and self.browser is not None:
            if isinstance(prompt, ui.FormPrompt):
                return await self.browser.ask_form(prompt)
            return await self.browser.ask_url(prompt)
        why = "this client declared no elicitation capability for it"
        call.say(
            f"the server '{self.server}' asked a question ({prompt.message[:200]!r}) that could not be shown "
            f"here ({why}); nothing was answered"
        )
        # Nobody could be asked (not a scripted answer): the record says so, and which capability was missing.
        reason = NO_URL_MODE if isinstance(prompt, ui.UrlPrompt) else NO_FORM_MODE
        return ui.UIResult("decline", decided_by="no_terminal", reason=reason)

    async def ask_url(self, prompt: ui.UrlPrompt) -> ui.UIResult:
        upstream_id, url = self.routes.notes.pop(id(prompt), (None, ""))
        call = self._call_of(prompt.purpose)
        if prompt.verdict == "block" and call is not None:
            why = ", ".join(prompt.reasons) or "the URL check"
            call.say(f"the server '{self.server}' sent a web address that was blocked ({why}) and not shown")
        if prompt.verdict == "block" or not url:  # a blocked URL never reaches the client (the
            return ui.UIResult("decline", decided_by="gate")  # record's reason names the URL check's codes)
        if call is None:
            return ui.UIResult("decline", decided_by="no_terminal", reason=NO_CALL)
        if not client_supports(call.ctx, "elicitation.url"):
            return await self._cannot_ask(call, prompt)
        if self.book.full(call):
            return ui.UIResult("cancel", decided_by="no_terminal", reason=TOO_MANY_OPEN)
        with self.book.asking(call):
            return await self._relay_url(call, prompt, upstream_id, url)

    async def _relay_url(
        self, call: DownstreamCall, prompt: ui.UrlPrompt, upstream_id: str | None, url: str
    ) -> ui.UIResult:
        if call.hold is not None:  # 2026-07-28: the page goes out as a round; completion is upstream's
            call.hold.upstream_id = upstream_id
            return await call.hold.ask(server_sdk.url_request(prompt.message, url, None))
        ours = secrets.token_urlsafe(16)
        if upstream_id is not None:
            self.routes.add(upstream_id, call.ctx, ours)
        try:
            raw = await server_sdk.push_request(call.ctx, server_sdk.url_request(prompt.message, url, ours))
        except ElicitError as exc:
            return _unanswered(self.server, "URL", exc)
        return ui.UIResult(_ui_result(raw).action)

    async def wait_url(self, waiting: ui.UrlWaiting) -> ui.WaitChoice:
        # The downstream client shows its own waiting screen; the client kit ends this wait when
        # the upstream's completion arrives or the call ends.
        await anyio.sleep_forever()
        return "cancel"

    async def notice(self, requester: ui.Requester, text: str) -> None:
        """What the pipeline decided without asking (a secret-seeking form, a rate limit): kept for
        `observe`, which runs next for the same question (no await between them) and says it in
        the result of the call the question served."""
        self._told.append(self._named(text))

    def _named(self, text: str) -> str:
        """A notice's text naming the upstream server by its key instead of "this server"."""
        for this, named in (("This server", "The server"), ("this server", "the server")):
            if this in text:
                return text.replace(this, f"{named} '{self.server}'", 1)
        return f"the server '{self.server}': {text}"

    def observe(self, e: Elicitation, outcome: Outcome) -> None:
        """Pipeline observer (the first): a question decided without asking is said in its tool
        call's result; for a prompt or a read (no place for it) logged, its notice not counted."""
        told, self._told = self._told, []
        asked = self._tied.get(e)
        if asked is not None and asked.unfit is not None:  # answered at last, or ended on a bad answer
            if outcome.reason == _UNFIT:
                asked.say(asked.unfit)
            asked.unfit = None
        denied = e.policy_decision if isinstance(e.policy_decision, Deny) else None
        if outcome.decided_by not in _POLICY_DECIDERS:
            denied = None
        if not told and denied is None:
            return
        call = self._tied.get(e) or self.book.find(e.purpose)
        if call is not None and call.method == TOOLS_CALL:
            if denied is None:
                for text in told:
                    call.say(text)
            else:  # one reason per streak in a call, however many of its questions it refused
                call.say(" ".join(told) or self._streak_line(denied, outcome.action), denied.reason)
            return
        if call is None:
            logger.info(
                "a question from %s, no call in flight, was %s: %s", self.server, outcome.action, told
            )
        else:  # logged by `Gateway._request`, said only if the upstream then fails the request
            call.say(" ".join(told) or self._streak_line(denied, outcome.action))
        request = e.policy_request
        if told and denied is not None and request is not None and self.guardrails is not None:
            self.guardrails.admitted((request.server.key, request.mode))  # the notice did not reach

    def _streak_line(self, denied: Deny | None, action: str) -> str:
        why = _STREAK_REASONS.get(denied.reason if denied is not None else "", "a guardrail refused it")
        done = "declined" if action == "decline" else "cancelled"
        line = f"the server '{self.server}' asked a question that was {done} without being shown: {why}"
        if denied is not None and denied.retry_after is not None:
            line += f"; it may ask again in {max(1, math.ceil(denied.retry_after))} s"
        return line


def _ui_result(raw: dict[str, Any] | None) -> ui.UIResult:
    """The downstream's raw ElicitResult as the pipeline's UIResult (anything malformed: cancel)."""
    action = raw.get("action") if raw is not None else None
    content = raw.get("content") if raw is not None and action == "accept" else None
    return ui.UIResult(
        action if action in ACTIONS else "cancel", content if isinstance(content, dict) else None
    )


def _asked_again(prompt: ui.FormPrompt) -> ui.FormPrompt:
    """The form asked again after an answer that did not fit, its message saying which fields and
    why: a downstream client shows the message, not the pipeline's `errors`, and the same form
    again with no reason would leave the person guessing (found by a new user, with mcpdo)."""
    why = "; ".join(f"{name}: {problem}" for name, problem in sorted(prompt.errors.items()))
    again = f"{prompt.message}\n\n(Asked again: the last answer did not fit the form. {why}.)"
    return dataclasses.replace(prompt, message=again)


@functools.lru_cache(maxsize=WIRE_CACHE_SIZE)
def _wire_of(message: str, form: Form, revision: str) -> dict[str, Any]:
    return server_sdk.form_request(message, form.to_wire(revision))


def _form_wire(prompt: ui.FormPrompt, revision: str) -> dict[str, Any]:
    """The wire request for `prompt` in `revision`, built once per message, form and revision (the
    pipeline hands the same `Form` for a repeated schema). Never mutated by its readers."""
    try:
        return _wire_of(prompt.message, prompt.form, revision)
    except TypeError:  # an unhashable default in the form: build it afresh
        return server_sdk.form_request(prompt.message, prompt.form.to_wire(revision))


class ConcurrentAsk(AskThroughUI):
    """The client kit's ask stage without its one-at-a-time turn: a person at one terminal answers
    one question at a time, but each relayed question goes to its own downstream request, so two
    calls never wait on each other here (the per-user budget above bounds them instead)."""

    async def __call__(self, e: Elicitation) -> Decision | None:
        call = self.ui.tie(e) if isinstance(self.ui, RelayUI) else None
        token = _ASKING_FOR.set(call)  # the UI asks for the call the question was tied to
        try:
            return await (self._ask_url(e) if e.mode == "url" else self._ask_form(e))
        finally:
            _ASKING_FOR.reset(token)


def _unanswered(server: str, what: str, exc: ElicitError) -> ui.UIResult:
    """A relayed request the downstream client left unanswered (it went away, or answered with an
    error): a cancel upstream, and the record says nobody decided and why (`client_gone`, ...)."""
    logger.info("relayed %s from %s ended: %s", what, server, type(exc).__name__)
    return ui.UIResult("cancel", decided_by="error", reason=refusal_of(exc, modern=False).reason)

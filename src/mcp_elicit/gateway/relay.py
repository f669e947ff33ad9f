"""The relay: an upstream question, once through our client pipeline, asked of the downstream caller.

Each user has their own upstream connections (`gateway/pool.py`), so a question that arrives on one
can only belong to that user's calls: two users never see each other's questions by construction.
`RelayUI` is the UI of those connections' pipelines: the schema gate, the secret guard, the URL
checks and the policy have run before it is called, and it asks the downstream client that made
the call: through the server kit (`gather`, which pushes) on 2025-11-25, or as a round of the
held call (`gateway/holds.py`) on 2026-07-28. A downstream client that
cannot ask gets, per the server's `noElicitation`, a refusal it can relay or the browser UI.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import anyio

from mcp_elicit.client import ui_protocol as ui
from mcp_elicit.client.model import Decision, Elicitation
from mcp_elicit.client.stages import AskThroughUI
from mcp_elicit.core.actions import ACTIONS
from mcp_elicit.core.forms import Form
from mcp_elicit.core.revisions import LATEST, wire_revision
from mcp_elicit.errors import ElicitError
from mcp_elicit.gateway.config import NoElicitation
from mcp_elicit.gateway.holds import Hold
from mcp_elicit.gateway.urls import CompletionRoutes
from mcp_elicit.server import sdk as server_sdk
from mcp_elicit.server.questions import client_supports

__all__ = [
    "MAX_PENDING_PER_USER",
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


@dataclass(eq=False)
class DownstreamCall:
    """A downstream `tools/call` being forwarded: who made it, to which upstream tool."""

    ctx: Any
    user: str
    server: str
    tool: str
    refusals: list[str] = field(default_factory=list)  # questions this client could not be asked
    arguments: dict[str, Any] = field(default_factory=dict)
    hold: Hold | None = None  # a 2026-07-28 downstream: the question goes out as a round
    asking: int = 0  # questions of this call open downstream now


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
        call.refusals.append(f"too many open questions for this user (at most {MAX_PENDING_PER_USER})")
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
        is this user's alone, so the answer is never another user's."""
        same = [c for c in self.calls if c.tool == purpose.target]
        exact = [c for c in same if purpose.arguments is None or c.arguments == dict(purpose.arguments)]
        for found in (
            [c for c in exact if not c.asking],
            [c for c in same if not c.asking],
            exact,
            same,
            [c for c in self.calls if not c.asking],  # the client kit could not attribute it
            self.calls,
        ):
            if found:
                return found[0]
        return None


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

    async def ask_form(self, prompt: ui.FormPrompt) -> ui.UIResult:
        call = self.book.find(prompt.purpose)
        if call is None:
            logger.info("a question from %s arrived with no call in flight; cancelled", self.server)
            return ui.UIResult("cancel", decided_by="script")
        if not client_supports(call.ctx, "elicitation.form"):
            return await self._cannot_ask(call, prompt)
        if self.book.full(call):
            return ui.UIResult("cancel", decided_by="script")
        if prompt.errors:  # the pipeline asks again after an answer that did not fit: never a silent drop
            fields = ", ".join(sorted(prompt.errors))
            said = f"the client's answer to {prompt.message[:200]!r} did not fit the form ({fields})"
            if said not in call.refusals:
                call.refusals.append(said)
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
                logger.info("relayed question from %s ended: %s", self.server, type(exc).__name__)
                return ui.UIResult("cancel", decided_by="person")

    async def _cannot_ask(self, call: DownstreamCall, prompt: ui.FormPrompt | ui.UrlPrompt) -> ui.UIResult:
        if self.no_elicitation == "browser" and self.browser is not None:
            if isinstance(prompt, ui.FormPrompt):
                return await self.browser.ask_form(prompt)
            return await self.browser.ask_url(prompt)
        why = "this client declared no elicitation capability for it"
        call.refusals.append(
            f"the server '{self.server}' asked a question ({prompt.message[:200]!r}) that could not be shown "
            f"here ({why}); nothing was answered"
        )
        return ui.UIResult("decline", decided_by="script")

    async def ask_url(self, prompt: ui.UrlPrompt) -> ui.UIResult:
        upstream_id, url = self.routes.notes.pop(id(prompt), (None, ""))
        call = self.book.find(prompt.purpose)
        if prompt.verdict == "block" or call is None or not url:
            return ui.UIResult("decline", decided_by="script")  # a blocked URL never reaches the client
        if not client_supports(call.ctx, "elicitation.url"):
            return await self._cannot_ask(call, prompt)
        if self.book.full(call):
            return ui.UIResult("cancel", decided_by="script")
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
            logger.info("relayed URL from %s ended: %s", self.server, type(exc).__name__)
            return ui.UIResult("cancel", decided_by="person")
        return ui.UIResult(_ui_result(raw).action)

    async def wait_url(self, waiting: ui.UrlWaiting) -> ui.WaitChoice:
        # The downstream client shows its own waiting screen; the client kit ends this wait when
        # the upstream's completion arrives or the call ends.
        await anyio.sleep_forever()
        return "cancel"

    async def notice(self, requester: ui.Requester, text: str) -> None:
        """What the pipeline decided without asking (a secret-seeking form, a rate limit): said in
        the call's result, so the model can tell the person instead of seeing a bare decline."""
        logger.info("gateway notice for %s: %s", requester.name, text)
        call = next((c for c in self.book.calls if c.asking == 0), None)
        if call is not None:
            call.refusals.append(text)


def _ui_result(raw: dict[str, Any] | None) -> ui.UIResult:
    """The downstream's raw ElicitResult as the pipeline's UIResult (anything malformed: cancel)."""
    action = raw.get("action") if raw is not None else None
    content = raw.get("content") if raw is not None and action == "accept" else None
    return ui.UIResult(
        action if action in ACTIONS else "cancel", content if isinstance(content, dict) else None
    )


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
        return await (self._ask_url(e) if e.mode == "url" else self._ask_form(e))

"""URL mode on the client: check every URL, ask for consent, open only after it, wait, retry.

Spec rules: U1–U8, C1–C3, M1–M4. `UrlMode` puts URL mode into a pipeline and wraps each request:

```
async with ElicitClient(server, ui=TerminalUI(), url_mode=True) as client:
    await client.call_tool("connect_service")
```

The client declares URL mode (C1) only with a URL-capable UI (`client.ui_protocol.UrlCapableUI`: consent
and a waiting screen) and an opener (`client/opener.py`, or one you inject).

Stages (`UrlMode.install`; they live in `client/url_stages.py`):

- `check_url`, right after `check_mode`: `core.urls.check_url` on every URL (the verdict is in
  `e.url_verdict` for the audit trail). A 2025-11-25 request needs a string
  `elicitationId` (U1), else -32602. When the server asks again, within one call, for a URL the
  person already consented to (2026-07-28: the page is not finished yet, U8), the person is not
  asked again: the client shows that it is waiting, checks again after a backoff (or when the
  person says so) and answers accept again, a bounded number of times (`MAX_URL_CHECKS`, and
  `URL_WAIT_TIMEOUT_SECONDS` since the page was opened), then ends the call. A URL the call
  already declined or refused, asked for again, ends the call at once. This stage sits before the
  policy stages, so a re-asked page is not counted as a new question.
- `ask` (wrapping the default one, which keeps its one-at-a-time lock and idle timeout): shows a
  `UrlPrompt` (who asks, the cleaned message, the full URL escaped for display, the registrable
  domain to emphasise, every warning) and, after an explicit accept, opens the canonical URL with
  the opener (U3: nothing is fetched before). A `block` verdict is never opened: the server gets
  decline and the record says why (`reason="url_blocked:<codes>"`). An opener that fails or hangs
  (`OPEN_TIMEOUT_SECONDS`) makes the answer cancel (C3: the browser failed).

Around each request (`UrlMode.run`, which `ElicitClient` uses for every call):

- 2025-11-25 pushes: while the call runs after a page was opened, the waiting screen shows (open
  the page again, or cancel the call) until the server's `notifications/elicitation/complete` for
  that `elicitationId` arrives (U6), the call ends, or another question needs the screen.
- 2025-11-25 error -32042 (U7): each listed elicitation goes through the pipeline like an
  `elicitation/create` (same consent rules); once every listed id is completed (or the person
  says retry), the call is sent again. Bounded by `MAX_URL_REQUIRED_ROUNDS` answers of -32042 per
  call and `MAX_URL_REQUIRED_ELICITATIONS` entries per answer; a page listed again after its
  completion ends the call (`UrlHandoffStopped(reason="repeated")`).

Completions arrive through the SDK's `message_handler` (`UrlMode.on_message`); unknown or repeated
ids are ignored (U6). Using a bare `mcp.client.Client`: `mode.install(pipeline)`, pass
`message_handler=mode.on_message`, and send each request as `await mode.run(send, handler)`.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

import anyio

from mcp_elicit.client.model import Decision, Elicitation, Refuse, Reply
from mcp_elicit.client.opener import UrlOpener, system_opener
from mcp_elicit.client.sdk import (
    SDK_INPUT_REQUIRED_MAX_ROUNDS,
    URL_ELICITATION_REQUIRED,
    ElicitationHandler,
    SdkError,
    completed_elicitation_id,
    error_code,
    error_data,
)
from mcp_elicit.client.ui_protocol import Requester, UrlCapableUI, UrlPrompt, UrlWaiting
from mcp_elicit.client.url_flow import (
    URL_RECHECK_REASON,
    CompletionTracker,
    Consent,
    UrlCall,
    current_url_call,
    url_call,
    wait_for_page,
)
from mcp_elicit.client.url_stages import (
    MAX_ELICITATION_ID_CHARS,
    CheckUrl,
    UrlAsk,
    page_key,
    url_prompt,
    url_warnings,
)
from mcp_elicit.core.revisions import is_modern
from mcp_elicit.core.urls import UrlVerdict, check_url
from mcp_elicit.errors import ConfigError, OutOfOrder, UrlHandoffStopped

if TYPE_CHECKING:
    from mcp_elicit.client.pipeline import Pipeline

__all__ = [
    "MAX_ELICITATION_ID_CHARS",
    "MAX_URL_CHECKS",
    "MAX_URL_REQUIRED_ELICITATIONS",
    "MAX_URL_REQUIRED_ROUNDS",
    "OPEN_TIMEOUT_SECONDS",
    "URL_CHECK_FIRST_DELAY_SECONDS",
    "URL_CHECK_MAX_DELAY_SECONDS",
    "URL_WAIT_TIMEOUT_SECONDS",
    "CheckUrl",
    "UrlAsk",
    "UrlMode",
    "UrlSettings",
    "url_warnings",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# 2026-07-28: times the client answers accept again for one consented page while the server keeps
# asking for it (U8). With the backoff below that is about nine minutes of waiting, as long as a
# server's hand-off link lives by default (600 s).
MAX_URL_CHECKS: Final = 40
# Backoff between those checks: 1 s, 2 s, 4 s, 8 s, then every 15 s. A person needs seconds to
# minutes on a page; checking faster only loads the server.
URL_CHECK_FIRST_DELAY_SECONDS: Final = 1.0
URL_CHECK_MAX_DELAY_SECONDS: Final = 15.0
# Longest wait for one page: for its completion notification (2025-11-25) or, since it was opened,
# for the server to stop asking for it (2026-07-28). Matches the server kit's link lifetime.
URL_WAIT_TIMEOUT_SECONDS: Final = 600.0
# 2025-11-25: answers of -32042 one call may get before the client stops retrying it (U7). Each
# round needs a page finished by the person; more than a few in one call is a server in a loop.
MAX_URL_REQUIRED_ROUNDS: Final = 5
# Entries of one -32042 answer the client handles; each is a page the person must consent to.
MAX_URL_REQUIRED_ELICITATIONS: Final = 8
# Bound on starting the browser (the system opener returns at once; an injected one may drive a
# page): an opener that hangs makes the answer cancel instead of hanging the question.
OPEN_TIMEOUT_SECONDS: Final = 30.0


@dataclass(frozen=True)
class UrlSettings:
    """The bounds of URL mode (defaults: the constants above) and the clock and sleep it uses."""

    max_checks: int = MAX_URL_CHECKS
    first_delay: float = URL_CHECK_FIRST_DELAY_SECONDS
    max_delay: float = URL_CHECK_MAX_DELAY_SECONDS
    wait_timeout: float = URL_WAIT_TIMEOUT_SECONDS
    max_required_rounds: int = MAX_URL_REQUIRED_ROUNDS
    max_required_elicitations: int = MAX_URL_REQUIRED_ELICITATIONS
    open_timeout: float = OPEN_TIMEOUT_SECONDS
    sleep: Callable[[float], Awaitable[object]] = anyio.sleep
    clock: Callable[[], float] = time.monotonic

    def delay(self, check: int) -> float:
        """Seconds before automatic check number `check` (1, 2, …): doubling up to `max_delay`."""
        return float(min(self.first_delay * 2 ** min(max(check - 1, 0), 32), self.max_delay))


def _untimed(held: bool) -> AbstractContextManager[object]:
    return contextlib.nullcontext()


class UrlMode:
    """URL mode for one connection: the stages, the opener, the completion tracker, the retries.

    `opener` defaults to the system opener (`client/opener.py`); `trusted_domains` are sites the
    person already trusts (look-alikes of them are blocked like those of well-known sites).
    Raises ConfigError when there is no way to open a browser.
    """

    def __init__(
        self,
        *,
        opener: UrlOpener | None = None,
        trusted_domains: Iterable[str] = (),
        settings: UrlSettings | None = None,
    ) -> None:
        found = opener if opener is not None else system_opener()
        if found is None:
            raise ConfigError(
                "url_mode", "no way to open a browser here: set MCP_ELICIT_BROWSER or pass an opener"
            )
        self.opener: UrlOpener = found
        self.trusted_domains = tuple(trusted_domains)
        self.settings = settings or UrlSettings()
        self.tracker = CompletionTracker()
        self.live: list[UrlCall] = []  # the requests in flight through `run`
        self._ui: UrlCapableUI | None = None
        # Entered, `held` or not, while the client waits on the person's page (`mcp-elicit call`'s
        # deadline on the server stops meanwhile); `held`: a 2026-07-28 retry the server holds for it.
        self.waiting_on_person: Callable[[bool], AbstractContextManager[object]] = _untimed

    @property
    def ui(self) -> UrlCapableUI:
        if self._ui is None:
            raise OutOfOrder("UrlMode.ui", "UrlMode.install(pipeline)")
        return self._ui

    def install(self, pipeline: Pipeline) -> None:
        """Add the URL stages to `pipeline` and declare URL mode; one pipeline per `UrlMode`."""
        ui = pipeline.ui
        if not isinstance(ui, UrlCapableUI):
            raise ConfigError(
                "url_mode", "this UI cannot take part in URL mode (it needs ask_url and wait_url)"
            )
        if self._ui is not None:
            raise ConfigError("url_mode", "this UrlMode is already installed in a pipeline")
        names = pipeline.names
        if "check_url" in names or "ask" not in names:
            raise ConfigError("url_mode", "the pipeline needs an ask stage and no check_url stage yet")
        if "check_mode" in names:
            pipeline.insert(CheckUrl(self), after="check_mode")
        else:
            pipeline.insert(CheckUrl(self), before=names[0])
        pipeline.replace(UrlAsk(pipeline.stage("ask"), self))
        pipeline.modes = pipeline.modes | {"url"}
        self._ui = ui

    @property
    def headless(self) -> bool:
        """True when links are shown to the person instead of opened (`opener.ShowLink`)."""
        return bool(getattr(self.opener, "headless", False))

    @property
    def in_page(self) -> bool:
        """True when the opener describes itself (the browser UI: the person clicks in its page)."""
        return isinstance(getattr(self.opener, "description", None), str)

    def describe(self) -> str:
        """Which URL mode is in effect, in words for the person."""
        if self.in_page:
            return str(self.opener.description)  # type: ignore[attr-defined]
        if self.headless:
            return "headless: after you consent, the link is shown for you to open on a device with a browser"
        return "after you consent, the page opens in your browser"

    def sdk_options(self) -> dict[str, Any]:
        """Options for the SDK's `Client`: the completion route, and room for the checks of
        `check_again` within the SDK's own bound on `InputRequiredResult` rounds."""
        return {
            "message_handler": self.on_message,
            "input_required_max_rounds": SDK_INPUT_REQUIRED_MAX_ROUNDS + self.settings.max_checks,
        }

    # -- what the person sees -----------------------------------------------------------------

    def prompt(self, e: Elicitation, verdict: UrlVerdict) -> UrlPrompt:
        shown = url_prompt(e, verdict)
        return replace(shown, headless=True) if self.headless else shown

    async def tell(self, requester: Requester, text: str) -> None:
        try:
            await self.ui.notice(requester, text)
        except Exception:
            logger.exception("the UI failed to show a notice")

    # -- opening --------------------------------------------------------------------------------

    async def open(self, url: str) -> bool:
        """Open `url` with the opener, bounded; False (logged) when it failed."""
        try:
            with anyio.fail_after(self.settings.open_timeout):
                await self.opener(url)
        except Exception:
            logger.warning("the browser could not be opened", exc_info=True)
            return False
        return True

    async def open_consented(
        self, e: Elicitation, verdict: UrlVerdict, decision: Reply, call: UrlCall | None
    ) -> Decision:
        key, url = page_key(verdict), verdict.canonical
        eid = e.elicitation_id
        if eid is not None:
            self.tracker.expect(eid)  # before opening: the completion may come before we return
        if url is None or not await self.open(url):
            if call is not None:
                call.refused[key] = "cancel"
            await self.tell(
                e.requester, "The browser could not be opened: the request for the page was cancelled."
            )
            return Reply("cancel", "error", reason="browser_failed")
        prompt = e.url_prompt if e.url_prompt is not None else self.prompt(e, verdict)
        consent = Consent(key, url, prompt, self.settings.clock(), eid)
        consent.last_check_at = consent.opened_at
        if call is not None:
            call.consented[key] = consent
            if consent.elicitation_id is not None and not e.url_listed:
                call.pushed(consent)
            elif is_modern(e.protocol):
                consent.held = True  # the accepting retry goes out now; wait on screen meanwhile
                call.pushed(consent)
        return Reply("accept", decision.decided_by)

    def _reopen(self, consent: Consent) -> Callable[[], Awaitable[bool]]:
        async def reopen() -> bool:
            return await self.open(consent.url)

        return reopen

    def call_of(self) -> UrlCall | None:
        """The request a question serves: the caller's, else the only one in flight (a stdio push)."""
        current = current_url_call()
        return self.live[0] if current is None and len(self.live) == 1 else current

    # -- 2026-07-28: the same page asked for again ---------------------------------------------

    async def check_again(self, e: Elicitation, consent: Consent) -> Decision:
        s = self.settings
        current = self.call_of()
        # The held-retry screen gives way to this one: not shown any more if it was not yet, and
        # interrupted if it is (the watch picks a screen and its interrupt in one step).
        consent.held, consent.shown = False, True
        if current is not None:
            current.asking()
        consent.checks += 1
        if consent.checks > s.max_checks or s.clock() - consent.opened_at > s.wait_timeout:
            await self.tell(
                e.requester,
                f"The server kept asking for the same page ({consent.checks - 1} checks): "
                "the request was stopped.",
            )
            return Refuse(
                "url_checks_exhausted", f"the server kept asking for the same page ({s.max_checks} checks)"
            )
        if consent.cancel_requested:
            return self._cancelled(consent, current)
        # The server may have held the last retry while the page was pending (the kit's server
        # does, up to DEFAULT_HANDOFF_HOLD_SECONDS): no backoff on top of a hold at least as long.
        delay = s.delay(consent.checks)
        if s.clock() - consent.last_check_at >= delay:
            delay = 0.0
        if delay > 0:
            waiting = UrlWaiting(consent.prompt, "retry", True, consent.checks, s.max_checks, delay)
            with self.waiting_on_person(False):
                end = await wait_for_page(
                    self.ui, waiting, reopen=self._reopen(consent), sleep=s.sleep, retry_after=delay
                )
            if end == "cancel":
                return self._cancelled(consent, current)
        consent.last_check_at = s.clock()
        if current is not None:
            consent.shown = False  # the waiting screen again while this retry is in flight
            consent.held = True
            current.pushed(consent)
        return Reply("accept", self._decider(), reason=URL_RECHECK_REASON)

    def _cancelled(self, consent: Consent, current: UrlCall | None) -> Decision:
        consent.held = False
        if current is not None:
            current.refused[consent.key] = "cancel"
            current.consented.pop(consent.key, None)
        return Reply("cancel", self._decider(), reason="url_wait_cancelled")

    def _decider(self) -> Literal["person", "script"]:
        """Who decided on the waiting screen: a scripted UI (`scripted = True`) is not a person."""
        return "script" if getattr(self.ui, "scripted", False) else "person"

    # -- completions (2025-11-25) ----------------------------------------------------------------

    async def on_message(self, message: Any) -> None:
        """The SDK's `message_handler`: routes `notifications/elicitation/complete` to the tracker."""
        eid = completed_elicitation_id(message)
        if eid is not None:
            self.tracker.complete(eid)

    # -- one request --------------------------------------------------------------------------------

    async def run(self, send: Callable[[], Awaitable[T]], handler: ElicitationHandler) -> T:
        """Send one request with URL mode around it: pushes waited on, -32042 answered (U6, U7)."""
        with url_call() as call:
            self.live.append(call)
            try:
                for rounds in itertools.count():
                    try:
                        return await self._with_pushes(call, send)
                    except SdkError as err:
                        session = handler.session
                        modern = session is not None and is_modern(session.protocol_version or "")
                        if error_code(err) != URL_ELICITATION_REQUIRED or modern:
                            raise
                        if rounds >= self.settings.max_required_rounds:
                            raise UrlHandoffStopped("rounds_exceeded", rounds) from err
                        await self._required(call, err, handler, rounds + 1)
            finally:
                self.live.remove(call)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _with_pushes(self, call: UrlCall, send: Callable[[], Awaitable[T]]) -> T:
        result: list[T] = []
        error: Exception | None = None
        stopped: list[UrlHandoffStopped] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_pushes, call, tg.cancel_scope, stopped)
            try:
                result.append(await send())
            except Exception as exc:  # re-raised below as is, not wrapped in an exception group
                error = exc
            finally:
                tg.cancel_scope.cancel()
        if error is not None:
            raise error
        if result:
            return result[0]
        if stopped:
            raise stopped[0]
        raise anyio.get_cancelled_exc_class()()  # pragma: no cover - only an outer cancellation

    async def _watch_pushes(
        self, call: UrlCall, scope: anyio.CancelScope, stopped: list[UrlHandoffStopped]
    ) -> None:
        """The waiting screen for each pushed page until its completion (U6); cancel ends the call."""
        while True:
            pending = [
                c
                for c in call.pushes
                if not c.shown
                and (
                    c.held or (c.elicitation_id is not None and not self.tracker.completed(c.elicitation_id))
                )
            ]
            if not pending:
                await call.changed.wait()
                continue
            consent = pending[0]
            consent.shown = True
            eid = consent.elicitation_id or ""
            with self.waiting_on_person(consent.held):
                end = await wait_for_page(
                    self.ui,
                    UrlWaiting(consent.prompt, "completion", can_retry=False),
                    reopen=self._reopen(consent),
                    sleep=self.settings.sleep,
                    done=None if consent.held else self.tracker.expect(eid),
                    # A held retry is bounded by the server's hold and the read timeout, not here.
                    timeout=None if consent.held else self.settings.wait_timeout,
                    interrupt=call.question,
                )
            if end == "cancel" and consent.held:
                consent.cancel_requested = True  # told to the server when it asks again
                await self.tell(
                    consent.prompt.requester,
                    "Cancelled: the server is told when it next asks about the page.",
                )
                continue
            if end in ("cancel", "timeout"):
                # No completion within the wait bound ends the call too: waiting on means a script
                # (or an absent person) holds the command until the server gives up, if ever.
                stopped.append(UrlHandoffStopped("cancelled" if end == "cancel" else "timeout", 0, eid))
                scope.cancel()
                return

    async def _required(self, call: UrlCall, err: SdkError, handler: ElicitationHandler, rounds: int) -> None:
        """Reply one -32042 (U7): consent to each listed page like a pushed one, then wait."""
        data = error_data(err)
        listed = data.get("elicitations") if isinstance(data, Mapping) else None
        if not isinstance(listed, list) or not 1 <= len(listed) <= self.settings.max_required_elicitations:
            raise UrlHandoffStopped("invalid", rounds) from err
        waits: list[tuple[Consent, anyio.Event]] = []
        for params in listed:
            if not isinstance(params, Mapping) or params.get("mode", "url") != "url":
                raise UrlHandoffStopped("invalid", rounds) from err
            eid, url = params.get("elicitationId"), params.get("url")
            if not isinstance(eid, str) or not isinstance(url, str):
                raise UrlHandoffStopped("invalid", rounds) from err
            if self.tracker.completed(eid):
                raise UrlHandoffStopped("repeated", rounds, eid) from err
            consent = call.consented.get(page_key(check_url(url, trusted_domains=self.trusted_domains)))
            if consent is not None:  # the same page, still open: wait again, no new consent
                if consent.elicitation_id is not None and self.tracker.completed(consent.elicitation_id):
                    raise UrlHandoffStopped("repeated", rounds, eid) from err
                if len(eid) > MAX_ELICITATION_ID_CHARS:
                    raise UrlHandoffStopped("invalid", rounds, None) from err
                waits.append((consent, self.tracker.expect(eid)))
                continue
            e = handler.elicitation({**params, "mode": "url"})
            e.url_listed = True
            decision, outcome = await handler.pipeline.run(e)
            handler.outcomes.append(outcome)
            if isinstance(decision, Refuse):
                raise UrlHandoffStopped("refused", rounds, eid) from err
            if decision.action != "accept":
                reason = "declined" if decision.action == "decline" else "cancelled"
                raise UrlHandoffStopped(reason, rounds, eid) from err
            consent = next((c for c in call.consented.values() if c.elicitation_id == eid), None)
            if consent is None:  # a custom ask stage accepted without opening through this mode
                raise UrlHandoffStopped("refused", rounds, eid) from err
            waits.append((consent, self.tracker.expect(eid)))
        for consent, done in waits:
            with self.waiting_on_person(False):
                end = await wait_for_page(
                    self.ui,
                    UrlWaiting(consent.prompt, "completion", can_retry=True),
                    reopen=self._reopen(consent),
                    sleep=self.settings.sleep,
                    done=done,
                    timeout=self.settings.wait_timeout,
                )
            if end == "retry":
                return
            if end in ("cancel", "timeout", "interrupted"):
                reason = "cancelled" if end == "cancel" else "timeout"
                raise UrlHandoffStopped(reason, rounds, consent.elicitation_id) from err

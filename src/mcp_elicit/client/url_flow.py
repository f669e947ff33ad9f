"""The moving parts of URL mode after consent: completions, the state of one call, the waiting screen.

- `CompletionTracker` (2025-11-25, U6): the elicitation ids this client opened a page for, and
  which of them the server said were completed (`notifications/elicitation/complete`). An id is
  expected *before* its page is opened, so a completion that races the opener is never lost;
  an unknown id, or one already completed, is ignored and counted (`ignored`).
- `UrlCall`: what one request (a tool call, a prompt, a resource read) has done in URL mode: the
  URLs the person consented to (never asked again within the call), declined or was refused,
  and the pushed hand-offs still waiting for their completion. It lives in a context variable
  for the duration of the call (`url_call`), which the SDK carries into the elicitation callback
  (2026-07-28 embedded requests always, 2025-11-25 pushes over streamable HTTP).
- `wait_for_page`: the waiting screen, raced against what ends the wait on its own (a completion,
  the next automatic check, a time limit, another question that needs the screen).
"""

from __future__ import annotations

import contextvars
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final, Literal

import anyio

from mcp_elicit.client.ui_protocol import UrlCapableUI, UrlPrompt, UrlWaiting

__all__ = [
    "MAX_REOPENS",
    "MAX_TRACKED_ELICITATIONS",
    "URL_RECHECK_REASON",
    "CompletionTracker",
    "Consent",
    "UrlCall",
    "WaitEnd",
    "current_url_call",
    "url_call",
    "wait_for_page",
]

logger = logging.getLogger(__name__)

# Elicitation ids a tracker remembers, pending and completed together (oldest forgotten first). A
# person opens a handful of pages per session; a server cannot grow the client's memory by
# sending completions (unknown ids are never stored).
MAX_TRACKED_ELICITATIONS: Final = 1_000

# Times the person may have the page opened again from one waiting screen: enough for a closed
# tab or a crashed browser; a script that keeps choosing "open" cannot spin.
MAX_REOPENS: Final = 3

URL_RECHECK_REASON: Final = "url_check"
"""The reason on an automatic 2026-07-28 re-check of a page already consented to: not a new
decision by the person, so the audit trail does not record it (`client/audit.py`)."""

WaitEnd = Literal["done", "retry", "cancel", "timeout", "interrupted"]


class CompletionTracker:
    """Which elicitation ids this client opened a page for, and which are completed (U6)."""

    def __init__(self, limit: int = MAX_TRACKED_ELICITATIONS) -> None:
        self.limit = limit
        self._ids: OrderedDict[str, anyio.Event] = OrderedDict()
        self.ignored = 0  # completions for unknown or already completed ids
        self.on_complete: Callable[[str], object] | None = None  # told each id as it completes

    def expect(self, elicitation_id: str) -> anyio.Event:
        """Start tracking `elicitation_id` (before its page opens); its event is set on completion."""
        event = self._ids.get(elicitation_id)
        if event is None:
            event = self._ids[elicitation_id] = anyio.Event()
            while len(self._ids) > self.limit:
                self._ids.popitem(last=False)
        return event

    def complete(self, elicitation_id: str) -> bool:
        """The server says `elicitation_id` is done: True if it was pending; otherwise ignored."""
        event = self._ids.get(elicitation_id)
        if event is None or event.is_set():
            self.ignored += 1
            logger.debug("ignored a completion for an unknown or completed elicitation id")
            return False
        event.set()
        if self.on_complete is not None:
            self.on_complete(elicitation_id)
        return True

    def completed(self, elicitation_id: str) -> bool:
        event = self._ids.get(elicitation_id)
        return event is not None and event.is_set()

    def event(self, elicitation_id: str) -> anyio.Event | None:
        return self._ids.get(elicitation_id)

    def expected(self) -> tuple[str, ...]:
        """Every id tracked (pending or completed), oldest first."""
        return tuple(self._ids)


@dataclass(eq=False)
class Consent:
    """One URL the person consented to within a call, and how the waiting has gone since."""

    key: str  # the canonical URL
    url: str  # the URL opened
    prompt: UrlPrompt
    opened_at: float
    elicitation_id: str | None = None
    checks: int = 0  # automatic or manual checks since it was opened
    shown: bool = False  # the waiting screen for a pushed hand-off was shown
    # 2026-07-28: the accepting retry is in flight, and a server may hold it while the page is
    # pending; the waiting screen (with cancel) shows meanwhile, not only once the server asks again.
    held: bool = False
    last_check_at: float = 0.0  # when the last retry went out (opened_at at first)
    # The person cancelled while a held retry was in flight: the server hears cancel when it asks
    # again (2026-07-28 has no other way to answer a request already sent).
    cancel_requested: bool = False


@dataclass(eq=False)
class UrlCall:
    """URL mode within one request: consents, refusals and pushed hand-offs still open."""

    consented: dict[str, Consent] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)  # canonical URL -> the answer it got
    pushes: list[Consent] = field(default_factory=list)  # 2025-11-25 pushes waiting for completion
    changed: anyio.Event = field(default_factory=anyio.Event)
    question: anyio.Event = field(default_factory=anyio.Event)  # another question needs the screen

    def pushed(self, consent: Consent) -> None:
        if consent not in self.pushes:
            self.pushes.append(consent)
        self.changed.set()
        self.changed = anyio.Event()

    def asking(self) -> None:
        """A question is about to be shown: a waiting screen must give way."""
        self.question.set()
        self.question = anyio.Event()


_CURRENT: contextvars.ContextVar[UrlCall | None] = contextvars.ContextVar("mcp_elicit_url_call", default=None)


@contextmanager
def url_call() -> Iterator[UrlCall]:
    """The URL state of one request, for as long as it runs (what `UrlMode.run` enters)."""
    call = UrlCall()
    token = _CURRENT.set(call)
    try:
        yield call
    finally:
        _CURRENT.reset(token)


def current_url_call() -> UrlCall | None:
    return _CURRENT.get()


async def wait_for_page(
    ui: UrlCapableUI,
    waiting: UrlWaiting,
    *,
    reopen: Callable[[], Awaitable[bool]],
    sleep: Callable[[float], Awaitable[object]],
    done: anyio.Event | None = None,
    retry_after: float | None = None,
    timeout: float | None = None,
    interrupt: anyio.Event | None = None,
) -> WaitEnd:
    """Show `waiting` until the wait ends: `done` is set ("done"), `retry_after` seconds pass or
    the person asks to check now ("retry"), the person gives up ("cancel"), `timeout` passes
    ("timeout") or `interrupt` is set ("interrupted"). "open" reopens the page and keeps waiting.

    A UI that fails is logged and the wait goes on without it (it still ends on its own).
    """
    if done is not None and done.is_set():
        return "done"
    for _ in range(MAX_REOPENS + 1):
        end = await _wait_once(ui, waiting, sleep, done, retry_after, timeout, interrupt)
        if end != "open":
            return end
        if not await reopen():
            return "cancel"
    return "cancel"  # the page was opened again MAX_REOPENS times: the person gives up on it


async def _wait_once(
    ui: UrlCapableUI,
    waiting: UrlWaiting,
    sleep: Callable[[float], Awaitable[object]],
    done: anyio.Event | None,
    retry_after: float | None,
    timeout: float | None,
    interrupt: anyio.Event | None,
) -> WaitEnd | Literal["open"]:
    """One stretch of the waiting screen: the first of the events, timers and the person wins."""
    ended: list[WaitEnd | Literal["open"]] = []
    async with anyio.create_task_group() as tg:

        def finish(end: WaitEnd | Literal["open"]) -> None:
            if not ended:
                ended.append(end)
                tg.cancel_scope.cancel()

        async def on_event(event: anyio.Event, end: WaitEnd) -> None:
            await event.wait()
            finish(end)

        async def after(seconds: float, end: WaitEnd) -> None:
            await sleep(seconds)
            finish(end)

        async def person() -> None:
            try:
                choice = await ui.wait_url(waiting)
            except Exception:
                logger.exception("the UI failed on the waiting screen; waiting without it")
                return
            if choice in ("retry", "open", "cancel"):
                finish(choice)
            else:
                logger.error("the UI returned %r on the waiting screen; ignored", choice)

        if done is not None:
            tg.start_soon(on_event, done, "done")
        if interrupt is not None:
            tg.start_soon(on_event, interrupt, "interrupted")
        if retry_after is not None:
            tg.start_soon(after, retry_after, "retry")
        if timeout is not None:
            tg.start_soon(after, timeout, "timeout")
        tg.start_soon(person)
    # Nothing ended it: no event, no timer, and the UI gave up. Waiting longer could be forever.
    return ended[0] if ended else "timeout"

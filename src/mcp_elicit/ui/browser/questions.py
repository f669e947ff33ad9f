"""The questions waiting for the person, one at a time, and what the person did with each.

Several servers may ask at once (one connection per server, or several questions of one
server): each `ask_*` call puts a `Question` at the end of the queue and waits for it; the page
always shows the first. A question ends when the person answers it, when its asker gives up (the
pipeline's own timeout, the call ended: the question is withdrawn), or when nobody touched it for
`idle_timeout` seconds while it was on screen (it then ends as cancel, decided by "timeout").
The clock is injectable, and `expire_idle()` is what the background check calls.
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import anyio

from mcp_elicit.client.ui_protocol import FormPrompt, UIResult, UrlPrompt, UrlWaiting, WaitChoice

__all__ = ["IDLE_TIMEOUT_SECONDS", "MAX_NOTICES", "MAX_QUEUED", "Question", "QuestionQueue"]

# Seconds a question may sit on screen untouched before it ends as cancel (a forgotten tab). Below
# the pipeline's own bound (core.limits.ELICITATION_IDLE_TIMEOUT_SECONDS), so the person's page,
# not the pipeline, says what happened.
IDLE_TIMEOUT_SECONDS: Final = 300.0

# Notices kept for the page (the newest first); older ones drop off.
MAX_NOTICES: Final = 20

# Questions waiting at once; one more is cancelled at once (a server flooding the queue). The
# pipeline bounds each server's questions too (core.limits.MAX_WAITING_ELICITATIONS).
MAX_QUEUED: Final = 64

Kind = Literal["form", "approval", "url", "wait"]


def kind_of_form(prompt: FormPrompt) -> Kind:
    """A form without fields is a request for a go-ahead (the policy's ask-first approval, or a
    server's own yes/no), not an empty form to fill in."""
    return "form" if prompt.form.fields else "approval"


@dataclass(eq=False)
class Question:
    id: str
    kind: Kind
    prompt: FormPrompt | UrlPrompt | UrlWaiting
    touched: float
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: UIResult | WaitChoice | None = None
    stage: Literal["edit", "review"] = "edit"
    values: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    focus: str = ""
    # Bumped whenever `values` are reviewed again: a Send carries the revision its page showed, so
    # a page left open in another tab cannot send answers it never showed.
    revision: int = 0

    def finish(self, outcome: UIResult | WaitChoice) -> None:
        if self.outcome is None:
            self.outcome = outcome
            self.done.set()


class QuestionQueue:
    def __init__(self, clock: Callable[[], float], idle_timeout: float | None = IDLE_TIMEOUT_SECONDS) -> None:
        self.clock = clock
        self.idle_timeout = idle_timeout
        self.items: list[Question] = []
        self.notices: deque[str] = deque(maxlen=MAX_NOTICES)
        self.flash = ""
        self.changed = anyio.Event()  # set (and replaced) whenever the queue changes

    def _changed(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    @property
    def head(self) -> Question | None:
        return self.items[0] if self.items else None

    def touch(self, q: Question) -> None:
        q.touched = self.clock()

    async def ask(self, kind: Kind, prompt: FormPrompt | UrlPrompt | UrlWaiting) -> UIResult | WaitChoice:
        if len(self.items) >= MAX_QUEUED:
            return "cancel" if kind == "wait" else UIResult("cancel")
        q = Question(secrets.token_urlsafe(9), kind, prompt, self.clock())
        if kind == "form" and isinstance(prompt, FormPrompt):
            q.values = {k: v for k, v in prompt.values.items() if k in prompt.form.names}
            q.errors = dict(prompt.errors)
        self.items.append(q)
        self._changed()
        try:
            await q.done.wait()
        finally:
            if q.outcome is None and kind != "wait":
                self.flash = "A question was withdrawn (the call ended or timed out)."
            self.remove(q)
        if q.outcome is None:  # pragma: no cover - done is set only with an outcome
            return UIResult("cancel")
        return q.outcome

    def remove(self, q: Question) -> None:
        if q in self.items:
            was_head = self.items[0] is q
            self.items.remove(q)
            if was_head and self.items:
                self.touch(self.items[0])  # the next question's time on screen starts now
            self._changed()

    def expire_idle(self) -> None:
        """End the question on screen as cancel when it sat untouched for `idle_timeout`."""
        q = self.head
        if q is None or self.idle_timeout is None or q.kind == "wait":
            return
        if self.clock() - q.touched >= self.idle_timeout:
            self.flash = "A question was cancelled: nobody answered it in time."
            q.finish(UIResult("cancel", decided_by="timeout"))
            self.remove(q)

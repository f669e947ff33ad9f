"""Held upstream calls: a 2026-07-28 downstream client answers in rounds, the upstream pushed and waits.

The gateway keeps the upstream call running in a task of its own and ends each downstream run with
the question as an InputRequiredResult. Its `requestState` is a fresh random id per round (sealed by
the SDK's requestState boundary on top), single use and bound to the user whose call it is: a
retry takes the hold out of the table, so the same state never answers twice, and another user's
state finds nothing. Bounded: holds per user, and the time a hold waits for the next retry.

A client may never come back (its handler raised, the person left): a held call whose question
waits `HOLD_WAIT_SECONDS` without a retry is abandoned. Its question ends as cancel (a timeout,
reason `no_retry`, recorded as usual), the upstream call is cancelled (the SDK sends
`notifications/cancelled`), its state answers nothing, and the gateway's book no longer matches
questions to it (`CallBook.find`), so it never takes a later call's question. A round told the
upstream did not answer in time (`HOLD_WAIT_SECONDS` without a question or a result) abandons
its call the same way.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcp_elicit.client.ui_protocol import UIResult
from mcp_elicit.core.actions import ACTIONS

__all__ = ["ABANDONED", "HOLD_WAIT_SECONDS", "MAX_HOLDS_PER_USER", "Hold", "Holds", "answer_of"]

# Held upstream calls one user may have waiting for a downstream retry at once.
MAX_HOLDS_PER_USER: Final = 8
# How long a held call waits for the downstream client's next retry before it ends as cancel.
HOLD_WAIT_SECONDS: Final = 600.0
# A consent record's reason for a question of a held call nobody came back for.
ABANDONED: Final = "no_retry"


@dataclass(eq=False)
class Hold:
    user: str
    # upstream side -> downstream handler: ("question", wire request) or ("done", result)
    events_in: MemoryObjectSendStream[tuple[str, Any]]
    events: MemoryObjectReceiveStream[tuple[str, Any]]
    # downstream handler -> the relay waiting on the answer
    answers_in: MemoryObjectSendStream[UIResult]
    answers: MemoryObjectReceiveStream[UIResult]
    deadline: float = field(default=math.inf)
    # what a shared state record names (gateway/shared_state.py)
    server: str = ""
    tool: str = ""
    method: str = "tools/call"  # the downstream request held: its retries must be the same kind
    upstream_id: str | None = None  # a URL round: the upstream's elicitationId
    live: Any = None  # the downstream request waiting on this call now (its progress goes there)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)  # the held upstream call's
    abandoned: bool = False  # nobody will come back for it (see the module's docstring)

    async def ask(self, request: dict[str, Any]) -> UIResult:
        """Called by the relay with the wire request (a form or a URL): hand it to the downstream
        run, wait for the retry's answer; none in `HOLD_WAIT_SECONDS`: the call is abandoned."""
        if self.abandoned:  # its upstream call is being cancelled: nobody will answer
            return UIResult("cancel", decided_by="timeout", reason=ABANDONED)
        await self.events_in.send(("question", request))
        with anyio.move_on_after(HOLD_WAIT_SECONDS):
            return await self.answers.receive()
        self.abandon()  # this question is still answered (cancel) and recorded
        return UIResult("cancel", decided_by="timeout", reason=ABANDONED)

    def abandon(self) -> None:
        """Nobody will come back for this call: end the held upstream call (the SDK tells the
        upstream it was cancelled) and never hand it a question again."""
        self.abandoned = True
        self.scope.cancel()

    def finish(self, result: Any) -> None:
        # Nobody may wait any more (the client never came back): then the result is dropped.
        with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.events_in.send_nowait(("done", result))


def answer_of(raw: Any) -> UIResult:
    """A retry's answer to our one question ("q"), as the relay's UI result."""
    action = raw.get("action") if isinstance(raw, dict) else None
    content = raw.get("content") if isinstance(raw, dict) else None
    return UIResult(action if action in ACTIONS else "cancel", content if isinstance(content, dict) else None)


class Holds:
    """The table of held calls waiting for a retry, keyed by the state handed to the client."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._by_state: dict[str, Hold] = {}
        self._clock = clock

    def new(self, user: str) -> Hold | None:
        """A new hold for `user`, or None when they already hold the maximum."""
        if self.held(user) >= MAX_HOLDS_PER_USER:
            return None
        events_in, events = anyio.create_memory_object_stream[tuple[str, Any]](2)
        answers_in, answers = anyio.create_memory_object_stream[UIResult](1)
        return Hold(user, events_in, events, answers_in, answers)

    def park(self, hold: Hold) -> str:
        """Put `hold` in the table under a fresh state for the client's next retry."""
        state = secrets.token_urlsafe(16)
        hold.deadline = self._clock() + HOLD_WAIT_SECONDS
        self._by_state[state] = hold
        return state

    def take(self, state: str, user: str, method: str | None = None) -> Hold | None:
        """The hold `state` names, out of the table (single use); None if unknown, another user's
        or (given `method`) a hold of another kind of request, which stays."""
        self._prune()
        hold = self._by_state.get(state)
        if hold is None or hold.user != user or (method is not None and hold.method != method):
            return None
        del self._by_state[state]
        return hold

    def abandon_all(self) -> None:
        """The gateway stops: every held call is cancelled upstream (the SDK tells the upstream)
        before the upstreams are stopped, so none is taken for an upstream lost under it."""
        for hold in self._by_state.values():
            hold.abandon()
        self._by_state.clear()

    def held(self, user: str) -> int:
        """How many held calls of `user` wait for a retry now."""
        self._prune()
        return sum(1 for h in self._by_state.values() if h.user == user)

    def _prune(self) -> None:
        """Drop the states of holds past their deadline or abandoned: a late retry finds nothing."""
        now = self._clock()
        for state in [s for s, h in self._by_state.items() if h.deadline < now or h.abandoned]:
            del self._by_state[state]

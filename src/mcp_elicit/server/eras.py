"""Where the two protocol eras meet on the server: one strategy per era, chosen once per question.

`Push` (2025-11-25 and older): each input request is sent server-to-client and awaited, up to a
timeout, released when the client disconnects. `Rounds` (2026-07-28): the run ends with an
InputRequiredResult and, when the client retries, each step gets its recorded answer back (see
`rounds`). `ask`/`gather` and the URL hand-offs run every step through one of them, so these rules
live here once:

- the question's key (`key=` or `elicitation-<n>`) and the per-call limit on questions;
- the capability check: CapabilityError for the tool on 2025-11-25, CapabilityRequired (the
  request is answered -32021 with `requiredCapabilities`) on 2026-07-28;
- asking again after an invalid answer, at most `max_invalid_answers` times, then AnswerError (M4);
- on 2026-07-28, that the middleware is installed (NotInstalled otherwise).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import anyio

from mcp_elicit.core.revisions import is_modern
from mcp_elicit.errors import (
    AnswerError,
    CapabilityError,
    CapabilityRequired,
    ClientGone,
    ElicitationTimeout,
    FieldProblem,
    NotInstalled,
)
from mcp_elicit.server import rounds, sdk
from mcp_elicit.server.rounds import Candidate, ElicitSettings

__all__ = ["Era", "Push", "Rounds", "era_of", "question_key"]

Settle = Callable[[str, Any], Any]
"""Turns one raw response into the value the tool gets; raises AnswerError when it is not valid."""
OnFail = Callable[[str, str, float], Awaitable[None]]
"""Records a question that ended without an answer: (key, reason, started at)."""
OnAnswer = Callable[[str, Any, float], Awaitable[None]]
"""Records a fresh answer (not one replayed from an earlier round): (key, value, latency in ms)."""


class Era:
    """What both eras share: the context, the settings, the round (when installed)."""

    modern = False

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.round = rounds.current_round()
        self.settings: ElicitSettings = self.round.settings if self.round is not None else ElicitSettings()

    def key(self, key: str | None) -> str:
        return question_key(key)

    def need(self, capabilities: Iterable[str]) -> None:
        """Refuse when the client did not declare one of `capabilities` (C1, C2): CapabilityError
        for the tool to handle on 2025-11-25; on 2026-07-28 the whole request is answered with
        -32021 naming it (CapabilityRequired, which tool code does not catch as CapabilityError)."""
        declared = sdk.declared_capabilities(self.ctx)
        for capability in capabilities:
            if capability not in declared:
                if self.modern:
                    raise CapabilityRequired(capability)
                raise CapabilityError(capability.removeprefix("elicitation."))


class Push(Era):
    """2025-11-25 and older: send each request and wait for its answer."""

    async def send(self, request: dict[str, Any], seconds: float) -> dict[str, Any] | None:
        """One pushed request; ElicitationTimeout after `seconds`, ClientGone when the client leaves."""
        try:
            with anyio.fail_after(seconds):
                return await sdk.push_request(self.ctx, request)
        except TimeoutError:
            raise ElicitationTimeout(seconds) from None

    async def exchange(
        self,
        requests: dict[str, dict[str, Any]],
        settle: Settle,
        on_fail: OnFail,
        on_answer: OnAnswer,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Each request in turn, asked again after an invalid answer; the settled value per key."""
        seconds = self.settings.ask_timeout if timeout is None else timeout
        clock = self.settings.clock
        out: dict[str, Any] = {}
        for key, request in requests.items():
            started = clock()
            error: AnswerError | None = None
            for _ in range(self.settings.max_invalid_answers):
                try:
                    response = await self.send(request, seconds)
                except ElicitationTimeout:
                    await on_fail(key, "timeout", started)
                    raise
                except ClientGone:
                    await on_fail(key, "client_gone", started)
                    raise
                try:
                    out[key] = settle(key, response)
                    break
                except AnswerError as exc:
                    error = exc
            else:
                await on_fail(key, "invalid_answers", started)
                raise error or AnswerError((FieldProblem(key, "invalid_answers"),))
            await on_answer(key, out[key], (clock() - started) * 1000)
        return out


class Rounds(Era):
    """2026-07-28: answers come back with the client's retry; a missing one ends the run."""

    modern = True

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        if self.round is None:
            raise NotInstalled("middleware", "ask() on a 2026-07-28 request needs mcp_elicit.install(server)")
        self.rnd = self.round

    def check_limit(self) -> None:
        """AnswerError once the call has asked `MAX_ASKS_PER_CALL` questions."""
        if self.rnd.cursor >= rounds.MAX_ASKS_PER_CALL:
            raise AnswerError((FieldProblem("", "too_many_questions", f"over {rounds.MAX_ASKS_PER_CALL}"),))

    async def candidate(
        self,
        requests: dict[str, dict[str, Any]],
        reissue: Callable[[], Awaitable[dict[str, dict[str, Any]] | None]] | None = None,
    ) -> Candidate:
        """The answers this run has for the step `requests`; ends the run to ask when it has none
        (with the requests `reissue()` returns, when it returns any)."""
        self.check_limit()
        found = rounds.next_answers(self.rnd, requests)
        if found is None:
            if reissue is not None:
                requests = await reissue() or requests
            raise rounds.pend(self.rnd, requests, self.rnd.cursor - 1)
        return found

    def again(self, candidate: Candidate, requests: dict[str, dict[str, Any]], *, bad: bool) -> BaseException:
        """Ask the same step again (after an invalid answer when `bad`)."""
        return rounds.pend(self.rnd, requests, candidate.index, candidate.bad + (1 if bad else 0))

    async def exchange(
        self,
        requests: dict[str, dict[str, Any]],
        settle: Settle,
        on_fail: OnFail,
        on_answer: OnAnswer,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """The step's settled answers, replayed from the state or fresh from this retry."""
        candidate = await self.candidate(requests)
        try:
            settled = {key: settle(key, response) for key, response in candidate.responses.items()}
        except AnswerError:
            if not candidate.fresh or candidate.bad + 1 >= self.settings.max_invalid_answers:
                for key in requests:
                    await on_fail(key, "invalid_answers", candidate.issued)
                raise
            raise self.again(candidate, requests, bad=True) from None  # M4: ask again
        rounds.record(self.rnd, candidate)
        if candidate.fresh:  # a replayed answer was recorded when it first arrived
            latency = max(0.0, self.settings.clock() - candidate.issued) * 1000
            for key, value in settled.items():
                await on_answer(key, value, latency)
        return settled


def question_key(key: str | None) -> str:
    """The key a question goes out under: the author's own, or `elicitation-<n>` for the n-th."""
    rnd = rounds.current_round()
    return key or f"elicitation-{rnd.cursor if rnd is not None else 0}"


def era_of(ctx: Any) -> Push | Rounds:
    """The strategy for the request behind `ctx`."""
    return Rounds(ctx) if is_modern(sdk.protocol_version(ctx)) else Push(ctx)

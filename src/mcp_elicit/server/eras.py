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
  the question asked again opens with a hint of what was wrong (`core.retry_hints`);
  never after a pushed question the client answered with a JSON-RPC error (ClientRefused);
- that the middleware is installed, in either era (NotInstalled otherwise, logged here: without the
  middleware nothing else would write its line).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final, Protocol

from mcp_elicit.core.revisions import is_modern
from mcp_elicit.errors import (
    AnswerError,
    CapabilityError,
    CapabilityRequired,
    ClientGone,
    ClientRefused,
    ElicitationTimeout,
    FieldProblem,
    NotInstalled,
)
from mcp_elicit.server import rounds, sdk
from mcp_elicit.server.rounds import Candidate, ElicitSettings

__all__ = ["NOT_INSTALLED_DETAIL", "Era", "Push", "Rounds", "era_of", "not_installed", "question_key"]


class Step(Protocol):
    """What `exchange` needs of a step (see `questions._Step`)."""

    @property
    def requests(self) -> dict[str, dict[str, Any]]: ...

    @property
    def digest(self) -> str: ...

    def settle(self, key: str, response: Any) -> tuple[Any, Any]:
        """A fresh response as (the value the tool gets, what the state records); AnswerError
        when it is not valid."""
        ...

    def replay(self, key: str, recorded: Any) -> Any:
        """A recorded response back as the value the tool gets."""
        ...

    def retry(self, key: str, error: AnswerError) -> dict[str, Any]:
        """The request `key` to send again after the invalid answer `error` (with a hint)."""
        ...


OnFail = Callable[[str, str, float], Awaitable[None]]
"""Records a question that ended without an answer: (key, reason, started at)."""
OnAnswer = Callable[[str, Any, float], Awaitable[None]]
"""Records a fresh answer (not one replayed from an earlier round): (key, value, latency in ms)."""


class Era:
    """What both eras share: the context, the settings, the round (when installed)."""

    modern = False

    def __init__(self, ctx: Any, facts: tuple[str | None, frozenset[str]] | None = None) -> None:
        self.ctx = ctx
        self.round = rounds.current_round()
        if self.round is None and sdk.call_of(ctx) is not None:
            raise not_installed(ctx)
        self.settings: ElicitSettings = self.round.settings if self.round is not None else ElicitSettings()
        self.protocol_version, self.declared = facts or facts_of(ctx)

    def check_limit(self) -> None:
        """AnswerError once the call has asked `MAX_ASKS_PER_CALL` questions (counted on the round
        the middleware opened; without it, on 2025-11-25, nothing counts)."""
        if self.round is not None and self.round.cursor >= rounds.MAX_ASKS_PER_CALL:
            raise AnswerError((FieldProblem("", "too_many_questions", f"over {rounds.MAX_ASKS_PER_CALL}"),))

    def need(self, capabilities: Iterable[str]) -> None:
        """Refuse when the client did not declare one of `capabilities` (C1, C2): CapabilityError
        for the tool to handle on 2025-11-25; on 2026-07-28 the whole request is answered with
        -32021 naming it (CapabilityRequired, which tool code does not catch as CapabilityError)."""
        for capability in capabilities:
            if capability not in self.declared:
                if self.modern:
                    raise CapabilityRequired(capability)
                # A session that never saw `initialize` (stateless HTTP) did not fail to declare:
                # its declaration is unknown, and nothing can be pushed on it anyway (no channel).
                known = sdk.capabilities_known(self.ctx)
                raise CapabilityError(capability.removeprefix("elicitation."), channel=known)


class Push(Era):
    """2025-11-25 and older: send each request and wait for its answer."""

    def count_step(self) -> None:
        """Count one step of the call (a question, a gather, a hand-off) on the round the middleware
        opened, as `Rounds` does: AnswerError past `MAX_ASKS_PER_CALL`, and `elicitation-<n>` keys."""
        self.check_limit()
        if self.round is not None:
            self.round.cursor += 1

    async def send(self, request: dict[str, Any], seconds: float) -> dict[str, Any] | None:
        """One pushed request; ElicitationTimeout after `seconds`, ClientGone when the client leaves,
        ClientRefused when it answers with an error."""
        try:  # the timeout rides on the disconnect watch's cancel scope (server/disconnect.py)
            return await sdk.push_request(self.ctx, request, seconds)
        except TimeoutError:
            raise ElicitationTimeout(seconds) from None

    async def exchange(
        self, step: Step, on_fail: OnFail, on_answer: OnAnswer, timeout: float | None = None
    ) -> dict[str, Any]:
        """Each request in turn, asked again after an invalid answer; the settled value per key."""
        self.count_step()
        seconds = self.settings.ask_timeout if timeout is None else timeout
        clock = self.settings.clock
        out: dict[str, Any] = {}
        for key, first in step.requests.items():
            started, request = clock(), first
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
                except ClientRefused:  # not asked again: the client said it cannot take this question
                    await on_fail(key, "client_refused", started)
                    raise
                try:
                    out[key] = step.settle(key, response)[0]
                    break
                except AnswerError as exc:
                    error, request = exc, step.retry(key, exc)  # asked again, saying what was wrong
            else:
                await on_fail(key, "invalid_answers", started)
                raise error or AnswerError((FieldProblem(key, "invalid_answers"),))
            await on_answer(key, out[key], (clock() - started) * 1000)
        return out


class Rounds(Era):
    """2026-07-28: answers come back with the client's retry; a missing one ends the run."""

    modern = True

    def __init__(self, ctx: Any, facts: tuple[str | None, frozenset[str]] | None = None) -> None:
        super().__init__(ctx, facts)
        if self.round is None:  # a direct call outside any request cannot be on 2026-07-28
            raise NotInstalled("middleware", NOT_INSTALLED_DETAIL)
        self.rnd = self.round

    async def candidate(
        self,
        requests: dict[str, dict[str, Any]],
        reissue: Callable[[], Awaitable[dict[str, dict[str, Any]] | None]] | None = None,
        digest: str | None = None,
    ) -> Candidate:
        """The answers this run has for the step `requests`; ends the run to ask when it has none
        (with the requests `reissue()` returns, when it returns any)."""
        self.check_limit()
        found = rounds.next_answers(self.rnd, requests, digest)
        if found is None:
            if reissue is not None:
                fresh = await reissue()
                if fresh is not None:
                    requests, digest = fresh, None
            raise rounds.pend(self.rnd, requests, self.rnd.cursor - 1, digest=digest)
        return found

    def again(
        self,
        candidate: Candidate,
        requests: dict[str, dict[str, Any]],
        *,
        bad: bool,
        digest: str | None = None,
    ) -> BaseException:
        """Ask the same step again (after an invalid answer when `bad`)."""
        return rounds.pend(self.rnd, requests, candidate.index, candidate.bad + (1 if bad else 0), digest)

    async def exchange(
        self, step: Step, on_fail: OnFail, on_answer: OnAnswer, timeout: float | None = None
    ) -> dict[str, Any]:
        """The step's answers: replayed from the state (trusted as recorded), or fresh from this
        retry (checked, then recorded as checked)."""
        candidate = await self.candidate(step.requests, digest=step.digest)
        if not candidate.fresh:
            return {key: step.replay(key, response) for key, response in candidate.responses.items()}
        settled: dict[str, tuple[Any, Any]] = {}
        invalid: dict[str, AnswerError] = {}
        for key, response in candidate.responses.items():
            try:
                settled[key] = step.settle(key, response)
            except AnswerError as exc:
                invalid[key] = exc
        if invalid:
            if candidate.bad + 1 >= self.settings.max_invalid_answers:
                for key in step.requests:
                    await on_fail(key, "invalid_answers", candidate.issued)
                raise next(iter(invalid.values()))
            # M4: the same step again (its digest unchanged), each wrong question saying what was wrong
            again = {
                key: step.retry(key, invalid[key]) if key in invalid else request
                for key, request in step.requests.items()
            }
            raise self.again(candidate, again, bad=True, digest=step.digest) from None
        rounds.record(self.rnd, candidate, {key: kept for key, (_, kept) in settled.items()})
        latency = max(0.0, self.settings.clock() - candidate.issued) * 1000
        for key, (value, _) in settled.items():
            await on_answer(key, value, latency)
        return {key: value for key, (value, _) in settled.items()}


# What the server's log says when a request asks a question on a server without the middleware.
NOT_INSTALLED_DETAIL: Final = (
    "the tool asked a question, but mcp-elicit is not installed on this server: "
    "call mcp_elicit.install(server) once, before the server runs"
)


def not_installed(ctx: Any) -> BaseException:
    """NotInstalled for a request on a server without the middleware, in either era: carried as a
    kit error leaves a tool (a FastMCP server's own error base too, so FastMCP answers with a tool
    error and no traceback) and logged as one WARNING line here, since no middleware will log it.

    Without the middleware a 2025-11-25 push would still work, but nothing would count the call's
    questions, write its consent records or turn a refusal into a tool error: the author learns of
    the missing `install` on the first question, in both eras, not from a refusal in production."""
    flavor: tuple[type[BaseException], ...] = ()
    if type(ctx).__module__.startswith("fastmcp."):  # only FastMCP users have FastMCP installed
        from mcp_elicit.server import sdk_fastmcp

        flavor = sdk_fastmcp.FLAVOR
    token = sdk.flavored(flavor)  # what the middleware would have set for this request
    try:
        carried = sdk.carry(NotInstalled("middleware", NOT_INSTALLED_DETAIL), ctx)
    finally:
        sdk.unflavored(token)
    call = sdk.call_of(ctx)
    params = call.params if call is not None and isinstance(call.params, dict) else {}
    target = str(params.get("name") or params.get("uri") or "")
    sdk.log_refusal(call.method if call is not None else "", target, carried)
    return carried


def question_key(key: str | None) -> str:
    """The key a question goes out under: the author's own, or `elicitation-<n>` for the n-th."""
    rnd = rounds.current_round()
    return key or f"elicitation-{rnd.cursor if rnd is not None else 0}"


def facts_of(ctx: Any) -> tuple[str | None, frozenset[str]]:
    """(protocol version, usable capabilities) of the request behind `ctx`, read once per request:
    every question of a call shares them."""
    rnd = rounds.current_round()
    if rnd is None:
        return sdk.protocol_version(ctx), sdk.declared_capabilities(ctx)
    if rnd.facts is None:
        source = rnd.call if rnd.call is not None else ctx
        rnd.facts = (sdk.protocol_version(source), sdk.declared_capabilities(source))
    return rnd.facts


def era_of(ctx: Any) -> Push | Rounds:
    """The strategy for the request behind `ctx`."""
    facts = facts_of(ctx)
    return Rounds(ctx, facts) if is_modern(facts[0]) else Push(ctx, facts)

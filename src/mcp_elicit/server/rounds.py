"""How `ask` survives the 2026-07-28 multi round-trip flow.

On a 2026-07-28 request the server may not send requests of its own: it ends the call
with an `InputRequiredResult`, and the client retries the same request with the answers
and the `requestState` echoed back. So a handler that asks three questions runs four
times. Each run walks its `ask` calls in order; the state carries every answer recorded
so far, each pinned to a digest of the exact question it answered, so a replayed run gets
the same answers back and a changed question is asked again.

The state is plaintext here. The SDK's `RequestStateBoundary` (installed by `MCPServer`)
seals it with AES-GCM and binds it to the method, the target, a digest of the arguments,
the authenticated principal and an expiry before it leaves; this middleware runs inside
that boundary, so it only ever sees state the server minted. On top of that it enforces
its own expiry (with an injectable clock) and single use (a nonce per state).

Each `ask` (or `gather`) is one step; a step sends one or more keyed input requests.
State, as JSON after the "mcp-elicit/2:" prefix:
    {"a": [[step digest, {key: response}], ...],      answers recorded so far, in order (a form
                                                       answer as its checked values)
     "p": [index, step digest, bad answers, issued at],  the step now outstanding
     "n": nonce, "e": expires-at (seconds since the epoch),
     "h": {key: [hand-off id, url]}}                  URL hand-offs minted so far (see `handoff`)

A fresh answer is taken only for the step the client was last shown: the outstanding step
named by the state, or, on a request that carries no state at all, the first step (a client
may answer a question it already knows the key of; the conformance suite does this). Each
run takes at most one fresh step, so a client cannot answer questions it was never asked.
"""

from __future__ import annotations

import base64
import contextvars
import hashlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_elicit.errors import ElicitError, InvalidRequestState, WrongResponseType
from mcp_elicit.server import sdk
from mcp_elicit.server.replay import MemoryReplayGuard, ReplayGuard

__all__ = [
    "DEFAULT_ASK_TIMEOUT_SECONDS",
    "DEFAULT_STATE_TTL_SECONDS",
    "MAX_ASKS_PER_CALL",
    "MAX_INVALID_ANSWERS",
    "ElicitMiddleware",
    "ElicitSettings",
]

# How long a pushed (2025-11-25) question waits for a person before the tool sees
# ElicitationTimeout: long enough to read and fill a small form, short enough that a
# forgotten prompt does not pin a worker for an hour.
DEFAULT_ASK_TIMEOUT_SECONDS = 300.0
# How long a 2026-07-28 requestState stays valid: the same window as the SDK's default
# sealing TTL, so neither layer outlives the other.
DEFAULT_STATE_TTL_SECONDS = 600.0
# Invalid answers to one question before the tool gets AnswerError instead of asking again;
# stops a broken client from looping forever (C3).
MAX_INVALID_ANSWERS = 3
# Questions one call may ask; bounds the state a client has to carry back and forth.
MAX_ASKS_PER_CALL = 32

# Version 2 records checked form values (not the raw answer), so a state of version 1 is not read.
_PREFIX = "mcp-elicit/2:"


@dataclass
class ElicitSettings:
    """Server-wide knobs; `install()` puts one on a server.

    `audit` is any `mcp_elicit.audit` sink; with one, every question the kit asks (or refuses to
    send) leaves one consent record at `audit_level`, and a sink that cannot write stops the
    tool with AuditWriteError unless `audit_fail_closed` is False. `handoffs` is a
    `mcp_elicit.server.handoffs.Handoffs`: with one, `handoff`/`require` work and `install()`
    mounts their pages.
    """

    ask_timeout: float = DEFAULT_ASK_TIMEOUT_SECONDS
    state_ttl: float = DEFAULT_STATE_TTL_SECONDS
    max_invalid_answers: int = MAX_INVALID_ANSWERS
    clock: Callable[[], float] = time.time
    replay_guard: ReplayGuard = field(default_factory=MemoryReplayGuard)
    audit: Any = None
    audit_fail_closed: bool = True
    handoffs: Any = None


@dataclass
class _Recorded:
    q: str
    responses: dict[str, Any]


@dataclass
class _Outstanding:
    index: int
    q: str
    bad: int
    issued: float


@dataclass
class _Round:
    settings: ElicitSettings
    recorded: list[_Recorded] = field(default_factory=list)
    outstanding: _Outstanding | None = None
    responses: dict[str, Any] = field(default_factory=dict)
    had_state: bool = False
    fresh_taken: bool = False
    cursor: int = 0
    handoffs: dict[str, tuple[str, str]] = field(default_factory=dict)
    # The SDK's request context (cheaper to read than a framework's Context) and, read once per
    # request, its (protocol version, usable capabilities).
    call: Any = None
    facts: tuple[str | None, frozenset[str]] | None = None


_current: contextvars.ContextVar[_Round | None] = contextvars.ContextVar("mcp_elicit_round", default=None)


def question_digest(request: dict[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()[:16]).decode().rstrip("=")


def _decode(raw: str) -> dict[str, Any]:
    try:
        state = json.loads(raw[len(_PREFIX) :])
    except ValueError:
        raise InvalidRequestState from None
    if not isinstance(state, dict) or not isinstance(state.get("a"), list):
        raise InvalidRequestState
    return state


class ElicitMiddleware:
    """Opens a round for every tools/call, prompts/get and resources/read, turns a pending step
    into the round's InputRequiredResult, and an mcp-elicit error that left the handler into its
    refusal (`core.refusals`, one line in the log). `install()` puts it inside the SDK's
    requestState sealing, so it only ever sees state the server minted.

    `flavor`: extra base classes for the errors that leave a tool (see `sdk.carry`).
    `tool_arguments`: run on each handler's result (`tool_arguments.tool_arguments_check`); the refusal it
    returns replaces the result (a tool error naming the arguments at fault).
    """

    def __init__(
        self,
        settings: ElicitSettings,
        flavor: tuple[type[BaseException], ...] = (),
        tool_arguments: Callable[[Any, Any], ElicitError | None] | None = None,
    ) -> None:
        self.settings = settings
        self.flavor = flavor
        self.tool_arguments = tool_arguments

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        if ctx.method not in sdk.CARRIERS:
            return await call_next(ctx)
        flavor = sdk.flavored(self.flavor)
        try:
            params = ctx.params or {}
            rnd = _Round(self.settings, call=ctx)
            raw = params.get("requestState")
            if isinstance(raw, str) and raw.startswith(_PREFIX):
                await self._restore(rnd, _decode(raw))
                rnd.had_state = True
            responses = params.get("inputResponses")
            rnd.responses = dict(responses) if isinstance(responses, dict) else {}
            token = _current.set(rnd)
            try:
                result = await call_next(ctx)
            finally:
                _current.reset(token)
            refused = None if self.tool_arguments is None else self.tool_arguments(ctx, result)
            if refused is not None:
                raise refused
            return result
        except ElicitError as exc:
            return sdk.refusal_result(ctx, exc)
        except Exception as exc:
            pending = sdk.pending_result(exc)
            if pending is None:
                raise
            return pending
        finally:
            sdk.unflavored(flavor)

    async def _restore(self, rnd: _Round, state: dict[str, Any]) -> None:
        now = self.settings.clock()
        expires, nonce = state.get("e"), state.get("n")
        if not isinstance(expires, int | float) or not now < expires or not isinstance(nonce, str):
            raise InvalidRequestState
        if not await self.settings.replay_guard.consume(nonce, float(expires), now):
            raise InvalidRequestState
        try:
            rnd.recorded = [_Recorded(str(q), dict(r)) for q, r in state["a"]]
            p = state.get("p")
            rnd.outstanding = _Outstanding(int(p[0]), str(p[1]), int(p[2]), float(p[3])) if p else None
            rnd.handoffs = {str(k): (str(v[0]), str(v[1])) for k, v in dict(state.get("h") or {}).items()}
        except (TypeError, ValueError, IndexError, KeyError):
            raise InvalidRequestState from None


def current_round() -> _Round | None:
    return _current.get()


def current_settings() -> ElicitSettings:
    rnd = _current.get()
    return rnd.settings if rnd is not None else ElicitSettings()


def _encode(rnd: _Round, outstanding: _Outstanding) -> str:
    settings = rnd.settings
    state: dict[str, Any] = {
        "a": [[r.q, r.responses] for r in rnd.recorded],
        "p": [outstanding.index, outstanding.q, outstanding.bad, outstanding.issued],
        "n": secrets.token_urlsafe(16),
        "e": settings.clock() + settings.state_ttl,
    }
    if rnd.handoffs:
        state["h"] = {k: list(v) for k, v in rnd.handoffs.items()}
    return _PREFIX + json.dumps(state, separators=(",", ":"), ensure_ascii=True)


@dataclass(frozen=True)
class Candidate:
    """The responses to the step at `index`, keyed like its requests: replayed from state or fresh."""

    index: int
    q: str
    responses: dict[str, Any]
    fresh: bool
    bad: int
    issued: float = 0.0


# What marks a result as answering each kind of input request, and what marks another kind: the
# SDK parses every inputResponses entry into whichever result model fits, so an elicitation result
# can arrive under a sampling request's key. Checked on plain dicts, keeping SDK types in sdk.py.
_RESULT_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "elicitation/create": (frozenset({"action"}), frozenset({"roots", "model", "role"})),
    "sampling/createMessage": (frozenset({"role", "content", "model"}), frozenset({"action", "roots"})),
    "roots/list": (frozenset({"roots"}), frozenset({"action", "model", "role"})),
}


def _answers(method: Any, response: dict[str, Any]) -> bool:
    """Is `response` a result of the kind `method` asks for?"""
    keys = _RESULT_KEYS.get(method)
    if keys is None:
        return False
    needed, foreign = keys
    return needed <= response.keys() and not (foreign & response.keys())


def _as_dict(raw: Any) -> Any:
    return None if raw is None else sdk.response_as_dict(raw)


def next_answers(
    rnd: _Round, requests: dict[str, dict[str, Any]], digest: str | None = None
) -> Candidate | None:
    """The answers this run has for its next step, or None when the step must be asked.
    `digest` is `question_digest(requests)` when the caller has it already."""
    index = rnd.cursor
    rnd.cursor += 1
    q = digest or question_digest(requests)
    if index < len(rnd.recorded):
        rec = rnd.recorded[index]
        if rec.q == q:
            return Candidate(index, q, rec.responses, fresh=False, bad=0)
        del rnd.recorded[index:]  # the handler asks something else now: later answers are void
        return None
    out = rnd.outstanding
    if rnd.fresh_taken or index != len(rnd.recorded):
        return None
    if out is not None:
        if out.index != index or out.q != q:
            return None
    elif rnd.had_state or index != 0:
        return None
    responses = {key: _as_dict(rnd.responses.get(key)) for key in requests}
    if any(r is None for r in responses.values()):
        return None  # M4: a missing answer is asked for again, not an error
    for key, request in requests.items():
        if not _answers(request.get("method"), responses[key]):
            raise WrongResponseType(key, str(request.get("method")))
    rnd.fresh_taken = True
    if out is None:  # answered without ever being asked (no state): no latency to speak of
        return Candidate(index, q, responses, fresh=True, bad=0, issued=rnd.settings.clock())
    return Candidate(index, q, responses, fresh=True, bad=out.bad, issued=out.issued)


def record(rnd: _Round, candidate: Candidate, responses: dict[str, Any] | None = None) -> None:
    """Keep a fresh step's answers in the state (`responses`: what to keep instead of the raw ones)."""
    if candidate.fresh:
        rnd.recorded.append(_Recorded(candidate.q, candidate.responses if responses is None else responses))
        rnd.outstanding = None


def pend(
    rnd: _Round, requests: dict[str, dict[str, Any]], index: int, bad: int = 0, digest: str | None = None
) -> BaseException:
    """End this run: send `requests` (the step at `index`) and carry the answers so far."""
    del rnd.recorded[index:]
    state = _encode(rnd, _Outstanding(index, digest or question_digest(requests), bad, rnd.settings.clock()))
    return sdk.input_pending(requests, state)


def handoff_slot(rnd: _Round, key: str) -> tuple[str, str] | None:
    """The (hand-off id, url) minted under `key` in an earlier round of this call, if any."""
    return rnd.handoffs.get(key)


def keep_handoff(rnd: _Round, key: str, handoff_id: str, url: str) -> None:
    """Carry a minted hand-off in the state, so the retry asks about the very same URL."""
    rnd.handoffs[key] = (handoff_id, url)

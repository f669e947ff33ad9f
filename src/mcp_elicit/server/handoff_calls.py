"""URL hand-offs, the calls a tool makes: `handoff`, `require` and `credential`, on both eras.

See `mcp_elicit.server.handoffs` for what a hand-off is and how its link, pages and record work;
this module runs one through the era strategy (`eras`): pushed and awaited on 2025-11-25, carried
in the sealed requestState and re-checked on each retry on 2026-07-28.
"""

from __future__ import annotations

import dataclasses
import hmac
from typing import Any

import anyio

from mcp_elicit.core.actions import Action
from mcp_elicit.errors import (
    AnswerError,
    ClientGone,
    ClientRefused,
    ElicitationTimeout,
    FieldProblem,
    HandoffNotCompleted,
    NotInstalled,
)
from mcp_elicit.server import audit, rounds, sdk
from mcp_elicit.server.eras import Era, Push, Rounds, era_of, question_key
from mcp_elicit.server.flows import HandoffFlow
from mcp_elicit.server.handoffs import _OUTCOME, NOTIFY_TIMEOUT_SECONDS, HandoffResult, Handoffs
from mcp_elicit.server.identity import Principal
from mcp_elicit.server.stores import CANCELLED, DONE, HandoffRecord
from mcp_elicit.server.vault import Secret

__all__ = ["credential", "handoff", "require"]


def _handoffs(era: Era) -> Handoffs:
    hs = era.settings.handoffs
    if not isinstance(hs, Handoffs):
        raise NotInstalled(
            "handoffs", "URL hand-offs need install(server, ElicitSettings(handoffs=Handoffs(...)))"
        )
    return hs


async def _audit(
    ctx: Any, era: Era, message: str, action: str, reason: str = "", decided_by: str = "person"
) -> None:
    """One consent record per hand-off outcome (mode "url"; no URL, no content: nothing secret)."""
    await audit.record(ctx, era.settings, action, decided_by, message, reason=reason, mode="url")


@sdk.carrying
async def handoff(
    ctx: Any,
    message: str,
    flow: HandoffFlow,
    *,
    key: str | None = None,
    timeout: float | None = None,
) -> HandoffResult:
    """Send the person to `flow`'s page on this server and return how it ended.

    accept: the page completed (the credential is in the vault); decline: the person refused
    (in the client or on the page); cancel: dismissed, failed or expired. Raises CapabilityError
    when the client cannot do URL mode (on 2026-07-28 the client gets -32021); IdentityRequired
    when the request names no person; ElicitationTimeout when a 2025-11-25 page is not completed
    within `timeout` (default `Handoffs.wait_timeout`).
    """
    era = era_of(ctx)
    hs = _handoffs(era)
    era.need(["elicitation.url"])
    person = hs.identity.of_request(ctx)
    if isinstance(era, Rounds):
        return await _in_rounds(era, hs, person, message, flow, question_key(key))
    return await _by_push(era, hs, person, message, flow, timeout)


@sdk.carrying
async def require(
    ctx: Any,
    flow: HandoffFlow,
    *,
    message: str | None = None,
    fail_fast: bool = False,
    key: str | None = None,
    timeout: float | None = None,
) -> None:
    """Return once the calling person has a credential for `flow` in the vault; hand off if not.

    `fail_fast=True` (2025-11-25 only): instead of waiting inside the tool, fail the call with
    -32042 listing the URL; the client retries after completion. On 2026-07-28 it makes no
    difference (the round trip already ends the call). Raises HandoffNotCompleted when the
    person declines or cancels.
    """
    era = era_of(ctx)
    hs = _handoffs(era)
    person = hs.identity.of_request(ctx)
    if await flow.satisfied(hs.vault, person.key):
        return
    era.need(["elicitation.url"])
    text = message or flow.default_message()
    if fail_fast and isinstance(era, Push):
        await hs.supersede(person, flow)  # the client never says when the person refused the last one
        record = await hs.mint(ctx, person, flow, text)
        hs.watch(record, sdk.session_of(ctx))
        raise sdk.url_elicitation_required(
            [{"mode": "url", "message": text, "url": record.url, "elicitationId": record.id}]
        )
    result = await handoff(ctx, text, flow, key=key, timeout=timeout)
    if not result.completed:
        raise HandoffNotCompleted(result.action, result.handoff_id, flow.kind)


@sdk.carrying
async def credential(ctx: Any, provider: str) -> Secret | None:
    """The calling person's credential for `provider` from the vault, for the server's own use.

    Never return it (or anything derived from it that reveals it) to the client (U10).
    """
    hs = _handoffs(era_of(ctx))
    return await hs.vault.get(hs.identity.of_request(ctx).key, provider)


async def _by_push(
    era: Push,
    hs: Handoffs,
    person: Principal,
    message: str,
    flow: HandoffFlow,
    timeout: float | None,
) -> HandoffResult:
    ctx = era.ctx
    era.count_step()
    record = await hs.mint(ctx, person, flow, message)
    try:
        response = await era.send(sdk.url_request(message, record.url, record.id), era.settings.ask_timeout)
    except ElicitationTimeout:
        await hs.close(record.id)
        await _audit(ctx, era, message, "cancel", "timeout", "timeout")
        raise
    except ClientGone:
        await hs.close(record.id)
        raise
    except ClientRefused:
        await hs.close(record.id)
        await _audit(ctx, era, message, "error", "client_refused", "error")
        raise
    action = response.get("action") if isinstance(response, dict) else None
    if action != "accept":
        final = await hs.close(record.id)
        if final is None or final.status != DONE:  # the page may have finished anyway
            outcome: Action = "decline" if action == "decline" else "cancel"
            await _audit(ctx, era, message, outcome)
            return HandoffResult(outcome, record.id)
    seconds = hs.wait_timeout if timeout is None else timeout
    remaining = max(0.0, min(seconds, record.expires_at - hs.clock()))
    # The person agreed to open the page and may be on it. The client going (or this server
    # stopping, which ends the call's stream the same way) does not undo that, any more than a
    # call the client cancels does: the link lives on until it expires, so a page finished now
    # still puts the credential in the vault (on any replica, after a restart with shared state)
    # and the next call finds it there. Only a refusal, a timeout or the expiry kills it.
    final = await sdk.run_watching(ctx, lambda: hs.store.wait(record.id, remaining))
    if final is None:
        await hs.close(record.id)
        await _audit(ctx, era, message, "cancel", "timeout", "timeout")
        raise ElicitationTimeout(seconds)
    if final.status != CANCELLED:
        with anyio.move_on_after(NOTIFY_TIMEOUT_SECONDS):
            await sdk.send_elicit_complete(sdk.session_of(ctx), record.id, sdk.request_id(ctx))
    outcome = _OUTCOME[final.status]
    await _audit(ctx, era, message, outcome)
    return HandoffResult(outcome, record.id)


async def _hold(era: Rounds, hs: Handoffs, record: HandoffRecord) -> HandoffRecord | None:
    """Wait (at most `hs.hold` seconds, never past the link's expiry) for a page the person is still
    on; the finished record, or None when it is not done by then. ClientGone if the client leaves."""
    seconds = min(hs.hold, max(0.0, record.expires_at - hs.clock()))
    if seconds <= 0:
        return None
    final: HandoffRecord | None = await sdk.run_watching(era.ctx, lambda: hs.store.wait(record.id, seconds))
    return final


async def _in_rounds(
    era: Rounds,
    hs: Handoffs,
    person: Principal,
    message: str,
    flow: HandoffFlow,
    name: str,
) -> HandoffResult:
    ctx, rnd = era.ctx, era.rnd
    era.check_limit()
    record: HandoffRecord | None = None
    slot = rounds.handoff_slot(rnd, name)
    if slot is not None:
        record = await hs.store.get(slot[0])
        if record is not None and not hmac.compare_digest(record.user, person.key):
            record, slot = None, None  # never reuse someone else's hand-off
    if slot is None:
        # A new call, not a retry of this one: a client that dropped an earlier call after its URL
        # request never says so, and its never-opened link would hold a slot of the per-user bound.
        await hs.supersede(person, flow)
        record = await hs.mint(ctx, person, flow, message)
        slot = (record.id, record.url)
        rounds.keep_handoff(rnd, name, *slot)
    hid, url = slot
    requests = {name: sdk.url_request(message, url, None)}

    async def reissue() -> dict[str, dict[str, Any]] | None:
        """A fresh link when the one on record is gone or expired: never send anyone to a dead page."""
        if record is not None and not (record.open and record.expired(hs.clock())):
            return None
        fresh = await hs.mint(ctx, person, flow, message)
        rounds.keep_handoff(rnd, name, fresh.id, fresh.url)
        return {name: sdk.url_request(message, fresh.url, None)}

    candidate = await era.candidate(requests, reissue)
    response = candidate.responses.get(name)
    action = response.get("action") if isinstance(response, dict) else None
    if not candidate.fresh:  # recorded in an earlier round, when the store said so
        return HandoffResult(action if action in ("accept", "decline") else "cancel", hid)
    if action not in ("accept", "decline", "cancel"):
        if candidate.bad + 1 >= era.settings.max_invalid_answers:
            raise AnswerError((FieldProblem(name, "action", "not accept, decline or cancel"),))
        raise era.again(candidate, requests, bad=True)
    if action == "accept":
        final = await hs.store.get(hid)
        if final is not None and final.open and not final.expired(hs.clock()):
            final = await _hold(era, hs, final)
            if final is None:
                raise era.again(candidate, requests, bad=False)  # not done yet: ask again
        if final is not None and final.open:
            final = await hs.close(hid)
        outcome: Action = _OUTCOME[final.status] if final is not None and not final.open else "cancel"
    else:
        final = await hs.close(hid)
        outcome = "accept" if final is not None and final.status == DONE else action
    rounds.record(rnd, dataclasses.replace(candidate, responses={name: {"action": outcome}}))
    await _audit(ctx, era, message, outcome)
    return HandoffResult(outcome, hid)

"""URL hand-offs: send the person to a page on this server, bound to them, on both protocol eras.

A tool writes one code path:

    await require(ctx, ApiKeyHandoff(provider="github"))      # returns once the key is in the vault
    key = await credential(ctx, "github")                       # Secret; .reveal() server-side only

or, one level lower, `result = await handoff(ctx, message, flow)` with `result.action` one of
accept (the out-of-band step is done), decline or cancel.

What happens underneath (spec U1–U10, C1–C2, M1–M4):

- A hand-off id (HANDOFF_ID_BYTES random bytes) is minted and stored with the user it is for
  (`identity`), the client, the flow and an expiry. The URL is on this server's own origin:
  `public_base_url` when configured, else the origin of the HTTP request that carried the
  tool call, but only when its Host is loopback or listed in `allowed_hosts` (a client-supplied
  Host never builds a link otherwise). The path carries a signed token (hand-off id and expiry;
  no user data, U5) and the URL must pass this project's own URL checks.
- 2025-11-25: `elicitation/create` with `mode: "url"` and `elicitationId` (the hand-off id).
  After accept, the tool waits until the page completes, then sends
  `notifications/elicitation/complete` to the session that started it (U6). With
  `require(..., fail_fast=True)` the tool fails at once with -32042 listing the URL (U7), and
  the notification goes to that session when the page completes; the client then retries.
- 2026-07-28: the URL request rides in an InputRequiredResult (no `elicitationId`, never
  -32042, never the notification). The hand-off id travels in the sealed requestState; when the
  client retries with accept the server checks its store: done → the step is recorded and the
  tool goes on; not done → the same URL request again, until the hand-off expires (U8). An
  accept is never recorded before the store says done.
- A client that did not declare `elicitation.url` never gets a URL request: CapabilityError("url")
  in the tool on 2025-11-25, -32021 with `{"elicitation": {"url": {}}}` on 2026-07-28 (C1, C2).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.abc
from itsdangerous import BadSignature, URLSafeSerializer

from mcp_elicit.core.limits import MAX_MESSAGE_CHARS
from mcp_elicit.core.urls import check_url
from mcp_elicit.errors import (
    AnswerError,
    ClientGone,
    ConfigError,
    ElicitationTimeout,
    FieldProblem,
    FormDefinitionError,
    HandoffNotCompleted,
    NotInstalled,
)
from mcp_elicit.server import audit, rounds, sdk
from mcp_elicit.server.eras import Era, Push, Rounds, era_of
from mcp_elicit.server.flows import HandoffFlow
from mcp_elicit.server.identity import IdentityPolicy, Principal, is_loopback_host
from mcp_elicit.server.stores import (
    CANCELLED,
    DECLINED,
    DONE,
    FAILED,
    HandoffRecord,
    HandoffStore,
    MemoryHandoffStore,
)
from mcp_elicit.server.vault import Secret, TokenVault

__all__ = [
    "DEFAULT_HANDOFF_HOLD_SECONDS",
    "DEFAULT_HANDOFF_TTL_SECONDS",
    "DEFAULT_HANDOFF_WAIT_SECONDS",
    "DEFAULT_PATH_PREFIX",
    "HANDOFF_ID_BYTES",
    "MAX_WATCHED_HANDOFFS",
    "MIN_SECRET_BYTES",
    "NOTIFY_TIMEOUT_SECONDS",
    "HandoffResult",
    "Handoffs",
    "credential",
    "handoff",
    "require",
]

logger = logging.getLogger("mcp_elicit.server.handoffs")

# How long a hand-off link stays usable. Ten minutes is enough to sign in at a provider and
# paste a key, and matches the default requestState lifetime so neither outlives the other.
DEFAULT_HANDOFF_TTL_SECONDS = 600.0
# How long a 2025-11-25 tool waits after accept for the page to complete (never beyond the
# hand-off's own expiry).
DEFAULT_HANDOFF_WAIT_SECONDS = 600.0
# Random bytes in a hand-off id (and elicitationId): 192 bits, unguessable.
HANDOFF_ID_BYTES = 24
# Signing key length floor for links and CSRF tokens: HMAC-SHA256 wants at least 32 bytes.
MIN_SECRET_BYTES = 32
# Hand-offs one process watches at once to deliver a completion notification after -32042;
# each watcher lives at most until its hand-off expires.
MAX_WATCHED_HANDOFFS = 1_000
# How long a 2026-07-28 retry that accepts a page still in progress is held open, waiting for the
# page to complete, before the same URL request goes back. Holding (instead of answering at once)
# lets clients with a small round limit (the SDK's and FastMCP's default is 10) finish a page that
# takes a person minutes; it stays under the 30 s an HTTP client commonly waits for a response.
DEFAULT_HANDOFF_HOLD_SECONDS = 25.0
# How long sending one completion notification may take before it is given up.
NOTIFY_TIMEOUT_SECONDS = 5.0
# Where the pages live on the server's HTTP app.
DEFAULT_PATH_PREFIX = "/elicit"

_LINK_SALT = "mcp-elicit/handoff-link/1"
_CSRF_LABEL = b"mcp-elicit/handoff-csrf/1\x00"

Action = Literal["accept", "decline", "cancel"]
_OUTCOME: dict[str, Action] = {DONE: "accept", DECLINED: "decline", FAILED: "cancel", CANCELLED: "cancel"}


@dataclass(frozen=True, slots=True)
class HandoffResult:
    """How a hand-off ended: accept means the out-of-band step is done (not merely consented to)."""

    action: Action
    handoff_id: str

    @property
    def completed(self) -> bool:
        return self.action == "accept"


def _check_base_url(url: str) -> str:
    verdict = check_url(url)
    if verdict.verdict == "block" or verdict.canonical is None:
        reasons = ", ".join(verdict.reasons)
        raise ConfigError("public_base_url", f"not an https (or loopback http) URL: {reasons}")
    if "?" in verdict.canonical or "#" in verdict.canonical:
        raise ConfigError("public_base_url", "must not have a query or fragment")
    return verdict.canonical.rstrip("/")


@dataclass(eq=False)
class Handoffs:
    """Everything URL hand-offs need on one server (every replica gets the same settings).

    `secret` signs links and CSRF tokens: share it across replicas (a random per-process default
    only suits a single process). `vault` keeps what the flows obtain. `store` keeps open
    hand-offs (memory by default; `RedisHandoffStore` for replicas). `identity` says whom a
    hand-off is for. `flows` are the flows the pages can serve; others are added on first use,
    which is only enough for a single process.
    """

    vault: TokenVault
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(MIN_SECRET_BYTES), repr=False)
    store: HandoffStore = field(default_factory=MemoryHandoffStore)
    identity: IdentityPolicy = field(default_factory=IdentityPolicy)
    flows: Sequence[HandoffFlow] = ()
    public_base_url: str | None = None
    allowed_hosts: Sequence[str] = ()
    path_prefix: str = DEFAULT_PATH_PREFIX
    ttl: float = DEFAULT_HANDOFF_TTL_SECONDS
    wait_timeout: float = DEFAULT_HANDOFF_WAIT_SECONDS
    hold: float = DEFAULT_HANDOFF_HOLD_SECONDS
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        if isinstance(self.secret, str):
            self.secret = self.secret.encode()
        if len(self.secret) < MIN_SECRET_BYTES:
            raise ConfigError("secret", f"at least {MIN_SECRET_BYTES} bytes")
        if self.public_base_url is not None:
            self.public_base_url = _check_base_url(self.public_base_url)
        if not self.path_prefix.startswith("/") or self.path_prefix.endswith("/"):
            raise ConfigError("path_prefix", "must start with '/' and not end with '/'")
        self.allowed_hosts = tuple(h.lower() for h in self.allowed_hosts)
        self._links = URLSafeSerializer(
            self.secret, salt=_LINK_SALT, signer_kwargs={"digest_method": hashlib.sha256}
        )
        self._registry: dict[str, HandoffFlow] = {}
        for flow in self.flows:
            self.register(flow)
        self._groups: list[anyio.abc.TaskGroup] = []
        self._watched = 0

    # -- flows ---------------------------------------------------------------------------------

    def register(self, flow: HandoffFlow) -> HandoffFlow:
        """Make `flow` servable by the pages; the first flow registered under a key wins."""
        return self._registry.setdefault(flow.key, flow)

    def flow(self, key: str) -> HandoffFlow | None:
        return self._registry.get(key)

    # -- links, markers, CSRF ------------------------------------------------------------------

    def base_url(self, ctx: Any | None) -> str:
        """This server's origin for links (see the module docstring for the rule)."""
        if self.public_base_url is not None:
            return self.public_base_url
        request = sdk.http_request(ctx) if ctx is not None else None
        if request is None:
            raise ConfigError("public_base_url", "needed when the MCP request does not come over HTTP")
        host = (request.url.hostname or "").lower()
        if not (is_loopback_host(host) or host in self.allowed_hosts):
            raise ConfigError("allowed_hosts", "the request's Host may not be used to build links")
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return _check_base_url(f"{request.url.scheme}://{request.url.netloc}{root}")

    def read_link(self, token: str) -> tuple[str, float] | None:
        """(hand-off id, expiry) from a link token, or None when it was not signed by us."""
        try:
            hid, expires = self._links.loads(token)
        except (BadSignature, ValueError, TypeError):
            return None
        if not isinstance(hid, str) or not isinstance(expires, int | float):
            return None
        return hid, float(expires)

    def csrf_token(self, handoff_id: str, marker: str) -> str:
        """The form token: an HMAC of the hand-off and its browser marker (so only that browser has it)."""
        mac = hmac.new(self.secret, _CSRF_LABEL + f"{handoff_id}\x00{marker}".encode(), hashlib.sha256)
        return mac.hexdigest()

    # -- records -------------------------------------------------------------------------------

    async def mint(
        self, ctx: Any | None, person: Principal, flow: HandoffFlow, message: str
    ) -> HandoffRecord:
        """Create and store a hand-off for `person`; its `url` is what the client is sent."""
        if len(message) > MAX_MESSAGE_CHARS:
            raise FormDefinitionError("", "message", f"longer than {MAX_MESSAGE_CHARS} characters")
        flow = self.register(flow)
        base = self.base_url(ctx) + self.path_prefix
        now = self.clock()
        hid = secrets.token_urlsafe(HANDOFF_ID_BYTES)
        expires = now + self.ttl
        url = f"{base}/start/{self._links.dumps([hid, expires])}"
        if check_url(url).verdict == "block":
            raise ConfigError("public_base_url", "hand-off links on this origin fail the URL checks")
        record = HandoffRecord(
            id=hid,
            user=person.key,
            client_id=person.client_id,
            flow=flow.key,
            message=message,
            url=url,
            base=base,
            created_at=now,
            expires_at=expires,
        )
        await self.store.create(record, now)
        logger.info("hand-off %s minted for flow %s", hid, flow.key)
        return record

    async def close(self, handoff_id: str, status: str = CANCELLED) -> HandoffRecord | None:
        """Move an open hand-off to `status` (its link dies); the record as it ends up."""
        for _ in range(3):  # the page may be moving it at the same moment
            record = await self.store.get(handoff_id)
            if record is None or not record.open:
                return record
            if await self.store.swap(dataclasses.replace(record, status=status), expect=record.status):
                return await self.store.get(handoff_id)
        return await self.store.get(handoff_id)

    # -- completion relay (2025-11-25, after -32042) -------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the completion relay for as long as the server runs (installed on its lifespan)."""
        async with anyio.create_task_group() as tg:
            self._groups.append(tg)
            try:
                yield
            finally:
                self._groups.remove(tg)
                tg.cancel_scope.cancel()

    def watch(self, record: HandoffRecord, session: Any) -> bool:
        """Send `notifications/elicitation/complete` to `session` when `record` completes."""
        if not self._groups or self._watched >= MAX_WATCHED_HANDOFFS:
            logger.warning("hand-off %s: no completion relay; the client must retry on its own", record.id)
            return False
        self._watched += 1
        remaining = max(0.0, record.expires_at - self.clock())
        self._groups[-1].start_soon(self._relay, record.id, remaining, session)
        return True

    async def _relay(self, handoff_id: str, timeout: float, session: Any) -> None:
        try:
            final = await self.store.wait(handoff_id, timeout)
            if final is not None and final.status in (DONE, DECLINED, FAILED):
                with anyio.move_on_after(NOTIFY_TIMEOUT_SECONDS):
                    await sdk.send_elicit_complete(session, handoff_id)
        except Exception:  # a gone session or a store hiccup must not take the relay down
            logger.warning("hand-off %s: completion notification not delivered", handoff_id, exc_info=True)
        finally:
            self._watched -= 1


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
    await audit.record(
        ctx,
        era.settings,
        action=action,
        decided_by=decided_by,
        message=message,
        requested_schema=None,
        reason=reason,
        mode="url",
    )


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
        return await _in_rounds(era, hs, person, message, flow, era.key(key))
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
        record = await hs.mint(ctx, person, flow, text)
        hs.watch(record, sdk.session_of(ctx))
        raise sdk.url_elicitation_required(
            [{"mode": "url", "message": text, "url": record.url, "elicitationId": record.id}]
        )
    result = await handoff(ctx, text, flow, key=key, timeout=timeout)
    if not result.completed:
        raise HandoffNotCompleted(result.action, result.handoff_id)


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
    action = response.get("action") if isinstance(response, dict) else None
    if action != "accept":
        final = await hs.close(record.id)
        if final is None or final.status != DONE:  # the page may have finished anyway
            outcome: Action = "decline" if action == "decline" else "cancel"
            await _audit(ctx, era, message, outcome)
            return HandoffResult(outcome, record.id)
    seconds = hs.wait_timeout if timeout is None else timeout
    remaining = max(0.0, min(seconds, record.expires_at - hs.clock()))
    try:
        final = await sdk.run_watching(ctx, lambda: hs.store.wait(record.id, remaining))
    except ClientGone:
        await hs.close(record.id)
        raise
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

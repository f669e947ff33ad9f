"""URL hand-offs: send the person to a page on this server, bound to them, on both protocol eras.

The calls a tool makes live in `handoff_calls`; this module holds what they share: the settings
(`Handoffs`), links, CSRF tokens, records and the completion relay. A tool writes one code path:

    await require(ctx, ApiKeyHandoff(provider="github"))      # returns once the key is in the vault
    key = await credential(ctx, "github")                       # Secret; .reveal()["value"] server-side only

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
from typing import Any

import anyio
import anyio.abc
from itsdangerous import BadSignature, URLSafeSerializer

from mcp_elicit.core.actions import Action
from mcp_elicit.core.limits import MAX_MESSAGE_CHARS
from mcp_elicit.core.urls import check_url
from mcp_elicit.errors import (
    ConfigError,
    FormDefinitionError,
)
from mcp_elicit.server import sdk
from mcp_elicit.server.flows import HandoffFlow
from mcp_elicit.server.identity import IdentityPolicy, Principal, is_loopback_host
from mcp_elicit.server.loopback import parse_listen
from mcp_elicit.server.stores import (
    CANCELLED,
    DECLINED,
    DONE,
    FAILED,
    PENDING,
    HandoffRecord,
    HandoffStore,
    MemoryHandoffStore,
)
from mcp_elicit.server.vault import TokenVault

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
    which is only enough for a single process. `pages_listen` ("127.0.0.1:0"): also serve the
    pages on the server's own loopback listener, and build links on it when a request does not
    come over HTTP (a stdio server; see `loopback`). `hold`: see DEFAULT_HANDOFF_HOLD_SECONDS.
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
    pages_listen: str | None = None
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        if isinstance(self.secret, str):
            self.secret = self.secret.encode()
        if len(self.secret) < MIN_SECRET_BYTES:
            raise ConfigError("secret", f"at least {MIN_SECRET_BYTES} bytes")
        if self.public_base_url is not None:
            self.public_base_url = _check_base_url(self.public_base_url)
        if self.pages_listen is not None:
            parse_listen(self.pages_listen)
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
        self.loopback_origin: str | None = None  # set while the loopback listener runs

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
            if self.loopback_origin is not None:
                return self.loopback_origin
            raise ConfigError(
                "public_base_url", "needed when the MCP request does not come over HTTP (or set pages_listen)"
            )
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

    async def supersede(self, person: Principal, flow: HandoffFlow) -> int:
        """Cancel `person`'s never-opened hand-offs for `flow`; how many. The server is never told
        that the person declined a -32042 page in the client (2025-11-25) nor that a client dropped
        a call after its URL request (2026-07-28), so without this each such call would hold one of
        the person's `MAX_OPEN_HANDOFFS_PER_USER` slots until it expired, and a few would lock the
        person out of every hand-off. Opened pages, other flows and other people are left alone."""
        open_ids = getattr(self.store, "open_ids", None)
        if open_ids is None:  # a store written before `open_ids` was asked of stores: as before
            return 0
        cancelled = 0
        for handoff_id in await open_ids(person.key, self.clock()):
            record = await self.store.get(handoff_id)
            if record is None or record.flow != flow.key or record.status != PENDING:
                continue
            if await self.store.swap(dataclasses.replace(record, status=CANCELLED), expect=PENDING):
                cancelled += 1
                logger.info("hand-off %s superseded by a new link for flow %s", handoff_id, flow.key)
        return cancelled

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

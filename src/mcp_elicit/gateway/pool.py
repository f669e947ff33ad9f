"""One user's connections to the upstream servers, each with its own client pipeline.

A pool runs in a task of its own (the SDK's client contexts must be entered and left by the same
task) and holds every upstream connection open until the gateway stops. An upstream that fails to
start is logged in one line and left out; the others serve on.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio

from mcp_elicit.audit.base import AuditSink
from mcp_elicit.client.audit import AuditTrail
from mcp_elicit.client.connection import ElicitClient, ServerSpec
from mcp_elicit.client.pipeline import Pipeline
from mcp_elicit.client.sdk_transport import Spawned, StdioServerParameters, noting_spawns
from mcp_elicit.client.ui_protocol import UserInterface
from mcp_elicit.core.consent import ClientIdentity
from mcp_elicit.core.gateway_names import offered_names
from mcp_elicit.core.policy import Policy, PolicyState
from mcp_elicit.core.uri_templates import template_matches
from mcp_elicit.gateway.config import GatewayConfig, Upstream
from mcp_elicit.gateway.failures import StderrTail, credentials_refused, failure_reason, status_reason
from mcp_elicit.gateway.relay import CallBook, ConcurrentAsk, Pending, RelayUI
from mcp_elicit.gateway.urls import RelayUrlMode

__all__ = ["UPSTREAM_START_TIMEOUT_SECONDS", "Pool", "credentials_refused", "failure_reason", "status_reason"]

logger = logging.getLogger("mcp_elicit.gateway")

# How long a first listing waits for the upstreams to start; a slower one joins later.
UPSTREAM_START_TIMEOUT_SECONDS: Final = 30.0
GATEWAY_CLIENT: Final = "mcp-elicit-gateway"


class Pool:
    """The upstream connections of one user."""

    def __init__(
        self,
        config: GatewayConfig,
        user: str,
        *,
        policy: Policy | None = None,
        audit: AuditSink | None = None,
        browser: UserInterface | None = None,
        target: Callable[[Upstream], Any] | None = None,
    ) -> None:
        self.config = config
        self.user = user
        self.policy = policy
        self.policy_state = PolicyState() if policy is not None else None
        self.audit = audit
        self.browser = browser
        self._target = target or _target
        self.clients: dict[str, ElicitClient] = {}
        self.pending = Pending()  # one budget of open questions for the user, across upstreams
        self.books: dict[str, CallBook] = {u.name: CallBook(self.pending) for u in config.upstreams}
        self.tools: dict[str, list[Any]] = {}
        self.prompts: dict[str, list[Any]] = {}
        self.resources: dict[str, list[Any]] = {}
        self.templates: dict[str, list[Any]] = {}  # resource templates
        self.failed: dict[str, str] = {}
        self._offered: dict[int, tuple[Any, dict[str, tuple[str, Any]]]] = {}
        self.settled = anyio.Event()
        self.timed_out = False  # the first listing went on without the upstreams still starting
        self._stop = anyio.Event()
        self._connecting: dict[str, anyio.CancelScope] = {}

    async def run(self) -> None:
        """Hold every upstream open until `stop`; returns when all are closed."""
        async with anyio.create_task_group() as tg:
            for upstream in self.config.upstreams:
                tg.start_soon(self._hold, upstream)

    def stop(self) -> None:
        self._stop.set()
        for scope in self._connecting.values():  # hung in the handshake: nothing else ends them
            scope.cancel()

    async def wait_settled(self) -> None:
        if self.settled.is_set():  # every call after the first: no timer to arm
            return
        with anyio.move_on_after(UPSTREAM_START_TIMEOUT_SECONDS):
            await self.settled.wait()
        if not self.settled.is_set() and not self.timed_out:
            self.timed_out = True
            for name in self.starting():
                logger.warning("upstream %s is unavailable for now: %s", name, _slow())

    def starting(self) -> list[str]:
        """The upstreams neither connected nor failed yet (still starting, or hung in the handshake)."""
        return [
            u.name for u in self.config.upstreams if u.name not in self.clients and u.name not in self.failed
        ]

    def _settle(self) -> None:
        if len(self.clients) + len(self.failed) >= len(self.config.upstreams):
            self.settled.set()

    def _client(self, upstream: Upstream, errlog: Any = None) -> ElicitClient:
        ui = RelayUI(self.books[upstream.name], upstream.name, upstream.no_elicitation, self.browser)
        pipeline = Pipeline(ui)
        pipeline.replace(ConcurrentAsk(ui))
        pipeline.observers.append(ui.observe)  # first: it takes the notices of the question just decided
        if self.audit is not None:  # one record per elicitation, naming the downstream user
            identity = ClientIdentity(name=GATEWAY_CLIENT, version="")
            pipeline.observers.append(AuditTrail(self.audit, client=identity, person=self.user))
        # "auto": the 2025-11-25 handshake, where an upstream that pushes can ask; an upstream that
        # refuses it is reached again on a fresh connection in 2026-07-28 (its questions then come
        # as rounds, which the client kit answers through this same pipeline).
        client = ElicitClient(
            self._target(upstream),
            pipeline=pipeline,
            protocol="auto",
            client_name=GATEWAY_CLIENT,
            policy=self.policy,
            policy_state=self.policy_state,
            url_mode=RelayUrlMode(ui.routes),
            errlog=errlog if errlog is not None else sys.stderr,
        )
        ui.guardrails = client.guardrails
        return client

    async def _hold(self, upstream: Upstream) -> None:
        # A stdio upstream's stderr passes through a pipe of ours (its last lines say why it
        # exited, if it does before the handshake); not on Windows, whose pipes anyio cannot wait on.
        tail = StderrTail() if upstream.command is not None and sys.platform != "win32" else None
        try:
            async with anyio.create_task_group() as tg:
                if tail is not None:
                    tg.start_soon(tail.pump)
                try:
                    await self._connect(upstream, tail)
                finally:
                    tg.cancel_scope.cancel()
        finally:
            if tail is not None:
                tail.close()

    async def _connect(self, upstream: Upstream, tail: StderrTail | None) -> None:
        spawned = Spawned(upstream.name)
        connecting = self._connecting[upstream.name] = anyio.CancelScope()
        if self._stop.is_set():
            connecting.cancel()
        try:
            with noting_spawns(spawned), connecting:
                async with self._client(upstream, tail.errlog if tail is not None else None) as client:
                    self.tools[upstream.name] = await client.list_tools()
                    self.prompts[upstream.name] = await _optional(client.list_prompts)
                    self.resources[upstream.name] = await _optional(client.list_resources)
                    self.templates[upstream.name] = await _optional(client.list_resource_templates)
                    self.clients[upstream.name] = client
                    self._connecting.pop(upstream.name, None)  # from now on `_stop` ends it
                    logger.info(
                        "upstream %s speaks %s (%s)",
                        upstream.name,
                        client.protocol_version,
                        client.era_reason,
                    )
                    self._settle()
                    await self._stop.wait()
        except Exception as exc:  # one upstream down never takes the others with it
            if tail is not None:
                tail.drain()  # what the process wrote before it ended
            why = await credentials_refused(upstream) or failure_reason(
                exc,
                upstream,
                stderr=tail.lines if tail is not None else None,
                exit_status=spawned.exit_status,
            )
            logger.warning("upstream %s is unavailable: %s", upstream.name, why)
            self.failed[upstream.name] = why
        finally:
            self._connecting.pop(upstream.name, None)
            self.clients.pop(upstream.name, None)
            for listing in (self.tools, self.prompts, self.resources, self.templates):
                listing.pop(upstream.name, None)
            self._settle()

    def offered(self, listings: dict[str, list[Any]] | None = None) -> dict[str, tuple[str, Any]]:
        """Offered name -> (server key, the upstream's tool or prompt), per `core.gateway_names`;
        worked out again only when the listings changed (an upstream joined or left)."""
        listings = self.tools if listings is None else listings
        # The cached answer holds the listed objects, so their ids stay theirs while it is kept.
        key = tuple((s, tuple(map(id, items))) for s, items in listings.items())
        cached = self._offered.get(id(listings))
        if cached is not None and cached[0] == key:
            return cached[1]
        names = self._offered_now(listings)
        self._offered[id(listings)] = (key, names)
        return names

    def _offered_now(self, listings: dict[str, list[Any]]) -> dict[str, tuple[str, Any]]:
        by_name = {s: {t.name: t for t in items} for s, items in listings.items()}
        names = offered_names({s: list(tools) for s, tools in by_name.items()})
        return {offered: (s, by_name[s][n]) for offered, (s, n) in names.items()}

    async def refusal(self, server: str) -> str | None:
        """Whether `server` now refuses the gateway's credentials (after a failed call)."""
        upstream = next((u for u in self.config.upstreams if u.name == server), None)
        return await credentials_refused(upstream) if upstream is not None else None

    def unavailable(self) -> str:
        """The upstreams that failed and why, for an error the downstream reads ("" when none)."""
        why = dict(self.failed)
        if self.timed_out:
            why.update((name, _slow()) for name in self.starting())
        if not why:
            return ""
        failed = "; ".join(f"'{server}' ({reason})" for server, reason in sorted(why.items()))
        return f"Unavailable upstream servers: {failed}"

    def unknown_tool(self, name: str) -> str:
        """What a call of a tool that is not offered (or whose server left) is told: the prefixed
        names when several servers offer `name`, else the upstreams that are unavailable and why."""
        offered = self.offered()
        order = [u.name for u in self.config.upstreams]  # the servers in the file's order
        found = [(order.index(s), n) for n, (s, tool) in offered.items() if tool.name == name and n != name]
        prefixed = [n for _, n in sorted(found)]
        if name not in offered and len(prefixed) > 1:
            choices = f"{', '.join(prefixed[:-1])} or {prefixed[-1]}"
            return f"Unknown tool {name!r}: several servers offer it; call {choices}"
        return f"Unknown tool {name!r} (or its server is unavailable). {self.unavailable()}".strip()

    def resource_server(self, uri: str) -> str | None:
        """The server offering `uri`: one that lists it, else one with a template it fits (the
        first in key order when several do, as for the listings)."""
        for server in sorted(self.resources):
            if any(str(r.uri) == uri for r in self.resources[server]):
                return server
        for server in sorted(self.templates):
            if any(template_matches(r.uri_template, uri) for r in self.templates[server]):
                return server
        return None


def _slow() -> str:
    return f"no answer to the handshake after {UPSTREAM_START_TIMEOUT_SECONDS:g} s; it joins when it answers"


async def _optional(listing: Callable[[], Awaitable[list[Any]]]) -> list[Any]:
    """A listing the upstream may not support (no prompts or resources capability): empty then."""
    try:
        return await listing()
    except Exception as exc:
        logger.debug("listing not offered: %s", type(exc).__name__)
        return []


def _target(upstream: Upstream) -> Any:
    if upstream.url is not None:  # a spec, not a transport: "auto" may need a second connection
        return ServerSpec(url=upstream.url, headers=tuple(upstream.headers.items()))
    return StdioServerParameters(
        command=upstream.command or "", args=list(upstream.args), env=dict(upstream.env) or None
    )

"""One user's connections to the upstream servers, each with its own client pipeline.

A pool runs in a task of its own (the SDK's client contexts must be entered and left by the same
task) and holds every upstream connection open until the gateway stops. An upstream that fails to
start is logged in one line and left out; the others serve on. It is tried again at the user's
requests as a lost one is (below), first no sooner than `RECONNECT_FIRST_DELAY_SECONDS` after the
request that first found it down: a server that comes up later (a remote one restarted) joins then.

An upstream lost after its handshake (its process exited, its connection closed during a call, or
an HTTP one's transport found it gone: unreachable, or its session forgotten, see `LinkWatch`)
is left out the same way, its tools, prompts and resources dropped (`on_change`: the gateway tells
its clients the lists changed), and reconnected at the user's next request (`revive`): one
attempt, then, while it keeps failing, one no sooner than `RECONNECT_FIRST_DELAY_SECONDS` later,
the wait doubling up to `RECONNECT_MAX_DELAY_SECONDS`. Back, its lists return (`on_change` again).
The wait starts over only once it stayed up `RECONNECT_STABLE_SECONDS`: one lost again sooner
(flapping) waits longer than the last time, as a failed attempt does.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final

import anyio

from mcp_elicit.audit.base import AuditSink
from mcp_elicit.client.audit import AuditTrail
from mcp_elicit.client.connection import ElicitClient, ServerSpec
from mcp_elicit.client.pipeline import Pipeline
from mcp_elicit.client.sdk_transport import LinkWatch, Spawned, StdioServerParameters, noting_spawns
from mcp_elicit.client.ui_protocol import UserInterface
from mcp_elicit.core.consent import ClientIdentity
from mcp_elicit.core.gateway_names import offered_names
from mcp_elicit.core.policy import Policy, PolicyState
from mcp_elicit.core.uri_templates import template_matches
from mcp_elicit.gateway.config import GatewayConfig, Upstream
from mcp_elicit.gateway.failures import (
    StderrTail,
    credentials_refused,
    failure_reason,
    process_end,
    status_reason,
)
from mcp_elicit.gateway.relay import CallBook, ConcurrentAsk, Pending, RelayUI
from mcp_elicit.gateway.urls import RelayUrlMode

__all__ = ["UPSTREAM_START_TIMEOUT_SECONDS", "Pool", "credentials_refused", "failure_reason", "status_reason"]

logger = logging.getLogger("mcp_elicit.gateway")

# How long a first listing waits for the upstreams to start; a slower one joins later.
UPSTREAM_START_TIMEOUT_SECONDS: Final = 30.0
# An upstream lost after its handshake: the first reconnection is tried at the next request; after
# each failed one the next waits this long, doubled each time up to the maximum.
RECONNECT_FIRST_DELAY_SECONDS: Final = 1.0
RECONNECT_MAX_DELAY_SECONDS: Final = 60.0
# How long a reconnected upstream must stay up before its wait starts over (the next loss retried at
# once). Lost sooner, it is flapping (it connects, then dies): each reconnection would cost a
# handshake and two list changes per request, so its next wait doubles the last instead. As long
# as the longest wait: an upstream up longer than that is not failing faster than it is retried.
RECONNECT_STABLE_SECONDS: Final = 60.0
# How long a request waits for a reconnection's handshake; a slower one joins when it answers.
RECONNECT_WAIT_SECONDS: Final = 10.0
GATEWAY_CLIENT: Final = "mcp-elicit-gateway"


@dataclass
class _Retry:
    """When a lost upstream may be tried again (the clock's seconds), and the wait after a failure."""

    at: float
    delay: float = 0.0
    joined: bool = True  # connected once before (False: it failed at start and never has)


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
        clock: Callable[[], float] = time.monotonic,
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
        self.clock = clock
        self.lost: dict[str, _Retry] = {}  # connected once, gone since: reconnected by `revive`
        self._back: dict[str, tuple[float, float]] = {}  # reconnected: (when, the wait it had come after)
        self.on_change: Callable[[], Awaitable[None]] | None = None  # an upstream's lists came or went
        self._dropped: dict[str, anyio.Event] = {}  # set by `drop`: the connection is known dead
        self._drop_why: dict[str, str] = {}  # why `drop` was called, as the request was told
        self._attempts: dict[str, anyio.Event] = {}  # reconnections under way, set once settled
        self._start_deadline: float | None = None  # the first request's wait for the upstreams ends then
        self._closing: dict[str, anyio.Event] = {}  # connections ending, set once their loss is noted
        self._spawned: dict[str, Spawned] = {}  # each stdio upstream's last process
        self._tg: anyio.abc.TaskGroup | None = None

    async def run(self) -> None:
        """Hold every upstream open until `stop`; returns when all are closed."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            for upstream in self.config.upstreams:
                tg.start_soon(self._hold, upstream)
            # open until stopped, though every upstream be lost: `revive` starts them again here
            await self._stop.wait()
        self._tg = None

    def stop(self) -> None:
        self._stop.set()
        for scope in self._connecting.values():  # hung in the handshake: nothing else ends them
            scope.cancel()

    async def wait_settled(self) -> None:
        """Wait for every upstream to connect or fail, up to `UPSTREAM_START_TIMEOUT_SECONDS` from
        the first request: once that wait is over, a request never waits for a slow one again
        (found by a new user: with one upstream hung in its handshake, every request waited 30 s)."""
        if self.settled.is_set() or self.timed_out:
            return
        if self._start_deadline is None:
            self._start_deadline = anyio.current_time() + UPSTREAM_START_TIMEOUT_SECONDS
        with anyio.move_on_after(self._start_deadline - anyio.current_time()):
            await self.settled.wait()
        if not self.settled.is_set() and not self.timed_out:
            self.timed_out = True
            for name in self.starting():
                logger.warning("upstream %s is unavailable for now: %s", name, _slow())

    def drop(self, server: str, why: str) -> None:
        """`server`'s connection is dead (a request saw it go, `why`): leave it out until it is revived."""
        dropped = self._dropped.get(server)
        if dropped is not None:
            self._drop_why[server] = why
            dropped.set()
            self._ending(server)

    async def exit_status(self, server: str, wait: float) -> int | None:
        """The exit status of `server`'s process (negative: the signal that ended it), waiting up
        to `wait` seconds for it to end; None for an HTTP upstream, or one still running then."""
        spawned = self._spawned.get(server)
        if spawned is None or spawned.process is None:
            return None
        with anyio.move_on_after(wait):
            await spawned.process.wait()
        return spawned.exit_status

    def _ending(self, server: str) -> None:
        """`server`'s connection is ending: no call is sent on it from now, and the next request
        waits (in `revive`) until its loss is noted, then starts it again."""
        self.clients.pop(server, None)
        self._closing.setdefault(server, anyio.Event())

    async def revive(self) -> None:
        """Reconnect each lost upstream whose wait is over (one attempt each), waiting up to
        `RECONNECT_WAIT_SECONDS` for their handshakes; a slower one joins when it answers."""
        closing = list(self._closing.values())
        if closing:  # a connection seen dying and still closing: its loss is noted first
            with anyio.move_on_after(RECONNECT_WAIT_SECONDS):
                for ended in closing:
                    await ended.wait()
        now = self.clock()
        for retry in self.lost.values():
            if retry.at == math.inf:  # failed at start: its first wait starts now
                retry.at = now + retry.delay
        due = [u for u in self.config.upstreams if u.name in self.lost and self.lost[u.name].at <= now]
        due = [u for u in due if u.name not in self._attempts]
        if not due or self._tg is None or self._stop.is_set():
            return
        for upstream in due:
            self._attempts[upstream.name] = anyio.Event()
            logger.info("upstream %s: reconnecting", upstream.name)
            self._tg.start_soon(self._hold, upstream)
        with anyio.move_on_after(RECONNECT_WAIT_SECONDS):
            for upstream in due:
                attempt = self._attempts.get(upstream.name)
                if attempt is not None:
                    await attempt.wait()

    def _attempt_over(self, name: str) -> None:
        attempt = self._attempts.pop(name, None)
        if attempt is not None:
            attempt.set()

    async def _changed(self) -> None:
        if self.on_change is not None:
            await self.on_change()

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
            identity = ClientIdentity(name=GATEWAY_CLIENT, version=_version())
            # the entry's key: two entries may run the same server (two accounts), alike otherwise
            upstream_key = {"upstream": upstream.name}
            trail = AuditTrail(self.audit, client=identity, person=self.user, details=upstream_key)
            pipeline.observers.append(trail)
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
        spawned = self._spawned[upstream.name] = Spawned(upstream.name)
        connecting = self._connecting[upstream.name] = anyio.CancelScope()
        if self._stop.is_set():
            connecting.cancel()
        joined = False  # the handshake done and the lists taken: from now on, an end is a loss
        why = ""
        link: LinkWatch | None = None
        try:
            with noting_spawns(spawned), connecting:
                async with self._client(upstream, tail.errlog if tail is not None else None) as client:
                    self.tools[upstream.name] = await client.list_tools()
                    self.prompts[upstream.name] = await _optional(client.list_prompts)
                    self.resources[upstream.name] = await _optional(client.list_resources)
                    self.templates[upstream.name] = await _optional(client.list_resource_templates)
                    self.clients[upstream.name] = client
                    link = client.link
                    self._connecting.pop(upstream.name, None)  # from now on `_stop` ends it
                    retried = self.lost.pop(upstream.name, None)
                    joined, back = True, retried is not None and retried.joined
                    if retried is not None:  # its wait starts over only once it stays up (`_lose`)
                        self._back[upstream.name] = (self.clock(), retried.delay)
                    self.failed.pop(upstream.name, None)  # a lost one's reason, said until it is back
                    logger.info(
                        "upstream %s %s %s (%s)",
                        upstream.name,
                        "is back, speaking" if back else "speaks",
                        client.protocol_version,
                        client.era_reason,
                    )
                    self._settle()
                    self._attempt_over(upstream.name)
                    if retried is not None or self.timed_out:  # its lists are new to the clients
                        await self._changed()  # (a slow one too, joining after the first listing)
                    why = await self._until_ended(upstream.name, spawned, link)
                    if why:  # gone: nothing more is sent on it while it closes
                        self._ending(upstream.name)
        except Exception as exc:  # one upstream down never takes the others with it
            if tail is not None:
                tail.drain()  # what the process wrote before it ended
            if joined:  # the connection's end, seen as its client closed: a loss (below)
                why = why or (link.why if link is not None else "") or process_end(spawned.exit_status)
            else:
                why = await credentials_refused(upstream) or failure_reason(
                    exc,
                    upstream,
                    stderr=tail.lines if tail is not None else None,
                    exit_status=spawned.exit_status,
                )
                logger.warning("upstream %s is unavailable: %s", upstream.name, why)
                self.failed[upstream.name] = why
                retry = self.lost.get(upstream.name)
                if retry is not None:  # a reconnection failed: wait longer before the next
                    retry.delay = _longer(retry.delay)
                    retry.at = self.clock() + retry.delay
                elif not self._stop.is_set():  # failed at start: tried again later, as a lost one
                    # (its wait starts at the next request, not now: the first listing may have
                    # waited longer than that for the other upstreams to start)
                    first = RECONNECT_FIRST_DELAY_SECONDS
                    self.lost[upstream.name] = _Retry(at=math.inf, delay=first, joined=False)
        finally:
            self._connecting.pop(upstream.name, None)
            self.clients.pop(upstream.name, None)
            for listing in (self.tools, self.prompts, self.resources, self.templates):
                listing.pop(upstream.name, None)
            self._attempt_over(upstream.name)
            self._settle()
        try:
            if joined and not self._stop.is_set():
                await self._lose(upstream.name, why or process_end(spawned.exit_status))
        finally:
            closing = self._closing.pop(upstream.name, None)
            if closing is not None:
                closing.set()

    async def _until_ended(self, name: str, spawned: Spawned, link: LinkWatch | None) -> str:
        """Wait until the gateway stops, the upstream's process exits, its HTTP transport finds it
        gone (`link`), or a call saw its connection close (`drop`); "" when the gateway stops,
        else why the connection ended."""
        dropped = self._dropped[name] = anyio.Event()
        why = ""
        async with anyio.create_task_group() as tg:

            async def until(event: Any, reason: Callable[[], str]) -> None:
                nonlocal why
                await event()
                why = why or reason()
                tg.cancel_scope.cancel()

            tg.start_soon(until, self._stop.wait, lambda: "")
            tg.start_soon(until, dropped.wait, lambda: self._drop_why.pop(name, "its connection closed"))
            process = spawned.process
            if process is not None:
                tg.start_soon(until, process.wait, lambda: process_end(spawned.exit_status))
            if link is not None:
                tg.start_soon(until, link.lost.wait, lambda: link.why)
        self._dropped.pop(name, None)
        self._drop_why.pop(name, None)
        return why

    async def _lose(self, name: str, why: str) -> None:
        """A connected upstream is gone: left out, and tried again at the next request; or, when it
        was reconnected less than `RECONNECT_STABLE_SECONDS` ago, after a longer wait than the last."""
        now = self.clock()
        since, delay = self._back.pop(name, (-math.inf, 0.0))
        if now - since < RECONNECT_STABLE_SECONDS:  # flapping: the wait goes on growing
            delay = _longer(delay)
            when = f"at the first request after {delay:g} s (it was back for {now - since:.3g} s only)"
            logger.warning("upstream %s is unavailable: %s; reconnecting %s", name, why, when)
            self.lost[name] = _Retry(at=now + delay, delay=delay)
        else:
            logger.warning("upstream %s is unavailable: %s; reconnecting at the next request", name, why)
            self.lost[name] = _Retry(at=now)
        self.failed[name] = why
        await self._changed()

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

    def offered_resources(self) -> list[Any]:
        """Every server's resources, one per URI (the first server in key order wins a shared one,
        so a read of it reaches that server: `resource_server`)."""
        return _first_of_each(self.resources, lambda resource: str(resource.uri))

    def offered_templates(self) -> list[Any]:
        """Every server's resource templates, one per URI template, as `offered_resources`."""
        return _first_of_each(self.templates, lambda template: str(template.uri_template))

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


def _first_of_each(listings: dict[str, list[Any]], key: Callable[[Any], str]) -> list[Any]:
    seen: dict[str, Any] = {}
    for server in sorted(listings):
        for item in listings[server]:
            seen.setdefault(key(item), item)
    return list(seen.values())


def _longer(delay: float) -> float:
    """The wait after `delay`: doubled, from `RECONNECT_FIRST_DELAY_SECONDS` up to the maximum."""
    return min(max(delay * 2, RECONNECT_FIRST_DELAY_SECONDS), RECONNECT_MAX_DELAY_SECONDS)


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


def _version() -> str:
    try:
        return version("mcp-elicit")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"

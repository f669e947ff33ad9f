"""`Gateway`: the downstream server's handlers, mapping users to their pools and names to upstreams.

```
async with Gateway(parse_config(text)) as gw:
    await gw.serve_stdio()            # or: await gw.serve_http("127.0.0.1", 8700)
```

Users: over HTTP with a `users` map, the bearer token names the user (the transport already refused
unknown tokens); with `oauth`, the user is the subject of the token the authorization server
vouched for (`gateway/auth.py`); otherwise every call is the one local user's. Each user gets their
own upstream connections (a `Pool`), opened on their first request and held until the gateway stops.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Awaitable, Callable
from functools import partial
from types import TracebackType
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

from mcp_elicit.audit.base import AuditSink
from mcp_elicit.client.connection import ElicitClient
from mcp_elicit.client.ui_protocol import UserInterface
from mcp_elicit.core.policy import Policy
from mcp_elicit.core.revisions import is_modern
from mcp_elicit.core.wire_codes import INTERNAL_ERROR, INVALID_PARAMS
from mcp_elicit.errors import OutOfOrder, ServerOutputError, UrlHandoffStopped
from mcp_elicit.gateway import sdk
from mcp_elicit.gateway.config import GatewayConfig
from mcp_elicit.gateway.failures import broke, lost_upstream
from mcp_elicit.gateway.holds import HOLD_WAIT_SECONDS, MAX_HOLDS_PER_USER, Hold, Holds, answer_of
from mcp_elicit.gateway.pool import Pool
from mcp_elicit.gateway.relay import TOOLS_CALL, DownstreamCall
from mcp_elicit.gateway.shared_state import SharedState, StateRecord

__all__ = ["LOCAL_USER", "MAX_POOLS", "Gateway"]

logger = logging.getLogger("mcp_elicit.gateway")

LOCAL_USER: Final = "local"
# Users with open upstream connections at once (each holds one connection per upstream).
MAX_POOLS: Final = 64
# How long a starting gateway waits for its Redis subscription (replicas) before it gives up.
REPLICA_START_TIMEOUT_SECONDS: Final = 30.0


NO_OPEN_QUESTION: Final = "This answer belongs to no open question (used, expired or not yours)."
TOO_LATE: Final = "The upstream server did not answer in time."
SHARED_STATE_DOWN: Final = "The gateway cannot reach its shared state (Redis); call the tool again shortly."
# The downstream requests that may ask questions, as their rounds name them (and TOOLS_CALL).
PROMPTS_GET: Final = "prompts/get"
RESOURCES_READ: Final = "resources/read"


def _failed(method: str, text: str, code: int = INTERNAL_ERROR) -> Any:
    """A held request that cannot go on: a tool error the model reads, else a JSON-RPC error."""
    if method == TOOLS_CALL:
        return sdk.error_result(text)
    raise sdk.request_failed(text, code)


def _unasked(call: DownstreamCall) -> str:
    """What the gateway could not ask during `call`, for the client."""
    return "The gateway could not relay a question: " + "; ".join(call.refusals)


async def _to_round(hold: Hold, progress: float, total: float | None, message: str | None) -> None:
    """A held call's progress, to the round waiting on it (between rounds nobody waits: dropped;
    a round forwarded from another replica gets none)."""
    if hold.live is not None:
        await sdk.report_progress(hold.live, progress, total, message)


class Gateway:
    def __init__(
        self,
        config: GatewayConfig,
        *,
        policy: Policy | None = None,
        audit: AuditSink | None = None,
        browser: UserInterface | None = None,
        name: str = "mcp-elicit-gateway",
        max_pools: int = MAX_POOLS,
        shared: SharedState | None = None,
    ) -> None:
        self.config = config
        self.max_pools = max_pools  # a team gateway may allow more users at once (bench/gateway_sessions.py)
        # Guardrails on by default: rate limits and the decline embargo, no extra "ask first" step.
        self.policy = policy if policy is not None else Policy(form="allow", url="allow")
        self.audit = audit
        self.browser = browser
        self.pools: dict[str, Pool] = {}
        self.holds = Holds()
        self.connections: dict[str, weakref.WeakSet[Any]] = {}  # each user's, told of list changes
        self.listeners: dict[str, sdk.Listeners] = {}  # each user's 2026-07-28 listen streams
        self.shared = shared  # replicas: rounds and sealing keys shared through Redis
        self._tg: TaskGroup | None = None
        self._held: TaskGroup | None = None  # the held calls' upstream runs (2026-07-28 clients)
        self._listener = anyio.CancelScope()  # the replica's Redis subscription, ended on exit
        keys = shared.state_keys if shared is not None else None
        self.server = sdk.build_server(name, "1", self.list_tools, self.call_tool, more=self, state_keys=keys)

    async def __aenter__(self) -> Gateway:
        if self.shared is not None:  # Redis unreachable: fail here, before anything is served
            with anyio.fail_after(REPLICA_START_TIMEOUT_SECONDS):
                await self.shared.subscribe()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        if self.shared is not None:
            self._tg.start_soon(self._listen, self.shared)
        self._held = anyio.create_task_group()
        await self._held.__aenter__()
        return self

    async def end_held_calls(self) -> None:
        """Before the upstreams stop: cancel every held call upstream (the SDK tells the upstream)
        and wait for them to end. Found by a new user: a call held for a client that had left was
        cut by the upstream's stop, and logged as that upstream lost ("its process exited")."""
        held, self._held = self._held, None
        if held is None:
            return
        self.holds.abandon_all()
        held.cancel_scope.cancel()
        await held.__aexit__(None, None, None)

    async def _listen(self, shared: SharedState) -> None:
        with self._listener:
            await shared.run(self._answer_forwarded)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.end_held_calls()
        for pool in self.pools.values():
            pool.stop()
        for listeners in self.listeners.values():
            listeners.close()
        self._listener.cancel()
        tg, self._tg = self._tg, None
        if tg is not None:
            await tg.__aexit__(exc_type, exc, tb)

    def user_of(self, ctx: Any) -> str:
        user = self._user_of(ctx)
        connection = sdk.connection_of(ctx)
        if connection is not None:
            self.connections.setdefault(user, weakref.WeakSet()).add(connection)
        return user

    async def _lists_changed(self, user: str) -> None:
        """Tell `user`'s connected clients that the offered lists changed (an upstream came or went)."""
        for connection in list(self.connections.get(user, ())):
            with contextlib.suppress(Exception):  # a client gone meanwhile
                await sdk.send_lists_changed(connection)
        if user in self.listeners:
            await self.listeners[user].lists_changed()

    async def listen(self, ctx: Any, params: Any) -> Any:
        """A 2026-07-28 client's `subscriptions/listen`: the user's stream of list changes."""
        user = self.user_of(ctx)
        if user not in self.listeners and len(self.listeners) >= self.max_pools:
            raise OutOfOrder("gateway", f"at most {self.max_pools} users at once")
        return await self.listeners.setdefault(user, sdk.Listeners()).listen(ctx, params)

    def _user_of(self, ctx: Any) -> str:
        if not sdk.over_http(ctx):  # stdio (or in memory): one local user, whatever the file's users/oauth
            return LOCAL_USER
        if self.config.oauth is not None:
            subject = sdk.subject_of(ctx)
            if subject is None:  # the transport refuses requests without a vouched-for token
                raise OutOfOrder("gateway", "a request without a verified OAuth token reached the gateway")
            return subject
        if not self.config.users:
            return LOCAL_USER
        token = sdk.bearer_of(ctx)
        user = self.config.users.get(token or "")
        if user is None:  # the transport refuses unknown tokens
            raise OutOfOrder("gateway", "a request without a known bearer token reached the gateway")
        return user

    async def pool_for(self, user: str) -> Pool:
        pool = self.pools.get(user)
        if pool is None:
            if self._tg is None:
                raise OutOfOrder("Gateway", "enter the gateway with `async with`")
            if len(self.pools) >= self.max_pools:
                raise OutOfOrder("gateway", f"at most {self.max_pools} users at once")
            pool = self.pools[user] = Pool(
                self.config, user, policy=self.policy, audit=self.audit, browser=self.browser
            )
            pool.on_change = partial(self._lists_changed, user)
            self._tg.start_soon(pool.run)
        await pool.wait_settled()
        await pool.revive()  # an upstream lost after its handshake: one attempt, when its wait is over
        return pool

    async def list_tools(self, ctx: Any) -> list[Any]:
        pool = await self.pool_for(self.user_of(ctx))
        return [sdk.tool_named(tool, name) for name, (_, tool) in pool.offered().items()]

    async def call_tool(
        self, ctx: Any, name: str, arguments: dict[str, Any], state: str | None, responses: dict[str, Any]
    ) -> Any:
        user = self.user_of(ctx)
        if state is not None:  # a 2026-07-28 retry: it answers a held call's question
            return await self._answer_round(ctx, user, state, responses, TOOLS_CALL)
        pool = await self.pool_for(user)
        found = pool.offered().get(name)
        if found is None or found[0] not in pool.clients:
            return sdk.error_result(pool.unknown_tool(name))
        call = DownstreamCall(ctx, user, found[0], found[1].name, arguments=dict(arguments))
        if is_modern(sdk.protocol_version(ctx)):
            return await self._start_held(call, partial(self._forward, pool, call, arguments), TOOLS_CALL)
        return await self._forward(pool, call, arguments)

    async def _forward(self, pool: Pool, call: DownstreamCall, arguments: dict[str, Any]) -> Any:
        client = pool.clients[call.server]
        # Progress goes to the downstream request that waits on the call now: a held call's rounds
        # are requests of their own, each ending with its question.
        if call.hold is not None:
            progress = partial(_to_round, call.hold)
        else:
            progress = partial(sdk.report_progress, call.ctx)
        try:
            with pool.books[call.server].track(call):
                result = await client.call_tool(call.tool, arguments, progress=progress)
        except anyio.get_cancelled_exc_class():
            # the downstream cancelled (or left): the SDK sends notifications/cancelled upstream
            logger.info("call %s on %s for %s cancelled", call.tool, call.server, call.user)
            raise
        except ServerOutputError as exc:
            return sdk.error_result(broke(call, exc))
        except UrlHandoffStopped as exc:  # an ordinary outcome (a declined page): one line, no traceback
            logger.info("call %s on %s: its page step ended (%s)", call.tool, call.server, exc.reason)
            page = f"needs a web page step first; it did not complete ({exc.reason})"
            stopped = sdk.error_result(f"The upstream server '{call.server}' {page}.")
            # a page the pipeline turned down (a rate limit, no URL mode downstream): say why first
            return sdk.with_notice(_unasked(call), stopped) if call.refusals else stopped
        except Exception as exc:
            lost = await lost_upstream(pool, client, call, exc)
            if lost is not None:  # reconnected at the next request
                return sdk.refused(lost, TOOLS_CALL)
            why = await pool.refusal(call.server)
            if why is None:
                raise
            # an HTTP upstream refuses the gateway's headers now (its key was changed, say)
            logger.info("upstream %s refused a call: %s", call.server, why)
            return sdk.error_result(f"The upstream server '{call.server}' refused the call: {why}.")
        if call.refusals:  # never a silent drop: say what could not be asked, before the result as it came
            return sdk.with_notice(_unasked(call), result)
        return result

    # -- 2026-07-28 downstream: the upstream call is held across the client's rounds -------------

    async def _start_held(
        self, call: DownstreamCall, upstream: Callable[[], Awaitable[Any]], method: str
    ) -> Any:
        """Run `upstream` (the request `method` makes upstream) held across the client's rounds."""
        if self._held is None:
            return _failed(method, "The gateway is stopping.")
        hold = self.holds.new(call.user)
        if hold is None:
            return _failed(method, f"Too many held calls for this user (at most {MAX_HOLDS_PER_USER}).")
        call.hold = hold
        hold.server, hold.tool, hold.method = call.server, call.tool, method

        async def run() -> None:
            with hold.scope:  # cancelled when the round waiting on it is (the client cancelled)
                try:
                    hold.finish(await upstream())
                except Exception as exc:
                    logger.info("held %s %s ended: %s", method, call.tool, type(exc).__name__)
                    failed = f"The upstream call failed: {type(exc).__name__}."
                    hold.finish(sdk.error_result(failed) if method == TOOLS_CALL else sdk.upstream_error(exc))

        self._held.start_soon(run)
        return await self._next_round(call.ctx, hold)

    async def _advance(self, hold: Hold) -> tuple[str, Any, str | None]:
        """What the held call does next: ("question", wire request, fresh state), ("done", result,
        None) or ("timeout", None, None)."""
        with anyio.move_on_after(HOLD_WAIT_SECONDS):
            kind, value = await hold.events.receive()
            if kind == "done":
                return "done", value, None
            state = self.holds.park(hold)
            if self.shared is not None:
                record = StateRecord(hold.user, self.shared.replica, hold.server, hold.tool, hold.upstream_id)
                try:
                    await self.shared.record(state, record)
                except self.shared.down as exc:  # no replica could take the retry: end the call
                    logger.warning("held %s %s ended: Redis: %s", hold.method, hold.tool, type(exc).__name__)
                    hold.abandon()
                    return "unshared", None, None
            return "question", value, state
        hold.abandon()  # the round was told the upstream did not answer in time: nobody comes back
        return "timeout", None, None

    async def _next_round(self, ctx: Any, hold: Hold) -> Any:
        hold.live = ctx
        try:
            kind, value, state = await self._advance(hold)
        except anyio.get_cancelled_exc_class():
            hold.scope.cancel()  # the client cancelled the round: the upstream call ends too
            raise
        finally:
            hold.live = None
        if kind == "done":
            if isinstance(value, BaseException):  # a prompt or resource the upstream refused
                raise value
            return value
        if kind == "question" and state is not None:
            return sdk.input_required("q", value, state)
        return _failed(hold.method, SHARED_STATE_DOWN if kind == "unshared" else TOO_LATE)

    async def _answer_round(
        self, ctx: Any, user: str, state: str, responses: dict[str, Any], method: str
    ) -> Any:
        if self.shared is not None:  # single use and the user checked across replicas first
            if not self.shared.listening.is_set():  # a forward's reply could not reach this replica
                logger.warning("a retry of %s was refused: Redis is not reachable", method)
                return _failed(method, SHARED_STATE_DOWN)
            try:
                record = await self.shared.claim(state, user)
            except self.shared.down as exc:
                logger.warning("a retry of %s was refused: Redis: %s", method, type(exc).__name__)
                return _failed(method, SHARED_STATE_DOWN)
            if record is None:
                return _failed(method, NO_OPEN_QUESTION, INVALID_PARAMS)
            if record.home != self.shared.replica:
                return await self._answer_elsewhere(record, state, responses.get("q"), method)
        hold = self.holds.take(state, user, method)
        if hold is None:
            return _failed(method, NO_OPEN_QUESTION, INVALID_PARAMS)
        await hold.answers_in.send(answer_of(responses.get("q")))
        return await self._next_round(ctx, hold)

    async def _answer_elsewhere(self, record: StateRecord, state: str, answer: Any, method: str) -> Any:
        """A retry for a call held by another replica: forwarded there; its reply answered here."""
        assert self.shared is not None
        try:
            reply = await self.shared.forward(record, state, answer)
        except self.shared.down as exc:
            logger.warning("a retry for replica %s not forwarded: Redis: %s", record.home, type(exc).__name__)
            return _failed(method, SHARED_STATE_DOWN)
        kind = reply.get("kind") if reply is not None else "stopped"
        if reply is not None and reply.get("method", method) != method:
            return _failed(method, NO_OPEN_QUESTION, INVALID_PARAMS)  # a state of another kind of request
        if reply is not None and kind == "done":
            return sdk.result_from_json(reply.get("value"), method)
        if reply is not None and kind == "question" and isinstance(reply.get("state"), str):
            return sdk.input_required("q", reply.get("value") or {}, reply["state"])
        logger.info("a retry for a call held by replica %s ended: %s", record.home, kind)
        if kind == "timeout":
            return _failed(method, TOO_LATE)
        if kind == "failed":
            return _failed(method, str(reply.get("value") if reply is not None else ""))
        return _failed(
            method, "The gateway replica that held this call has stopped or let it go; call the tool again."
        )

    async def _answer_forwarded(self, state: str, user: str, answer: Any) -> dict[str, Any]:
        """On the home replica: another replica claimed `state` for `user` and forwards the answer."""
        hold = self.holds.take(state, user)
        if hold is None:
            return {"kind": "gone"}
        await hold.answers_in.send(answer_of(answer))
        kind, value, fresh = await self._advance(hold)
        if kind == "done" and isinstance(value, BaseException):
            kind, value = "failed", sdk.error_text(value)
        elif kind == "done":
            value = sdk.result_json(value)
        return {"kind": kind, "value": value, "state": fresh, "method": hold.method}

    # -- prompts and resources: their questions go by push, or by held rounds on 2026-07-28 -------

    async def list_prompts(self, ctx: Any) -> list[Any]:
        pool = await self.pool_for(self.user_of(ctx))
        return [sdk.tool_named(p, name) for name, (_, p) in pool.offered(pool.prompts).items()]

    async def get_prompt(
        self, ctx: Any, name: str, arguments: dict[str, Any], state: str | None, responses: dict[str, Any]
    ) -> Any:
        user = self.user_of(ctx)
        if state is not None:
            return await self._answer_round(ctx, user, state, responses, PROMPTS_GET)
        pool = await self.pool_for(user)
        found = pool.offered(pool.prompts).get(name)
        if found is None or found[0] not in pool.clients:
            raise sdk.not_found(f"prompt {name!r}", pool.unavailable())
        call = DownstreamCall(
            ctx, user, found[0], found[1].name, arguments=dict(arguments), method=PROMPTS_GET
        )
        client = pool.clients[call.server]
        return await self._request(pool, client, call, partial(client.get_prompt, call.tool, arguments))

    async def list_resources(self, ctx: Any) -> list[Any]:
        return (await self.pool_for(self.user_of(ctx))).offered_resources()

    async def list_resource_templates(self, ctx: Any) -> list[Any]:
        return (await self.pool_for(self.user_of(ctx))).offered_templates()

    async def read_resource(self, ctx: Any, uri: str, state: str | None, responses: dict[str, Any]) -> Any:
        user = self.user_of(ctx)
        if state is not None:
            return await self._answer_round(ctx, user, state, responses, RESOURCES_READ)
        pool = await self.pool_for(user)
        server = pool.resource_server(uri)
        if server is None or server not in pool.clients:
            raise sdk.not_found(f"resource {uri!r}", pool.unavailable())
        call = DownstreamCall(ctx, user, server, uri, method=RESOURCES_READ)
        client = pool.clients[server]
        return await self._request(pool, client, call, partial(client.read_resource, uri))

    async def _request(
        self, pool: Pool, client: ElicitClient, call: DownstreamCall, send: Callable[[], Awaitable[Any]]
    ) -> Any:
        """A prompt or resource request (`call.method`) sent upstream on `client`, with `call` in
        the book so its questions find it; for a 2026-07-28 client, held across rounds like a tool
        call. A lost upstream fails it as it fails a tool call (`failures.lost_upstream`).

        A question the gateway could not ask (no elicitation downstream, a guardrail) has no place
        in a prompt's or a read's result: the upstream's result (its fallback) is passed on as it
        is and the gateway logs one line; only when the upstream fails the request does the
        reason go to the client, after the upstream's own JSON-RPC error message."""
        method = call.method

        async def upstream() -> Any:
            with pool.books[call.server].track(call):
                try:
                    result = await send()
                except ServerOutputError as exc:
                    raise sdk.request_failed(broke(call, exc)) from None
                except Exception as exc:
                    lost = await lost_upstream(pool, client, call, exc)
                    failed = sdk.refused(lost, method) if lost is not None else exc
                    said = sdk.with_reason(failed, _unasked(call)) if call.refusals else failed
                    if said is exc:
                        raise
                    raise said from exc
            if call.refusals:
                logger.info("%s %s on %s passed on as is: %s", method, call.tool, call.server, _unasked(call))
            return result

        if is_modern(sdk.protocol_version(call.ctx)):
            return await self._start_held(call, upstream, method)
        return await upstream()

    async def serve_stdio(self, stop: Any = None) -> None:
        """Serve over stdin and stdout until end of file, or until `stop` (an anyio.Event) is set:
        that ends the session as end of file does, and a stop while the upstreams still start
        ends the wait for them (leaving the gateway stops them, a handshake in progress too)."""
        if self.config.users or self.config.oauth is not None:
            logger.info("over stdio there is one local user: the users/oauth of the file apply over HTTP")
        if stop is None:
            await self.pool_for(LOCAL_USER)  # start the upstreams before the client lists tools
        else:
            async with anyio.create_task_group() as tg:

                async def start_upstreams() -> None:
                    await self.pool_for(LOCAL_USER)
                    tg.cancel_scope.cancel()

                tg.start_soon(start_upstreams)
                await stop.wait()
                tg.cancel_scope.cancel()
            if stop.is_set():
                return
        await sdk.serve_stdio(self.server, stop)

    async def serve_http(
        self, host: str, port: int, started: Any = None, stop: Any = None, sock: Any = None
    ) -> None:
        """Streamable HTTP on `host`:`port` (or on `sock`, a socket already bound there)."""
        await sdk.serve_http(
            self.server,
            host,
            port,
            self.config.users,
            started=started,
            stop=stop,
            oauth=self.config.oauth,
            sock=sock,
        )

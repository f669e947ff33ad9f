"""Gateway state shared by replicas through Redis: a 2026-07-28 round started on one replica ends on another.

Several gateway processes behind one address share, with a Redis URL configured:

- the `requestState` sealing keys (the SDK's boundary), so any replica opens a state another sealed;
- a record per state handed to a 2026-07-28 client, `{prefix}gw:state:<state>` ->
  (user, home replica, upstream server, tool, the upstream's elicitationId for a URL round),
  kept `HOLD_WAIT_SECONDS`: a retry at any replica finds it, bound to the same user;
- single use, through the project's `RedisReplayGuard`, so a state spent on one replica is refused
  on every other.

What cannot move: the upstream call itself is an open request in the memory of the replica that
started it (its "home"; a pushing upstream waits on that connection). A retry that arrives elsewhere
is forwarded to the home replica over Redis pub/sub, and the home replica's reply (the next question
under a fresh state, or the result) is returned by the replica the client reached. When no replica
listens on the home channel any more (it stopped), the client is told at once to call the tool again.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from mcp_elicit.gateway.holds import HOLD_WAIT_SECONDS
from mcp_elicit.server.replay import RedisReplayGuard

__all__ = [
    "REDIS_RETRY_FIRST_PAUSE_SECONDS",
    "REDIS_RETRY_MAX_PAUSE_SECONDS",
    "REPLICA_ACK_SECONDS",
    "REPLICA_WAIT_SECONDS",
    "SharedState",
    "StateRecord",
]

logger = logging.getLogger("mcp_elicit.gateway")

# How long a replica waits for the home replica's reply to a forwarded retry (the held upstream
# call may be waiting on a page the person is still on, as a local retry would).
REPLICA_WAIT_SECONDS: Final = 600.0
# How long a replica waits for the home replica to acknowledge a forwarded retry: a replica that
# stopped without closing its Redis connection is then reported as stopped, not waited for.
REPLICA_ACK_SECONDS: Final = 5.0
# A replica that loses Redis keeps serving (what needs no other replica goes on) and subscribes
# again: first after this pause, then after pauses doubling up to the next, for as long as it runs.
REDIS_RETRY_FIRST_PAUSE_SECONDS: Final = 0.1
REDIS_RETRY_MAX_PAUSE_SECONDS: Final = 5.0
# One Redis command: connecting and each reply bounded (a black-holed Redis fails the request,
# never hangs it), and tried this many times more on a broken connection (one Redis dropped is
# reconnected at the next command).
REDIS_COMMAND_TIMEOUT_SECONDS: Final = 5.0
REDIS_COMMAND_RETRIES: Final = 3
# The subscription has no reply to wait for; it is pinged when idle this often so that a dead
# connection is found (then `run` subscribes again).
REDIS_HEALTH_CHECK_SECONDS: Final = 30

# The home replica's answer to a forwarded retry: {"kind": "question"|"done"|"gone"|"timeout", ...}
Reply = dict[str, Any]
OnAnswer = Callable[[str, str, Any], Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class StateRecord:
    """What any replica knows about a state it did not mint."""

    user: str
    home: str  # the replica holding the upstream call
    server: str
    tool: str
    upstream_id: str | None = None  # a URL round: the upstream's elicitationId


class SharedState:
    """The Redis side of the gateway's 2026-07-28 rounds (one per gateway process)."""

    def __init__(
        self,
        redis: Any,
        state_keys: Sequence[bytes],
        *,
        prefix: str = "mcp-elicit:",
        replica: str | None = None,
        clock: Callable[[], float] = time.time,
        listener: Any = None,
    ) -> None:
        if not state_keys:
            raise ValueError("replicas need shared requestState keys")
        self.redis = redis
        self.listener = listener if listener is not None else redis  # the client that subscribes
        self.state_keys = list(state_keys)
        self.prefix = f"{prefix}gw:"
        self.replica = replica or secrets.token_hex(8)
        self.guard = RedisReplayGuard(redis, prefix=f"{self.prefix}used:")
        self.listening = anyio.Event()  # set while subscribed; a fresh one after Redis is lost
        self.down = _unreachable()  # what this client raises while Redis cannot be reached
        self._clock = clock
        self._replies: dict[str, MemoryObjectSendStream[Reply]] = {}
        self._pubsub: Any = None

    def _key(self, state: str) -> str:
        return f"{self.prefix}state:{state}"

    def _channel(self, replica: str) -> str:
        return f"{self.prefix}replica:{replica}"

    async def record(self, state: str, record: StateRecord) -> None:
        await self.redis.set(self._key(state), json.dumps(asdict(record)), ex=int(HOLD_WAIT_SECONDS) + 1)

    async def claim(self, state: str, user: str) -> StateRecord | None:
        """The record of `state`, spent (single use across replicas); None when unknown, used,
        expired or another user's. Another user's attempt does not spend it."""
        raw = await self.redis.get(self._key(state))
        if raw is None:
            return None
        try:
            record = StateRecord(**json.loads(raw))
        except (ValueError, TypeError):
            return None
        if record.user != user:
            return None
        now = self._clock()
        if not await self.guard.consume(state, now + HOLD_WAIT_SECONDS, now):
            return None
        await self.redis.delete(self._key(state))
        return record

    async def forward(self, record: StateRecord, state: str, answer: Any) -> Reply | None:
        """Hand a retry's answer to the home replica; its reply, or None when no replica listens
        there any more."""
        request = secrets.token_urlsafe(12)
        send, receive = anyio.create_memory_object_stream[Reply](2)
        self._replies[request] = send
        message = {"op": "answer", "state": state, "user": record.user, "answer": answer}
        message.update(reply_to=self.replica, request=request)
        try:
            if not await self.redis.publish(self._channel(record.home), json.dumps(message)):
                return None
            acked = False
            with anyio.move_on_after(REPLICA_ACK_SECONDS):
                await receive.receive()  # the home replica's acknowledgement
                acked = True
            if not acked:
                return None
            with anyio.move_on_after(REPLICA_WAIT_SECONDS):
                return await receive.receive()
            return {"kind": "timeout"}
        finally:
            del self._replies[request]
            send.close()
            receive.close()

    async def subscribe(self) -> None:
        """Subscribe to this replica's channel (an unreachable Redis fails here, before serving)."""
        if self._pubsub is None:
            pubsub = self.listener.pubsub()
            try:
                await pubsub.subscribe(self._channel(self.replica))
            except BaseException:
                with anyio.CancelScope(shield=True), contextlib.suppress(*self.down):
                    await pubsub.aclose()
                raise
            self._pubsub = pubsub
            self.listening.set()

    async def run(self, on_answer: OnAnswer) -> None:
        """Listen on this replica's channel until cancelled: forwarded retries for the calls held
        here (each answered by `on_answer(state, user, answer)` in a task of its own) and the
        replies to this replica's own forwards. A lost Redis is one log line, then this replica
        subscribes again (with pauses, `REDIS_RETRY_*`) while answers already taken carry on."""
        pause = REDIS_RETRY_FIRST_PAUSE_SECONDS
        lost = False
        async with anyio.create_task_group() as tg:
            while True:
                try:
                    await self.subscribe()
                    if lost:
                        logger.warning("Redis is reachable again: this replica takes forwarded retries again")
                        lost, pause = False, REDIS_RETRY_FIRST_PAUSE_SECONDS
                    await self._listen(tg, on_answer)
                except self.down as exc:
                    if not lost:
                        logger.warning(
                            "lost Redis (%s): rounds started on other replicas cannot continue here "
                            "until it is back; trying again",
                            type(exc).__name__,
                        )
                    lost = True
                await self._unsubscribe()
                await anyio.sleep(pause)
                pause = min(pause * 2, REDIS_RETRY_MAX_PAUSE_SECONDS)

    async def _listen(self, tg: TaskGroup, on_answer: OnAnswer) -> None:
        pubsub = self._pubsub
        try:
            async for message in pubsub.listen():
                data = _message(message)
                if data.get("op") == "reply":
                    waiting = self._replies.get(str(data.get("request")))
                    if waiting is not None:
                        with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError):
                            waiting.send_nowait(data)
                elif data.get("op") == "answer":
                    tg.start_soon(self._answer, on_answer, data)
        finally:
            with anyio.CancelScope(shield=True):
                await self._unsubscribe()

    async def _unsubscribe(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        if self.listening.is_set():
            self.listening = anyio.Event()
        if pubsub is not None:
            with contextlib.suppress(*self.down):
                await pubsub.aclose()

    async def _answer(self, on_answer: OnAnswer, data: dict[str, Any]) -> None:
        channel = self._channel(str(data.get("reply_to")))
        ack = {"op": "reply", "request": data.get("request"), "kind": "ack"}
        try:
            await self.redis.publish(channel, json.dumps(ack))
            try:
                reply = await on_answer(str(data.get("state")), str(data.get("user")), data.get("answer"))
            except Exception as exc:  # the forwarding replica must hear back, never hang
                logger.info("a forwarded retry failed here: %s", type(exc).__name__)
                reply = {"kind": "gone"}
            reply.update(op="reply", request=data.get("request"))
            await self.redis.publish(channel, json.dumps(reply))
        except self.down as exc:  # the forwarding replica's own bound tells its client
            logger.info("a forwarded retry's reply was not sent: Redis: %s", type(exc).__name__)


def connect(url: str) -> tuple[Any, Any]:
    """Two Redis clients for `url`: one for commands (bounded, retried) and one for the replica's
    subscription, which waits without a bound for the next message."""
    import redis.asyncio
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff

    backoff = ExponentialBackoff(cap=REDIS_RETRY_MAX_PAUSE_SECONDS, base=REDIS_RETRY_FIRST_PAUSE_SECONDS)
    retry = Retry(backoff, REDIS_COMMAND_RETRIES)
    bound = REDIS_COMMAND_TIMEOUT_SECONDS
    commands = redis.asyncio.from_url(url, retry=retry, socket_timeout=bound, socket_connect_timeout=bound)
    listener = redis.asyncio.from_url(
        url, retry=retry, socket_connect_timeout=bound, health_check_interval=REDIS_HEALTH_CHECK_SECONDS
    )
    return commands, listener


def _unreachable() -> tuple[type[Exception], ...]:
    from redis.exceptions import RedisError  # the `redis` extra: replicas need it

    return (RedisError, OSError)


def _message(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict) or message.get("type") != "message":
        return {}
    try:
        data = json.loads(message["data"])
    except (ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}

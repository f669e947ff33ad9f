"""A TCP relay on 127.0.0.1 in front of the machine's real Redis that a test can cut and restore:
Redis lost and back as a network fault does it (every open connection closed, new ones closed at
once), without stopping the Redis that other tests share."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import anyio
from anyio.abc import SocketStream, TaskStatus


class RedisRelay:
    def __init__(self, redis_url: str) -> None:
        target = urlsplit(redis_url)
        self.host, self.target_port = target.hostname or "127.0.0.1", target.port or 6379
        self.db = target.path or "/0"
        self.port = 0
        self.is_cut = False
        self._open: set[anyio.CancelScope] = set()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}{self.db}"

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        task_status.started()
        await listener.serve(self._relay)

    def cut(self) -> None:
        self.is_cut = True
        for scope in self._open:
            scope.cancel()

    def restore(self) -> None:
        self.is_cut = False

    async def _relay(self, client: SocketStream) -> None:
        async with client:
            if self.is_cut:
                return
            with anyio.CancelScope() as scope:
                self._open.add(scope)
                try:
                    upstream = await anyio.connect_tcp(self.host, self.target_port)
                    async with upstream, anyio.create_task_group() as tg:
                        tg.start_soon(_pipe, client, upstream, tg.cancel_scope)
                        tg.start_soon(_pipe, upstream, client, tg.cancel_scope)
                finally:
                    self._open.discard(scope)


async def _pipe(source: SocketStream, sink: SocketStream, both: Any) -> None:
    try:
        async for chunk in source:
            await sink.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    both.cancel()  # one side closed: the relayed connection ends on both

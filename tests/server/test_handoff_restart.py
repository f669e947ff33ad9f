"""A server restart while a 2025-11-25 call waits on its page, with the hand-offs and the vault in
Redis: the page the person agreed to open still takes the key, and the retried call finds it.

The restart is real as far as the state goes: the first server stops the way `serve-reference
--transport http` does on SIGTERM (`sdk_serving.serve_http` with its stop event: the open event streams
end, then the lifespan), and a second one with fresh objects starts on the same port, sharing
only Redis, the link secret and the vault keys, as replicas and restarts do.
"""

from __future__ import annotations

import socket
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_elicit.server import ApiKeyHandoff, Handoffs, IdentityPolicy, KeyRing, TokenVault, sdk_serving
from mcp_elicit.server.stores import PENDING, HandoffRecord, RedisHandoffStore
from mcp_elicit.server.vault import RedisVaultStorage
from tests.server.handoff_support import Browser, LateCallback, mcp_client, redis_client
from tests.server.test_handoff_eras import DEV, build
from tests.support import text_of

pytestmark = pytest.mark.anyio

BOUND_SECONDS = 30.0
FLOW = ApiKeyHandoff(provider="github", title="GitHub")
SHARED_SECRET = b"the same 32+ random bytes on every replica and restart"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class NotingStore(RedisHandoffStore):
    """The Redis store, saying when a tool starts waiting on a page (so the test stops the server
    exactly then, with no polling)."""

    def __init__(self, redis: Any, prefix: str) -> None:
        super().__init__(redis, prefix)
        self.waiting = anyio.Event()

    async def wait(self, handoff_id: str, timeout: float) -> HandoffRecord | None:
        self.waiting.set()
        return await super().wait(handoff_id, timeout)


def bound_socket(port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(16)
    return sock


async def test_a_page_survives_a_restart_while_its_2025_call_waits_and_the_retried_call_finds_its_key() -> (
    None
):
    keys = KeyRing.generate()
    async with redis_client() as (redis, prefix):

        def replica() -> tuple[Any, Handoffs]:
            hs = Handoffs(
                vault=TokenVault(keys, RedisVaultStorage(redis, f"{prefix}vault:")),
                secret=SHARED_SECRET,
                store=NotingStore(redis, f"{prefix}handoff:"),
                identity=IdentityPolicy(dev_user="dev"),
                flows=[FLOW],
            )
            server, _ = build(hs)
            return server, hs

        first, first_hs = replica()
        sock = bound_socket()
        port = sock.getsockname()[1]
        url = f"http://127.0.0.1:{port}/mcp"
        stop = anyio.Event()
        asked = LateCallback()  # accepts the URL request at once, without opening the page
        ended: list[BaseException] = []
        # The client goes as a process does when its call fails (`mcp-elicit call`): its
        # connections close, it sends no DELETE. So the waiting tool hears "client gone".
        http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=60.0))
        transport = streamable_http_client(url, http_client=http, terminate_on_close=False)
        with anyio.fail_after(BOUND_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(sdk_serving.serve_http, first, sock, "127.0.0.1", stop)
                async with Client(transport, mode="legacy", elicitation_callback=asked) as client:
                    async with anyio.create_task_group() as calls:

                        async def call() -> None:
                            try:
                                await client.call_tool("repos_waiting", {})
                            except Exception as exc:  # the server stopped under the call
                                ended.append(exc)

                        calls.start_soon(call)
                        assert isinstance(first_hs.store, NotingStore)
                        await first_hs.store.waiting.wait()  # accepted; the tool waits on the page
                        stop.set()  # SIGTERM, as the command sees it
                    await http.aclose()
        assert ended  # the call did not complete
        [request] = asked.seen
        hid = request["elicitationId"]
        assert (await first_hs.store.get(hid)).status == PENDING  # type: ignore[union-attr]

        second, second_hs = replica()
        with anyio.fail_after(BOUND_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(sdk_serving.serve_http, second, bound_socket(port), "127.0.0.1", anyio.Event())
                page = await Browser().enter_key(request["url"])
                assert page.status == 200
                assert await second_hs.vault.get(DEV.key, "github") is not None
                async with mcp_client(url, "legacy", LateCallback()) as client:
                    result = await client.call_tool("repos", {})  # the retried call
                assert text_of(result) == "3 repositories"
                tg.cancel_scope.cancel()

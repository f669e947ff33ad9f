"""An HTTP upstream that stays idle and sends no keep-alives is not lost: its standing
(server-to-client) stream, silent past the read timeout, ends quietly and is opened again, however
many times, with no warning, no reconnection and no list changes to the clients (found by a new
user: after two read timeouts, about ten minutes, the gateway took such an upstream as lost). The
read timeout is made short here instead of waited for.

Real parts: the raw-SDK peer over streamable HTTP in a subprocess (it sends nothing on its stream
while idle), the gateway in-process over streamable HTTP, the SDK's `Client` downstream."""

from __future__ import annotations

import logging

import anyio
import pytest

from mcp_elicit.client import sdk_transport
from mcp_elicit.client.http_watch import SDK_STREAM_ATTEMPTS, LinkWatch
from tests.gateway.support import http_client, http_gateway
from tests.gateway.test_gateway_lost_http_upstream import config, http_upstream, text
from tests.gateway.test_gateway_lost_upstream import BOUND_SECONDS, Changes

pytestmark = pytest.mark.anyio

IDLE_SECONDS = 0.5  # the read timeout, for this test


class QuietEnds:
    """Counts the listening streams that ended without a failure (`LinkWatch.stream_ended`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self._seen = anyio.Event()
        ended = LinkWatch.stream_ended

        def spy(watch: LinkWatch) -> None:
            ended(watch)
            self.count += 1
            self._seen.set()

        monkeypatch.setattr(LinkWatch, "stream_ended", spy)

    async def wait_for(self, count: int) -> None:
        while self.count < count:
            self._seen = anyio.Event()
            await self._seen.wait()


async def test_an_idle_http_upstream_without_keep_alives_is_not_taken_as_lost_past_the_read_timeout(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_elicit.gateway")
    monkeypatch.setattr(sdk_transport, "HTTP_READ_TIMEOUT_SECONDS", IDLE_SECONDS)
    changes, ends = Changes(), QuietEnds(monkeypatch)
    async with (
        http_upstream() as upstream,
        http_gateway(config(upstream.url)) as (gw, url),
        http_client(url, None, "legacy", message_handler=changes) as client,
    ):
        with anyio.fail_after(BOUND_SECONDS):
            await client.list_tools()  # the user's pool connects
            link = gw.pools["local"].clients["web"].link
            assert link is not None
            async with anyio.create_task_group() as tg:

                async def until(event: object) -> None:
                    await event()  # type: ignore[operator]
                    tg.cancel_scope.cancel()

                tg.start_soon(until, link.lost.wait)  # (before: lost after SDK_STREAM_ATTEMPTS)
                tg.start_soon(until, lambda: ends.wait_for(SDK_STREAM_ATTEMPTS + 1))  # idle, more often
            assert not link.lost.is_set()
            result = await client.call_tool("process_id", {})
            assert int(text(result)) == upstream.process.pid
    assert changes.count == 0  # the clients were never told its tools left
    gateway = [r for r in caplog.records if r.name == "mcp_elicit.gateway"]
    assert [r for r in gateway if r.levelno >= logging.WARNING] == []
    assert not [r for r in gateway if "reconnecting" in r.getMessage()]

"""An HTTP upstream (an `mcpServers` entry with a `url`) that goes away is found gone by the
gateway's own transport, with no call needed: nothing answers at its address any more, or the
server there no longer knows the gateway's session (it was restarted). Its tools leave the list
(the client is told), a call meanwhile gets an error naming it, and once a server answers at the
address again it is reconnected at a request and its tools return (told again).

Real parts: the raw-SDK peer served over streamable HTTP on 127.0.0.1 by a subprocess, killed with
SIGKILL and started again on the same port; the gateway in-process over streamable HTTP; the SDK's
`Client` downstream. The pool's clock is a fake one where a reconnection's wait matters."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import mcp_types as t
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.gateway.support import PEERS, http_client, http_gateway
from tests.gateway.test_gateway_lost_upstream import BOUND_SECONDS, Changes

pytestmark = pytest.mark.anyio


class Upstream:
    """The raw-SDK peer over streamable HTTP, in a process of its own."""

    def __init__(self, process: Process, url: str) -> None:
        self.process, self.url = process, url
        self.port = int(url.rsplit(":", 1)[1].split("/", 1)[0])

    async def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)  # no goodbye: its connections just break
        await self.process.wait()


@asynccontextmanager
async def http_upstream(port: int = 0, env: dict[str, str] | None = None) -> AsyncIterator[Upstream]:
    """The peer listening on 127.0.0.1:`port` (0: a free one; the port is shared, so a second
    peer can listen on it before the first is killed), killed on exit if still running; `env`
    added to its environment."""
    command = [sys.executable, PEERS, "sdk", "http", str(port)]
    process = await anyio.open_process(command, stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    try:
        with anyio.fail_after(BOUND_SECONDS):
            assert process.stdout is not None
            line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 1000)
        yield Upstream(process, line.decode().split()[1])
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
        await process.aclose()


def config(url: str) -> str:
    return json.dumps({"mcpServers": {"web": {"url": url}}})


def text(result: Any) -> str:
    return str(result.content[0].text)


async def tool_names(client: Any) -> list[str]:
    return [t.name for t in (await client.list_tools()).tools]


class Through:
    """The peer as the gateway's upstream `web`, the gateway, and a downstream client."""

    def __init__(self, first: Upstream, gateway: Any, client: Any, changes: Changes) -> None:
        self.first, self.gateway, self.client, self.changes = first, gateway, client, changes

    async def pid(self) -> int:
        """The pid of the upstream process the gateway reaches now (the call must succeed)."""
        result = await self.client.call_tool("process_id", {})
        assert result.is_error is not True
        return int(text(result))


@asynccontextmanager
async def through_gateway() -> AsyncIterator[Through]:
    """A gateway fronting a fresh peer, with a client whose first call reached that peer; every
    step after it bounded by BOUND_SECONDS."""
    changes = Changes()
    async with (
        http_upstream() as first,
        http_gateway(config(first.url)) as (gw, url),
        http_client(url, None, "legacy", message_handler=changes) as client,
    ):
        with anyio.fail_after(BOUND_SECONDS):
            through = Through(first, gw, client, changes)
            assert await through.pid() == first.process.pid
            yield through


async def test_a_killed_http_upstream_leaves_unasked_and_rejoins_once_started_again_on_its_port() -> None:
    now = [1000.0]
    async with through_gateway() as t:
        pool = t.gateway.pools["local"]
        pool.clock = lambda: now[0]
        await t.first.kill()
        await t.changes.wait_for(1)  # no request needed: the gateway's own stream found it gone
        assert "process_id" not in await tool_names(t.client)  # this request tried it once
        result = await t.client.call_tool("process_id", {})  # meanwhile: an error naming it
        assert result.is_error is True
        assert "'web'" in text(result)
        async with http_upstream(t.first.port) as second:
            now[0] += pool.lost["web"].delay  # the wait after the failed attempt is over
            assert await t.pid() == second.process.pid  # reconnects it first
            await t.changes.wait_for(2)  # its tools are back
            assert "process_id" in await tool_names(t.client)
    assert t.changes.count == 2


async def test_an_http_upstream_restarted_with_no_gap_is_reconnected_not_left_on_its_old_session() -> None:
    """The new server takes requests at once, but not the old session (HTTP 404): before, every
    call failed with "Session not found" until the gateway restarted."""
    async with through_gateway() as t, http_upstream(t.first.port) as second:
        await t.first.kill()
        await t.changes.wait_for(1)  # its stream, opened again, met the forgotten session
        assert await t.pid() == second.process.pid  # reconnects it first
        await t.changes.wait_for(2)
    assert t.changes.count == 2


async def test_a_call_meeting_a_restarted_http_upstreams_old_session_fails_clearly_and_the_next_passes() -> (
    None
):
    async with through_gateway() as t, http_upstream(t.first.port) as second:
        await t.first.kill()
        result = await t.client.call_tool("process_id", {})  # at once: on the old session
        if result.is_error:  # (unless the gateway's stream found the session gone first)
            assert "'web'" in text(result)
            await t.changes.wait_for(1)
            result = await t.client.call_tool("process_id", {})
        assert int(text(result)) == second.process.pid
        await t.changes.wait_for(2)


@pytest.mark.parametrize("restarted", [False, True], ids=["unreachable", "restarted"])
async def test_a_gateway_stopped_right_after_its_http_upstream_died_says_nothing_of_ending_its_session(
    restarted: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by a new user: stopped before its stream found the upstream gone, the gateway's log
    ended with the SDK's warning "Session termination failed: All connection attempts failed" (or
    ": 404" for a server restarted meanwhile); there is no session left to end."""
    caplog.set_level(logging.INFO)
    async with http_upstream() as first, AsyncExitStack() as later:
        async with http_gateway(config(first.url)) as (_, url), http_client(url, None, "legacy") as client:
            with anyio.fail_after(BOUND_SECONDS):
                assert int(text(await client.call_tool("process_id", {}))) == first.process.pid
                if restarted:  # listening on the same port before the first dies
                    await later.enter_async_context(http_upstream(first.port))
                await first.kill()
        # the gateway stopped at once (its stream opens again only after a pause), the second
        # upstream still listening
        said = [r.getMessage() for r in caplog.records if r.name.startswith("mcp.client")]
    assert not [line for line in said if "termination" in line]
    assert all(r.exc_info is None for r in caplog.records)


async def test_an_http_upstream_whose_stream_was_given_up_after_a_hiccup_is_reconnected_and_heard_again() -> (
    None
):
    """Found by a new user: after a proxy's hiccup (the upstream's server-to-client stream ended,
    then two 503s) the SDK gave that stream up without a word, and the gateway never heard the
    upstream again on its own: a -32042 page's completion never came, and the call waited on."""
    changes, asked = Changes(), anyio.Event()

    async def accept(ctx: Any, params: Any) -> t.ElicitResult:
        asked.set()
        return t.ElicitResult(action="accept")

    async with (
        http_upstream() as upstream,
        http_gateway(config(upstream.url)) as (_, url),
        http_client(url, None, "legacy", accept, message_handler=changes) as client,
    ):
        with anyio.fail_after(BOUND_SECONDS):
            assert text(await client.call_tool("listening", {})) == "1"  # the gateway's stream
            await client.call_tool("blip", {})
            await changes.wait_for(1)  # its stream given up: taken as a loss
            results: list[Any] = []

            async def call() -> None:
                results.append(await client.call_tool("need_page", {}))  # reconnects it first

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await asked.wait()
                await client.call_tool("finish_page", {})  # sent on the upstream's own stream
    assert text(results[0]) == "page done"

"""An upstream whose connection dies after the handshake: its tools leave the gateway's list (the
client is told with `notifications/tools/list_changed`), the next request reconnects it once, a
failed reconnection waits a bounded, doubling delay before the next, and once back its tools return
(told again); one that dies again soon after each reconnection (flapping) waits longer each time,
until it stays up (HTTP upstreams: test_gateway_lost_http_upstream.py). Real parts: stdio upstreams
as subprocesses killed with SIGKILL, the gateway in-process over streamable HTTP, the SDK's `Client`
downstream; the pool's clock is a fake one."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.subscriptions import ToolsListChanged

from mcp_elicit.gateway import pool as pool_module
from mcp_elicit.gateway.failures import process_end
from mcp_elicit.gateway.pool import (
    RECONNECT_FIRST_DELAY_SECONDS,
    RECONNECT_MAX_DELAY_SECONDS,
    RECONNECT_STABLE_SECONDS,
)
from tests.gateway.support import PEERS, http_client, http_gateway

pytestmark = pytest.mark.anyio

BOUND_SECONDS = 60.0
# The raw-SDK peer, unless a marker file exists: then it exits at once with status 4. Each start
# adds a line to a file, so the test counts the reconnection attempts.
WRAPPER = """
import os, runpy, sys
marker, starts, peers = sys.argv[1:4]
with open(starts, "a") as f:
    f.write("start\\n")
if os.path.exists(marker):
    print("marked down", file=sys.stderr)
    sys.exit(4)
sys.argv = [peers, "sdk"]
runpy.run_path(peers, run_name="__main__")
"""


class Changes:
    """A message handler counting `notifications/tools/list_changed`, with an event per count."""

    def __init__(self) -> None:
        self.count = 0
        self._seen = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            self.count += 1
            self._seen.set()

    async def wait_for(self, count: int) -> None:
        with anyio.fail_after(BOUND_SECONDS):
            while self.count < count:
                self._seen = anyio.Event()
                await self._seen.wait()


def config(tmp_path: Path, alone: bool = False) -> str:
    """The wrapped raw-SDK upstream, beside a FastMCP one unless `alone`."""
    wrapped = [str(tmp_path / "down"), str(tmp_path / "starts"), PEERS]
    servers = {"sdk": {"command": sys.executable, "args": ["-c", WRAPPER, *wrapped]}}
    if not alone:
        servers["fm"] = {"command": sys.executable, "args": [PEERS, "fastmcp"]}
    return json.dumps({"mcpServers": servers})


def starts(tmp_path: Path) -> int:
    return len((tmp_path / "starts").read_text().splitlines())


async def kill_upstream(client: Any) -> int:
    """Kill the upstream behind `process_id` (SIGKILL: no goodbye on the pipe); its pid."""
    pid = int((await client.call_tool("process_id", {})).content[0].text)
    os.kill(pid, signal.SIGKILL)
    return pid


@pytest.mark.parametrize("alone", [False, True], ids=["beside-another", "the-only-upstream"])
async def test_a_killed_upstream_is_reconnected_at_the_next_call_and_the_client_told_both_times(
    tmp_path: Path, alone: bool
) -> None:
    """Also when it is the gateway's only upstream (nothing else keeps its user's pool running)."""
    changes = Changes()
    async with (
        http_gateway(config(tmp_path, alone)) as (_, url),
        http_client(url, None, "legacy", message_handler=changes) as client,
    ):
        with anyio.fail_after(BOUND_SECONDS):
            killed = await kill_upstream(client)
            await changes.wait_for(1)  # its tools left the list
            result = await client.call_tool("process_id", {})  # reconnects it first
            assert result.is_error is not True
            assert int(result.content[0].text) != killed  # a new process
            await changes.wait_for(2)  # its tools are back
            assert "process_id" in [t.name for t in (await client.list_tools()).tools]
    assert starts(tmp_path) == 2


async def test_an_upstream_that_stays_down_is_dropped_and_retried_after_a_doubling_bounded_delay(
    tmp_path: Path,
) -> None:
    now = [1000.0]
    changes = Changes()
    async with (
        http_gateway(config(tmp_path)) as (gw, url),
        http_client(url, None, "legacy", message_handler=changes) as client,
    ):
        with anyio.fail_after(BOUND_SECONDS):
            await client.list_tools()  # the user's pool is opened
            pool = gw.pools["local"]
            pool.clock = lambda: now[0]
            (tmp_path / "down").write_text("")
            await kill_upstream(client)
            await changes.wait_for(1)
            # the next request tries once; the upstream refuses: its tools stay out, the reason said
            names = [t.name for t in (await client.list_tools()).tools]
            assert "process_id" not in names
            assert "hello" in names  # the other upstream serves on
            assert starts(tmp_path) == 2
            result = await client.call_tool("process_id", {})
            assert result.is_error is True
            assert "'sdk' (exited with status 4" in result.content[0].text
            assert starts(tmp_path) == 2  # within the delay: not tried again
            delays = []
            for _ in range(8):  # each failure doubles the wait, up to the maximum
                delays.append(pool.lost["sdk"].delay)
                now[0] += pool.lost["sdk"].delay
                await client.list_tools()
            assert delays[:3] == [RECONNECT_FIRST_DELAY_SECONDS, 2 * RECONNECT_FIRST_DELAY_SECONDS, 4.0]
            assert max(delays) == RECONNECT_MAX_DELAY_SECONDS
            assert starts(tmp_path) == 10
            (tmp_path / "down").unlink()
            now[0] += pool.lost["sdk"].delay
            result = await client.call_tool("process_id", {})
            assert result.is_error is not True
            await changes.wait_for(2)
    assert changes.count == 2


async def test_an_upstream_dying_soon_after_each_reconnection_waits_longer_each_time_until_it_stays_up(
    tmp_path: Path,
) -> None:
    now = [1000.0]
    changes = Changes()
    async with (
        http_gateway(config(tmp_path)) as (gw, url),
        http_client(url, None, "legacy", message_handler=changes) as client,
    ):
        with anyio.fail_after(BOUND_SECONDS):
            await client.list_tools()
            pool = gw.pools["local"]
            pool.clock = lambda: now[0]
            await kill_upstream(client)  # the first loss: tried again at the next request
            await changes.wait_for(1)
            assert (await client.call_tool("process_id", {})).is_error is not True
            await changes.wait_for(2)
            waits = []
            for flap in range(4):  # back, then dead again at once (the clock has not moved)
                await kill_upstream(client)
                await changes.wait_for(3 + 2 * flap)
                waits.append(pool.lost["sdk"].delay)
                result = await client.call_tool("process_id", {})  # within its wait: not tried
                assert result.is_error is True
                assert starts(tmp_path) == 2 + flap
                now[0] += pool.lost["sdk"].delay
                assert (await client.call_tool("process_id", {})).is_error is not True  # tried: back
                await changes.wait_for(4 + 2 * flap)
            first = RECONNECT_FIRST_DELAY_SECONDS
            assert waits == [first, 2 * first, 4 * first, 8 * first]
            now[0] += RECONNECT_STABLE_SECONDS  # up long enough: its wait starts over
            await kill_upstream(client)
            await changes.wait_for(11)
            assert (await client.call_tool("process_id", {})).is_error is not True  # tried at once
    assert starts(tmp_path) == 7  # the first, then six reconnections: none within a wait


async def test_a_call_whose_upstream_dies_during_it_gets_a_tool_error_saying_so_and_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_elicit.gateway")
    async with http_gateway(config(tmp_path)) as (_, url), http_client(url, None, "legacy") as client:
        with anyio.fail_after(BOUND_SECONDS):
            pid = int((await client.call_tool("process_id", {})).content[0].text)

            async def started(progress: float, total: float | None, message: str | None) -> None:
                os.kill(pid, signal.SIGKILL)  # the call is under way upstream

            result = await client.call_tool("slow", {}, progress_callback=started)
    killed = process_end(-signal.SIGKILL)  # the process's end, not only "its connection closed"
    assert result.is_error is True
    assert "'sdk'" in result.content[0].text  # worded as a prompt's: test_gateway_lost_requests.py
    assert killed in result.content[0].text
    gateway = [r for r in caplog.records if r.name == "mcp_elicit.gateway"]
    assert all(r.exc_info is None for r in gateway)  # no traceback
    # one line, the same cause whether the call's closed connection or the process's exit came first
    [lost] = [r for r in gateway if r.levelno == logging.WARNING]
    assert isinstance(lost.args, tuple)
    assert lost.args[1] == killed
    assert lost.getMessage().endswith("; reconnecting at the next request")


async def test_a_2026_client_listening_is_told_when_a_killed_upstream_leaves_and_comes_back(
    tmp_path: Path,
) -> None:
    async with http_gateway(config(tmp_path)) as (_, url), http_client(url, None, "2026-07-28") as client:
        with anyio.fail_after(BOUND_SECONDS):
            async with client.listen(tools_list_changed=True) as subscription:
                events = aiter(subscription)
                killed = await kill_upstream(client)
                assert isinstance(await anext(events), ToolsListChanged)  # its tools left
                result = await client.call_tool("process_id", {})  # reconnects it first
                assert int(result.content[0].text) != killed
                assert isinstance(await anext(events), ToolsListChanged)  # they are back


async def test_an_upstream_that_failed_at_start_joins_at_a_later_request_once_it_can(tmp_path: Path) -> None:
    """A server down when the gateway starts (a remote one restarting) is tried again as a lost
    one is: not before the first delay, then at the next request; its tools join, clients told."""
    (tmp_path / "down").write_text("")
    changes = Changes()
    async with (
        http_gateway(config(tmp_path)) as (gw, url),
        http_client(url, None, "legacy", message_handler=changes) as client,
    ):
        with anyio.fail_after(BOUND_SECONDS):
            names = [t.name for t in (await client.list_tools()).tools]
            assert "process_id" not in names
            assert "hello" in names
            await client.list_tools()
            assert starts(tmp_path) == 1  # within the first delay: not tried again
            pool = gw.pools["local"]
            later = time.monotonic() + RECONNECT_FIRST_DELAY_SECONDS
            pool.clock = lambda: later
            (tmp_path / "down").unlink()
            await client.list_tools()  # the request that tries it again
            await changes.wait_for(1)
            assert "process_id" in [t.name for t in (await client.list_tools()).tools]
    assert starts(tmp_path) == 2


async def test_a_call_right_after_one_whose_upstream_died_reaches_the_upstream_started_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Found by a new user: the next call came while the dead connection was still closing, was
    sent on it, and failed with an internal error and a traceback in the gateway's log."""
    caplog.set_level(logging.INFO)
    async with http_gateway(config(tmp_path)) as (_, url), http_client(url, None, "legacy") as client:
        with anyio.fail_after(BOUND_SECONDS):
            pid = int((await client.call_tool("process_id", {})).content[0].text)

            async def started(progress: float, total: float | None, message: str | None) -> None:
                os.kill(pid, signal.SIGKILL)

            lost = await client.call_tool("slow", {}, progress_callback=started)
            again = await client.call_tool("process_id", {})  # at once: no wait for the close
    assert lost.is_error is True
    assert again.is_error is not True
    assert int(again.content[0].text) != pid  # the upstream started again
    assert starts(tmp_path) == 2
    assert all(r.exc_info is None for r in caplog.records)  # no traceback


# The raw-SDK peer once a marker file exists: until then it has not begun its handshake.
LATE = """
import os, runpy, sys, time
marker, peers = sys.argv[1:3]
while not os.path.exists(marker):
    time.sleep(0.05)
sys.argv = [peers, "sdk"]
runpy.run_path(peers, run_name="__main__")
"""


async def test_an_upstream_that_joins_after_the_first_listing_is_announced_to_the_clients(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a new user: a slow upstream's tools joined the gateway's list, but no client was
    told (`notifications/tools/list_changed`), so a desktop client never listed them."""
    monkeypatch.setattr(pool_module, "UPSTREAM_START_TIMEOUT_SECONDS", 0.5)
    marker = tmp_path / "go"
    late = {"command": sys.executable, "args": ["-c", LATE, str(marker), PEERS]}
    changes = Changes()
    async with (
        http_gateway(json.dumps({"mcpServers": {"late": late}})) as (_, url),
        http_client(url, None, "legacy", message_handler=changes) as client,
    ):
        with anyio.fail_after(BOUND_SECONDS):
            assert (await client.list_tools()).tools == []  # it has not answered yet
            marker.write_text("")
            await changes.wait_for(1)  # it joined, and the client is told
            assert "greet" in [t.name for t in (await client.list_tools()).tools]

"""Stopping a stdio server run by hand: Ctrl-C (SIGINT), SIGTERM and SIGHUP end it as end of file would.

`run_until_signalled(serve)` runs `serve(stop)` in a fresh event loop; the first SIGINT or SIGTERM
sets `stop` (the server's stdin then ends, see `stdin.py`: the session shuts down, open questions
end and upstream processes are reaped as when the client closes stdin) and the process exits
128 + the signal's number once `serve` returns: 130 after Ctrl-C, 143 after SIGTERM (129 after
SIGHUP, the terminal closing), what a shell
reports for a program the signal ended. A second signal while it stops exits at once with the
same status. A client that closes stdin still ends it with status 0.

A command serving HTTP runs uvicorn with `stop` (`serving.serve_uvicorn`) the same way: the
first signal starts uvicorn's graceful shutdown, and the exit status is the same.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from mcp_elicit.errors import InvalidArgument

__all__ = ["STOP_SIGNALS", "run_stdio", "run_until_signalled", "signal_exit_status"]

logger = logging.getLogger("mcp_elicit.server")

# SIGHUP too: the terminal a server was started in closing (a window shut, an SSH session lost)
# stops it as SIGTERM does, its trail closed, rather than Python's default of ending at once.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def signal_exit_status(signum: int) -> int:
    """The exit status a shell reports for a program ended by `signum` (128 + its number)."""
    return 128 + int(signum)


def _children() -> list[int]:
    """This process's child processes (Linux: /proc/self/task/*/children; elsewhere none known)."""
    found: list[int] = []
    for path in glob.glob("/proc/self/task/*/children"):
        with contextlib.suppress(OSError, ValueError):
            found += [int(pid) for pid in Path(path).read_text().split()]
    return found


def _exit_now(status: int) -> None:
    """Exit without waiting for anything (a second signal): end the child processes (a gateway's
    upstreams run in sessions of their own, so the terminal's Ctrl-C never reaches them, and
    one that ignores its stdin would outlive the gateway), flush what was said, then go."""
    for pid in _children():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    for stream in (sys.stderr, sys.stdout):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


def run_until_signalled(
    serve: Callable[[anyio.Event], Awaitable[None]], log: logging.Logger = logger
) -> None:
    """`anyio.run(serve, stop)` with `stop` set by the first SIGINT or SIGTERM (one INFO line on
    `log`); raises SystemExit with 128 + that signal's number once `serve` has returned (a second
    signal: at once). Returns normally when `serve` ends by itself (the client closed stdin)."""
    got: list[int] = []

    async def watch(stop: anyio.Event, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
            task_status.started()
            async for signum in signals:
                if got:
                    _exit_now(signal_exit_status(got[0]))
                got.append(signum)
                log.info("stopping on %s (again: at once)", signal.Signals(signum).name)
                stop.set()

    async def main() -> None:
        stop = anyio.Event()
        failed: list[Exception] = []
        async with anyio.create_task_group() as tg:
            await tg.start(watch, stop)
            try:
                await serve(stop)
            except Exception as exc:  # raised as itself below, not inside the group's ExceptionGroup
                failed.append(exc)
            tg.cancel_scope.cancel()
        if failed:
            raise failed[0]

    anyio.run(main)
    if got:
        raise SystemExit(signal_exit_status(got[0]))


def run_stdio(server: Any) -> None:
    """Serve `server`, the SDK's `MCPServer`, over stdin and stdout: return when the client closes
    stdin; after Ctrl-C or SIGTERM stop as end of file does and exit 130 or 143 (a second signal:
    at once). What `mcp-elicit serve-reference` does. The SDK's own `server.run("stdio")` ignores
    Ctrl-C until end of file (its stdin thread cannot be abandoned). A FastMCP server runs with its
    own `run()`: its lifespan is FastMCP's to start."""
    from mcp_elicit.server import sdk_fastmcp_server, sdk_serving

    if sdk_fastmcp_server(server):
        raise InvalidArgument("server", "a FastMCP server runs with its own run(); this takes an MCPServer")
    run_until_signalled(functools.partial(sdk_serving.serve_stdio, server))

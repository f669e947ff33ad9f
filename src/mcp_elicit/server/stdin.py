"""The process's stdin as lines a stop ends at once, as end of file would.

The SDK's stdio transport reads stdin in a worker thread it cannot abandon: cancelling it waits
until the next line or end of file, so a stdio server run by hand in a terminal ignores Ctrl-C
until Ctrl-D. `stdin_lines` reads in a daemon thread instead and ends its lines as soon as `stop`
is set; the transport (handed these lines in place of its own stdin) then shuts the session down
exactly as on end of file. The thread may stay blocked in `read(2)` after that: it holds only a
private duplicate of fd 0 and no Python lock, so the process exits without waiting for it.

While the lines are open, fd 0 points at the null device (as the SDK does), so a handler or a
child process reading stdin reads nothing of the wire; fd 0 is restored when they close.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["MAX_STDIN_LINE_BYTES", "StdinLines", "stdin_lines"]

_CHUNK = 65536  # bytes asked of read(2) at a time

# Bytes of one line (one JSON-RPC message) from the client. A message holds a tool's arguments or
# an answer, far below this; a longer line is a broken or hostile peer, and holding it would only
# grow memory: the connection is ended (as at end of file) with one warning.
MAX_STDIN_LINE_BYTES: Final = 16_777_216  # 16 MiB

logger = logging.getLogger("mcp_elicit.server")


class StdinLines:
    """An async iterator of text lines (each with its newline, UTF-8 with replacement characters)
    that ends at end of file or as soon as `stop()` is called."""

    def __init__(self, receive: MemoryObjectReceiveStream[str], send: MemoryObjectSendStream[str]) -> None:
        self._receive = receive
        self._send = send
        self.stopped = False

    def stop(self) -> None:
        """End the lines now: a waiting `__anext__` sees the end, whatever the thread is doing."""
        self.stopped = True
        self._send.close()  # wakes a waiting receiver with EndOfStream

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        if self.stopped:
            await anyio.lowlevel.checkpoint()
            raise StopAsyncIteration
        try:
            line = await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
        if self.stopped:  # a line the thread handed over as the stop came
            raise StopAsyncIteration
        return line


def _read_lines(fd: int, send: MemoryObjectSendStream[str], token: Any) -> None:
    """The thread: lines from `fd` to `send`, one at a time (it waits for each to be taken).
    A line's pieces are joined once, when its newline comes (linear however long it is)."""
    parts: list[bytes] = []  # the current line so far, before its newline
    size = 0
    try:
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            begin, end = 0, chunk.find(b"\n")
            while end >= 0:
                parts.append(chunk[begin : end + 1])
                line, parts, size = b"".join(parts), [], 0
                anyio.from_thread.run(send.send, line.decode("utf-8", "replace"), token=token)
                begin, end = end + 1, chunk.find(b"\n", end + 1)
            if begin < len(chunk):
                parts.append(chunk[begin:])
                size += len(chunk) - begin
                if size > MAX_STDIN_LINE_BYTES:
                    logger.warning(
                        "a line of more than %d bytes on stdin: ending the connection", MAX_STDIN_LINE_BYTES
                    )
                    return
        if parts:
            anyio.from_thread.run(send.send, b"".join(parts).decode("utf-8", "replace"), token=token)
    except (OSError, RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # stdin failed, the loop is gone or the lines were stopped: the end either way
    finally:
        with suppress(RuntimeError):
            anyio.from_thread.run_sync(send.close, token=token)


def _claim_stdin() -> tuple[int, int | None]:
    """(the fd to read the wire from, a duplicate to restore fd 0 from or None when fd 0 stays)."""
    try:
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return 0, None
    try:
        devnull = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return private, None
    try:
        os.dup2(devnull, 0)
    except OSError:
        return private, None
    finally:
        os.close(devnull)
    return private, private


@asynccontextmanager
async def stdin_lines(stop: anyio.Event | None = None) -> AsyncIterator[StdinLines]:
    """The process's stdin as `StdinLines`, ended when `stop` is set (None: only at end of file).

    The duplicate of fd 0 the thread reads is never closed (a thread blocked on it must not read
    a recycled descriptor): one descriptor per call, kept for the life of the process."""
    fd, restore = _claim_stdin()
    send, receive = anyio.create_memory_object_stream[str](0)
    lines = StdinLines(receive, send)
    thread = threading.Thread(
        target=_read_lines,
        args=(fd, send, anyio.lowlevel.current_token()),
        name="mcp-elicit stdin",
        daemon=True,
    )
    thread.start()
    try:
        async with anyio.create_task_group() as tg:
            if stop is not None:

                async def end_on_stop() -> None:
                    await stop.wait()
                    lines.stop()

                tg.start_soon(end_on_stop)
            try:
                yield lines
            finally:
                tg.cancel_scope.cancel()
    finally:
        lines.stop()
        receive.close()  # the thread's next line finds nobody waiting and ends it
        if restore is not None:
            with suppress(OSError):
                os.dup2(restore, 0)

"""Why an upstream is unavailable, in one line a person can act on.

A stdio upstream: the command that was not found or could not be run (the OS error); what it
wrote on stdout that broke the protocol (`ServerOutputError`: bad UTF-8, a line over the bound);
or, when it exited before the handshake, its exit status and the last lines of its stderr
(`StderrTail` keeps them while passing the stream on to the gateway's own stderr). An HTTP
upstream: the status it answered with (401/403: the `headers` in the config) or why it could not
be reached. The same short reason goes in the log line and in the tool result of a call that
needed that upstream.

During a request: an upstream that broke the protocol (`broke`), or one lost (`lost_upstream`:
its process exited, said with its exit status or signal as `process_end` words it; its connection
closed; or its HTTP transport found it gone) fails a tool call, a prompt and a read alike, in one
line.
"""

from __future__ import annotations

import codecs
import logging
import os
import sys
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, TextIO

import anyio

from mcp_elicit.client.servers import process_end, signal_name
from mcp_elicit.core.text import clean_text
from mcp_elicit.errors import ServerOutputError, UpstreamLost
from mcp_elicit.gateway import sdk
from mcp_elicit.gateway.config import Upstream
from mcp_elicit.gateway.relay import DownstreamCall

if TYPE_CHECKING:
    from mcp_elicit.client.connection import ElicitClient
    from mcp_elicit.gateway.pool import Pool

__all__ = [
    "UPSTREAM_EXIT_WAIT_SECONDS",
    "UPSTREAM_STDERR_LINES",
    "UPSTREAM_STDERR_LINE_CHARS",
    "StderrTail",
    "broke",
    "credentials_refused",
    "failure_reason",
    "lost_upstream",
    "process_end",
    "status_reason",
]

logger = logging.getLogger("mcp_elicit.gateway")

# Lines of a stdio upstream's stderr quoted when it exited before the handshake (its last ones).
UPSTREAM_STDERR_LINES: Final = 3
# Characters kept of each quoted line (and of any other text an upstream's failure quotes).
UPSTREAM_STDERR_LINE_CHARS: Final = 200
# How long a call that saw a stdio upstream's connection close waits for its process to end, so
# that the person and the model are told its exit status (it has closed its stdout: it is ending).
UPSTREAM_EXIT_WAIT_SECONDS: Final = 2.0
_READ_BYTES: Final = 65536


class StderrTail:
    """A stdio upstream's stderr through a pipe of ours: each chunk is passed on to the gateway's
    stderr as it arrives, and the last `UPSTREAM_STDERR_LINES` lines are kept for the reason.

    `errlog` is what the upstream's process gets as its stderr; `pump` runs while it lives;
    `drain` reads what is left (after the process ended) and `close` releases the pipe."""

    def __init__(self) -> None:
        self._read, write = os.pipe()
        os.set_blocking(self._read, False)
        self.errlog: TextIO = os.fdopen(write, "w")
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lines: deque[str] = deque(maxlen=UPSTREAM_STDERR_LINES)
        self._partial = ""
        self._eof = False

    async def pump(self) -> None:
        while not self._eof:
            await anyio.wait_readable(self._read)
            self.drain()

    def drain(self) -> None:
        """Read what the pipe holds now, without waiting."""
        while not self._eof:
            try:
                data = os.read(self._read, _READ_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._eof = True
                return
            self._take(self._decoder.decode(data))

    def _take(self, text: str) -> None:
        if not text:
            return
        try:  # resolved now: a test (or the CLI) may have swapped the stream
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # the gateway's own stderr is gone; the tail is still kept
        *done, rest = (self._partial + text).split("\n")
        for line in done:
            self._keep(line)
        self._partial = rest[: UPSTREAM_STDERR_LINE_CHARS + 1]

    def _keep(self, line: str) -> None:
        line = line.strip()
        if line:
            self._lines.append(line)

    @property
    def lines(self) -> list[str]:
        """The last lines (an unfinished last one included), cleaned and cut to one line each."""
        lines = [*self._lines, *([self._partial.strip()] if self._partial.strip() else [])]
        return [_one_line(line) for line in lines[-UPSTREAM_STDERR_LINES:]]

    def close(self) -> None:
        self.errlog.close()
        os.close(self._read)


async def credentials_refused(upstream: Upstream) -> str | None:
    """ "HTTP 401: …" when an HTTP upstream refuses the gateway's configured headers, else None (asked
    only after a failure: the SDK reports an HTTP error as a bare JSON-RPC error)."""
    if upstream.url is None:
        return None
    status = await sdk.http_status(upstream.url, upstream.headers)
    return status_reason(status) if status in (401, 403) else None


def failure_reason(
    exc: BaseException,
    upstream: Upstream | None = None,
    *,
    stderr: Sequence[str] | None = None,
    exit_status: int | None = None,
) -> str:
    """Why `upstream` failed, in one line: see the module docstring. Without `upstream` (or for
    an error none of the cases know) the innermost error's type and message."""
    why = _failure_reason(exc, upstream, stderr=stderr, exit_status=exit_status)
    if upstream is not None and upstream.url is not None and upstream.declared_type.lower() == "sse":
        # found by a new user: a server kept as "type": "sse" failed with an SDK error that did
        # not say the gateway speaks streamable HTTP only (the older HTTP+SSE transport is not)
        return f'{why} (the file says "type": "sse": the gateway speaks streamable HTTP only)'
    return why


def _failure_reason(
    exc: BaseException,
    upstream: Upstream | None,
    *,
    stderr: Sequence[str] | None,
    exit_status: int | None,
) -> str:
    chain = _chain(exc)
    for current in chain:
        status = getattr(getattr(current, "response", None), "status_code", None)
        if isinstance(status, int):
            return status_reason(status)
    broke = next((e for e in chain if isinstance(e, ServerOutputError)), None)
    if broke is not None:  # a ConnectionError too, but nothing to do with starting it
        return _one_line(str(broke))
    command = upstream.command if upstream is not None else None
    oserror = next((e for e in reversed(chain) if isinstance(e, OSError)), None)
    if oserror is not None and command is not None and not _closed(chain):
        return _start_failed(command, oserror)
    if oserror is not None and upstream is not None and upstream.url is not None:
        return f"cannot reach {upstream.url}: {_os_words(oserror)}"
    if command is not None and _closed(chain):
        return _exited(exit_status, stderr)
    reply = next((r for r in map(sdk.jsonrpc_error, chain) if r is not None), None)
    if reply is not None and reply[0] != sdk.CONNECTION_CLOSED:
        return _one_line(f"it answered the handshake with error {reply[0]}: {reply[1]}")
    innermost = chain[-1]
    said = str(innermost)
    return _one_line(f"{type(innermost).__name__}: {said}" if said else type(innermost).__name__)


def broke(call: DownstreamCall, exc: ServerOutputError) -> str:
    """A stdio upstream broke the protocol during `call` (its connection has ended): one log line,
    and the reason for the client, instead of the SDK's traceback for a failed handler."""
    why = failure_reason(exc)
    logger.info("upstream %s failed %s: %s", call.server, call.tool, why)
    return f"The upstream server '{call.server}' failed: {why}."


async def lost_upstream(
    pool: Pool, client: ElicitClient, call: DownstreamCall, exc: Exception
) -> UpstreamLost | None:
    """`exc` as the loss of `call`'s upstream, when it is one (its connection closed during the
    request: a stdio one's process exited, said with its status; or its HTTP transport found it
    gone: a restarted one answers "Session not found" first): then it is left out until the next
    request reconnects it, and logged in one line. Tools, prompts and reads fail alike, worded
    once (`UpstreamLost` in `core.refusals`)."""
    link = client.link.why if client.link is not None and client.link.lost.is_set() else ""
    if not (sdk.connection_closed(exc) or link):
        return None
    status = None if link else await pool.exit_status(call.server, UPSTREAM_EXIT_WAIT_SECONDS)
    lost = UpstreamLost(call.server, link or process_end(status), status)
    pool.drop(call.server, lost.why)
    logger.info("upstream %s was lost during %s %s: %s", call.server, call.method, call.tool, lost.why)
    return lost


def status_reason(status: int) -> str:
    """An upstream's HTTP error status in words a person can act on."""
    if status in (401, 403):
        return f"HTTP {status}: it refused the gateway's credentials (check its headers in the config)"
    return f"HTTP {status}"


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc`, the groups' members, causes and contexts, outermost first."""
    seen: set[int] = set()
    found: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return found


def _closed(chain: Sequence[BaseException]) -> bool:
    return any((sdk.jsonrpc_error(e) or (0, ""))[0] == sdk.CONNECTION_CLOSED for e in chain)


def _start_failed(command: str, error: OSError) -> str:
    shown = _one_line(command)
    if isinstance(error, FileNotFoundError):
        return f"command not found: {shown}"
    if isinstance(error, PermissionError):
        return f"command not executable: {shown}, permission denied"
    return f"could not start {shown}: {_os_words(error)}"


def _os_words(error: OSError) -> str:
    words = error.strerror or str(error) or type(error).__name__
    return _one_line(f"{words}, {type(error).__name__}")


def _exited(exit_status: int | None, stderr: Sequence[str] | None) -> str:
    if exit_status is None:
        said = "it closed the connection before the handshake"
    elif exit_status < 0:
        said = f"killed by signal {signal_name(-exit_status)} before the handshake"
    else:
        said = f"exited with status {exit_status} before the handshake"
    if stderr is None:  # not watched (no pipe of ours on this platform)
        return said
    if not stderr:
        return f"{said}, stderr empty"
    return f"{said}, stderr: " + " | ".join(stderr)


def _one_line(text: str) -> str:
    return clean_text(text, limit=UPSTREAM_STDERR_LINE_CHARS, multiline=False)

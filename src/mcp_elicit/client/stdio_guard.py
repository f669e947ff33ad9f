"""A stdio server that writes invalid UTF-8, or a line longer than `MAX_STDOUT_LINE_BYTES`,
ends the connection at once, with a clear error.

The SDK's stdio reader decodes the server's stdout strictly; a decode error kills its reader
task without closing the session (it then waits to drain a stdout that never ends), so a call
waiting for its result hangs for good. Instead the reader gets our codec error handler: it
notes the first failure in a per-connection box (found through a context variable the reader
task inherits), lets the line through with U+FFFD, and the read stream we hand the session ends
(end of stream) before passing on anything read after it. The session then fails every pending
call at once, and the client raises `ServerOutputError` saying what the server wrote.

The SDK's reader also keeps an unfinished line in memory until its newline comes, so a server
writing one endless line grows the client without bound (and the reader copies that line for each
chunk read: quadratic time). `bound_lines` wraps the server's stdout below the decoder (the SDK
builds its text stream through a hook in `sdk_transport`), passes on whole lines only (holding an
unfinished one, so the SDK's copy is always of an empty buffer) and counts the bytes since the
last newline; past the bound it notes it in the box, logs one warning, closes
the pipe's stream and ends the text stream, without passing on the chunk that crossed it. The
reader's drain then ends at once too (its pipe stream is closed), the session's read stream
ends, and every waiting call fails. Nothing more is read: the server blocks on its next write
until the connection closes, when a server that broke the protocol is sent SIGTERM at once
(without it, one that ignores its closed stdin would delay the close by the SDK's grace, 2 s).
"""

from __future__ import annotations

import codecs
import contextlib
import logging
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, Final

import anyio
from anyio.abc import ByteReceiveStream

from mcp_elicit.client.read_stream import WrappedReadStream

__all__ = [
    "MAX_STDOUT_LINE_BYTES",
    "STDIO_ERROR_HANDLER",
    "BadBytes",
    "StdioGuard",
    "bound_lines",
    "guard_stdio",
    "note_process",
]

STDIO_ERROR_HANDLER: Final = "mcp-elicit-stdio"

# Bytes of one line (one JSON-RPC message) a client reads from a stdio server. A tool result or a
# resource may carry base64 content (an image, a file): 16 MiB holds 12 MiB of it, above the
# TypeScript SDK's own stdio bound (10 MiB, so a server meant for its clients stays under), and
# as the server side allows (`MAX_STDIN_LINE_BYTES`). Not more: a line is held whole, decoded
# and parsed in one piece (a 16 MB tool result costs the client about 0.1 s of CPU). A longer line
# is a broken or hostile server: the connection ends.
MAX_STDOUT_LINE_BYTES: Final = 16_777_216  # 16 MiB

logger = logging.getLogger(__name__)


class BadBytes:
    """What one connection's reader saw that is not the protocol: the first decode error, or a
    line longer than `max_line_bytes` (then `limit` is that bound); `detail` says which, in words."""

    def __init__(self) -> None:
        self.error: UnicodeDecodeError | None = None
        self.limit: int | None = None
        self.detail = ""
        self.max_line_bytes = MAX_STDOUT_LINE_BYTES  # read per connection: a test may lower it
        self.process: Any = None  # the server's process (noted by `sdk_transport` when it starts)

    @property
    def broken(self) -> bool:
        return bool(self.detail)

    def note(self, e: UnicodeDecodeError) -> None:
        # read now: the codec reuses one exception object for every error of a decode call
        self.error = e
        self.detail = f"its stdout is not valid {e.encoding}: {e.reason} (byte {e.object[e.start : e.end]!r})"

    def note_long_line(self) -> None:
        if not self.broken:
            self.limit = self.max_line_bytes
            self.detail = f"its stdout has a line of more than {self.limit} bytes (one message's limit)"


_box: ContextVar[BadBytes | None] = ContextVar("mcp_elicit_stdio_bad_bytes", default=None)


def _on_error(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc  # encoding our own messages stays strict
    box = _box.get()
    if box is None:
        raise exc  # not one of our connections: strict, as the SDK would be
    if not box.broken:
        box.note(exc)
    return "\ufffd", exc.end


codecs.register_error(STDIO_ERROR_HANDLER, _on_error)


def guard_stdio(params: Any) -> Any:
    """SDK `StdioServerParameters` decoding with our handler (model_copy: the SDK types the field
    to the stdlib handler names only)."""
    return params.model_copy(update={"encoding_error_handler": STDIO_ERROR_HANDLER})


class StdioGuard:
    """Wrap the SDK's stdio transport so its read stream ends at the first undecodable byte."""

    def __init__(self, inner: Any, box: BadBytes) -> None:
        self._inner = inner
        self._box = box

    async def __aenter__(self) -> tuple[Any, Any]:
        token: Token[BadBytes | None] = _box.set(self._box)  # the reader task copies this context
        try:
            read, write = await self._inner.__aenter__()
        finally:
            _box.reset(token)
        return _EndOnBadBytes(read, self._box), write

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        process = self._box.process
        if self._box.broken and process is not None and process.returncode is None:
            # A server that broke the protocol gets no grace to end on its own (the SDK's shutdown
            # waits 2 s for one that ignores its closed stdin): it is stopped now.
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
        return bool(await self._inner.__aexit__(exc_type, exc, tb))


def note_process(process: Any) -> None:
    """Keep `process`, a stdio server just started, in the box of the connection starting it."""
    box = _box.get()
    if box is not None:
        box.process = process


class _EndOnBadBytes(WrappedReadStream):
    def __init__(self, inner: Any, box: BadBytes) -> None:
        super().__init__(inner)
        self._box = box

    async def receive(self) -> Any:
        if self._box.broken:
            raise anyio.EndOfStream
        item = await self._inner.receive()
        if self._box.broken:
            raise anyio.EndOfStream
        return item


def bound_lines(stdout: ByteReceiveStream, label: str = "") -> ByteReceiveStream:
    """`stdout` with its lines bounded, for the connection whose box is current (else as it is);
    `label` names the server in the warning (the gateway's key)."""
    box = _box.get()
    return stdout if box is None else _BoundedLines(stdout, box, label)


class _BoundedLines(ByteReceiveStream):
    """Passes on whole lines only: an unfinished line is held here (a list of chunks, joined once
    at its newline), so the SDK's reader, which copies its own buffer of an unfinished line for
    every chunk read, always starts from an empty buffer, and a long line costs linear time.
    What is returned may exceed `max_bytes` (one line, within the bound)."""

    def __init__(self, inner: ByteReceiveStream, box: BadBytes, label: str) -> None:
        self._inner, self._box, self._label = inner, box, label
        self._held: list[bytes] = []  # the unfinished line, not passed on yet
        self._run = 0  # its bytes
        self._ended = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while not self._ended:
            try:
                chunk = await self._inner.receive(max_bytes)
            except anyio.EndOfStream:
                self._ended = True
                break
            limit, run, start = self._box.max_line_bytes, self._run, 0
            end = chunk.find(b"\n")
            while end >= 0 and run + end - start <= limit:  # each line the chunk ends
                run, start = 0, end + 1
                end = chunk.find(b"\n", start)
            if end >= 0 or run + len(chunk) - start > limit:
                await self._stop()
            self._run = run + len(chunk) - start
            if start == 0:  # no newline: the line goes on
                self._held.append(chunk)
                continue
            whole = b"".join([*self._held, chunk[:start]]) if self._held else chunk[:start]
            self._held = [chunk[start:]] if start < len(chunk) else []
            return whole
        if self._held:  # the server's last words, without a newline: passed on as they are
            last, self._held, self._run = b"".join(self._held), [], 0
            return last
        raise anyio.EndOfStream

    async def _stop(self) -> None:
        self._box.note_long_line()
        who = f" '{self._label}'" if self._label else ""
        said = "the stdio server%s wrote a line of more than %d bytes: ending the connection"
        logger.warning(said, who, self._box.max_line_bytes)
        await self._inner.aclose()  # the SDK's drain of the pipe then ends at once too
        raise anyio.EndOfStream

    async def aclose(self) -> None:
        await self._inner.aclose()

"""A stdio server that writes invalid UTF-8 ends the connection at once, with a clear error.

The SDK's stdio reader decodes the server's stdout strictly; a decode error kills its reader
task without closing the session (it then waits to drain a stdout that never ends), so a call
waiting for its result hangs for good. Instead the reader gets our codec error handler: it
notes the first failure in a per-connection box (found through a context variable the reader
task inherits), lets the line through with U+FFFD, and the read stream we hand the session ends
(end of stream) before passing on anything read after it. The session then fails every pending
call at once, and the client raises `ServerOutputError` saying what the server wrote.
"""

from __future__ import annotations

import codecs
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, Final

import anyio

from mcp_elicit.client.read_stream import WrappedReadStream

__all__ = ["STDIO_ERROR_HANDLER", "BadBytes", "StdioGuard", "guard_stdio"]

STDIO_ERROR_HANDLER: Final = "mcp-elicit-stdio"


class BadBytes:
    """What one connection's reader saw: the first decode error, if any."""

    def __init__(self) -> None:
        self.error: UnicodeDecodeError | None = None
        self.detail = ""

    def note(self, e: UnicodeDecodeError) -> None:
        # read now: the codec reuses one exception object for every error of a decode call
        self.error = e
        self.detail = f"its stdout is not valid {e.encoding}: {e.reason} (byte {e.object[e.start : e.end]!r})"


_box: ContextVar[BadBytes | None] = ContextVar("mcp_elicit_stdio_bad_bytes", default=None)


def _on_error(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc  # encoding our own messages stays strict
    box = _box.get()
    if box is None:
        raise exc  # not one of our connections: strict, as the SDK would be
    if box.error is None:
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
        return bool(await self._inner.__aexit__(exc_type, exc, tb))


class _EndOnBadBytes(WrappedReadStream):
    def __init__(self, inner: Any, box: BadBytes) -> None:
        super().__init__(inner)
        self._box = box

    async def receive(self) -> Any:
        if self._box.error is not None:
            raise anyio.EndOfStream
        item = await self._inner.receive()
        if self._box.error is not None:
            raise anyio.EndOfStream
        return item

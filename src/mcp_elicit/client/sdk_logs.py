"""The SDK's streamable HTTP client logs two ordinary outcomes with a traceback; these filters make
each at most one line (M-rule: an ordinary outcome is one log line, never a traceback).

Private hooks: the logger's name and the records' messages (canaries:
tests/client/test_sdk_canaries.py). Installed when `client/sdk.py` is imported.
"""

from __future__ import annotations

import logging
from typing import Final

import anyio
import httpx2

__all__: list[str] = []

logger = logging.getLogger(__name__)

SDK_HTTP_LOGGER: Final = "mcp.client.streamable_http"

# Over streamable HTTP the SDK's transport hands every message of a call's event stream to the
# session's read stream. One that arrives after the session has closed it (the server's -32800 for
# a call the client gave up on, `call --timeout` while a pushed page waits, racing the teardown)
# fails with BrokenResourceError, which the SDK logs as a parse failure, with a traceback. Nothing
# is lost (nobody is left to read it) and a timeout is an ordinary outcome: the record becomes one
# DEBUG line.
SDK_SSE_FAILURE: Final = "Error parsing SSE message"

# The server went away (killed, restarting) and a message the client sends after that (say, the
# cancellation of the call whose stream just ended) cannot reach it: the SDK's sending task ends,
# logged with the HTTP client's traceback. The call itself already failed with its own error (`call`
# says the server's stream ended before it answered); the record becomes one INFO line.
SDK_SENDER_FAILURE: Final = "Error in post_writer"


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


class _OrdinaryHttpEnds(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            return True
        if record.msg == SDK_SSE_FAILURE and isinstance(
            exc, anyio.BrokenResourceError | anyio.ClosedResourceError
        ):
            logger.debug("a server message arrived after the session closed its read stream (dropped)")
            return False
        leaves = _leaves(exc)
        if record.msg == SDK_SENDER_FAILURE and all(isinstance(e, httpx2.TransportError) for e in leaves):
            last = leaves[-1]
            logger.info(
                "the HTTP server could not be reached to send it a message; the connection sends "
                "no more (%s: %s)",
                type(last).__name__,
                str(last).splitlines()[0] if str(last).strip() else "",
            )
            return False
        return True


logging.getLogger(SDK_HTTP_LOGGER).addFilter(_OrdinaryHttpEnds())

"""`auto` connects again in 2026-07-28 only when the server answered the handshake with an error:
found however deep the SDK's task groups wrapped it, never for a connection that closed."""

from __future__ import annotations

import mcp_types as t
import pytest
from mcp.shared.exceptions import MCPError

from mcp_elicit.client.sdk import handshake_refusal

REFUSED = MCPError(code=-32022, message="only 2026-07-28", data={"supported": ["2026-07-28"]})
CLOSED = MCPError(code=t.CONNECTION_CLOSED, message="Connection closed")


@pytest.mark.parametrize(
    "exc",
    [
        REFUSED,
        ExceptionGroup("stdio", [REFUSED]),
        BaseExceptionGroup("client", [ExceptionGroup("stdio", [RuntimeError("reader"), REFUSED])]),
    ],
    ids=["bare", "one group", "two groups beside another error"],
)
def test_the_servers_error_reply_is_found_inside_the_sdks_exception_groups(exc: BaseException) -> None:
    assert handshake_refusal(exc) is REFUSED


@pytest.mark.parametrize(
    "exc",
    [CLOSED, ExceptionGroup("stdio", [CLOSED]), OSError("no such file"), ExceptionGroup("x", [ValueError()])],
    ids=["closed", "closed in a group", "not started", "another error"],
)
def test_a_closed_connection_or_any_other_failure_is_not_a_refusal(exc: BaseException) -> None:
    assert handshake_refusal(exc) is None

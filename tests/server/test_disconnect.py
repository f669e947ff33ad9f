"""The disconnect watch parks on the ASGI receive, and cannot be made to spin by any ASGI server."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_elicit.server.disconnect import MAX_NON_DISCONNECT_MESSAGES, wait_for_disconnect

pytestmark = pytest.mark.anyio

BOUND_SECONDS = 5.0


class Request:
    """The two things the watch uses of a Starlette request, driven by the test."""

    def __init__(self, messages: list[dict[str, Any]], gone_after_checks: int = 1) -> None:
        self.messages = messages
        self.received = 0
        self.checks = 0
        self.gone_after_checks = gone_after_checks

    async def receive(self) -> dict[str, Any]:
        self.received += 1
        if self.messages:
            return self.messages.pop(0)
        await anyio.sleep_forever()
        raise AssertionError

    async def is_disconnected(self) -> bool:
        self.checks += 1
        return self.checks >= self.gone_after_checks


async def test_the_disconnect_message_ends_the_watch_without_any_check() -> None:
    request = Request([{"type": "http.disconnect"}])
    with anyio.fail_after(BOUND_SECONDS):
        assert await wait_for_disconnect(request) is True
    assert request.checks == 0


async def test_a_transport_without_requests_is_not_watched() -> None:
    assert await wait_for_disconnect(None) is False


async def test_a_receive_that_keeps_answering_falls_back_to_the_bounded_poll() -> None:
    request = Request([{"type": "http.request", "body": b""}] * 100, gone_after_checks=2)
    with anyio.fail_after(BOUND_SECONDS):
        assert await wait_for_disconnect(request) is True
    assert request.received == MAX_NON_DISCONNECT_MESSAGES
    assert request.checks == 2

"""The disconnect watch parks on the ASGI receive, and cannot be made to spin by any ASGI server."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_elicit.errors import ClientGone
from mcp_elicit.server import disconnect
from mcp_elicit.server.disconnect import MAX_NON_DISCONNECT_MESSAGES, until_disconnected, wait_for_disconnect

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


@pytest.fixture(params=["bare task", "task group"])
def watch_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of watching: a bare asyncio task, and the task group other event loops get
    (trio is not installed here, so the asyncio loop is hidden from the watch to take that path)."""
    if request.param == "task group":
        monkeypatch.setattr(disconnect, "_asyncio_loop", lambda: None)
    return str(request.param)


async def test_a_disconnect_ends_the_wait_with_client_gone(watch_kind: str) -> None:
    request = Request([{"type": "http.disconnect"}])
    with anyio.fail_after(BOUND_SECONDS), pytest.raises(ClientGone):
        await until_disconnected(request, anyio.sleep_forever)


async def test_the_wait_ends_with_timeout_error_at_its_deadline(watch_kind: str) -> None:
    with anyio.fail_after(BOUND_SECONDS), pytest.raises(TimeoutError):
        await until_disconnected(Request([]), anyio.sleep_forever, timeout=0.05)


async def test_an_answer_before_any_disconnect_is_returned(watch_kind: str) -> None:
    async def answer() -> str:
        return "answered"

    with anyio.fail_after(BOUND_SECONDS):
        assert await until_disconnected(Request([]), answer, timeout=BOUND_SECONDS) == "answered"


class ReceiveFailed(Exception):
    pass


async def test_a_watch_that_breaks_ends_the_wait_with_its_error(watch_kind: str) -> None:
    class Broken(Request):
        async def receive(self) -> dict[str, Any]:
            raise ReceiveFailed

    with anyio.fail_after(BOUND_SECONDS), pytest.raises(ReceiveFailed):
        await until_disconnected(Broken([]), anyio.sleep_forever)

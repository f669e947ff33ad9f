"""`LinkWatch`: what an HTTP server's transport takes as the server gone (nothing answers at its
endpoint, or a 404 for the session it had), and what it does not (a timeout, another status, a
request elsewhere, a 404 before there is a session). The end-to-end cases, with a real server
killed and restarted, are in tests/gateway/test_gateway_lost_http_upstream.py."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
import pytest

from mcp_elicit.client.http_watch import SDK_STREAM_ATTEMPTS, LinkWatch

URL = "http://127.0.0.1:8931/mcp"
SESSION = {"mcp-session-id": "abc"}


def request(url: str = URL, headers: dict[str, str] | None = None, method: str = "POST") -> httpx2.Request:
    return httpx2.Request(method, url, headers=headers)


def test_a_request_nothing_answers_means_the_server_is_gone_and_says_why() -> None:
    watch = LinkWatch(URL)
    watch.failed(request(method="GET"), httpx2.ConnectError("All connection attempts failed"))
    assert watch.lost.is_set()
    assert "ConnectError" in watch.why


@pytest.mark.parametrize(
    "error",
    [httpx2.ReadError("reset"), httpx2.RemoteProtocolError("peer closed connection")],
    ids=["reset", "cut-before-an-answer"],
)
def test_a_connection_broken_before_an_answer_means_the_server_is_gone(error: httpx2.TransportError) -> None:
    watch = LinkWatch(URL)
    watch.failed(request(), error)
    assert watch.lost.is_set()


@pytest.mark.parametrize(
    "error",
    [httpx2.ReadTimeout("slow"), httpx2.ConnectTimeout("slow"), httpx2.PoolTimeout("busy")],
    ids=["read", "connect", "pool"],
)
def test_a_timeout_is_not_taken_for_a_server_gone(error: httpx2.TransportError) -> None:
    watch = LinkWatch(URL)
    watch.failed(request(), error)
    assert not watch.lost.is_set()
    assert watch.why == ""


def test_a_404_for_the_session_means_the_server_forgot_it() -> None:
    watch = LinkWatch(URL)
    watch.saw(request(headers=SESSION), httpx2.Response(404))
    assert watch.lost.is_set()
    assert "404" in watch.why


@pytest.mark.parametrize("status", [200, 202, 400, 401, 405, 500, 502, 503])
def test_other_answers_for_the_session_leave_it_be(status: int) -> None:
    """A tool's own error result comes in a 200; a proxy's 502 while the server restarts is no verdict."""
    watch = LinkWatch(URL)
    watch.saw(request(headers=SESSION), httpx2.Response(status))
    assert not watch.lost.is_set()


def test_a_404_before_there_is_a_session_is_not_a_loss() -> None:
    """(A server with no such endpoint, or a method it does not know: the handshake reports it.)"""
    watch = LinkWatch(URL)
    watch.saw(request(), httpx2.Response(404))
    assert not watch.lost.is_set()


def test_requests_to_another_address_do_not_count() -> None:
    """An OAuth provider's requests go through the same client: its server down is not this one."""
    watch = LinkWatch(URL)
    watch.failed(request("http://127.0.0.1:9/token"), httpx2.ConnectError("refused"))
    watch.saw(request("http://127.0.0.1:8931/other", SESSION), httpx2.Response(404))
    assert not watch.lost.is_set()


def test_the_first_reason_is_kept() -> None:
    watch = LinkWatch(URL)
    watch.failed(request(), httpx2.ConnectError("refused"))
    watch.saw(request(headers=SESSION), httpx2.Response(404))
    assert "ConnectError" in watch.why


def test_ending_a_session_known_gone_is_not_sent_and_nothing_else_is_held_back() -> None:
    """The SDK's DELETE on close would only fail (and warn); other requests go as ever."""
    watch = LinkWatch(URL)
    assert not watch.moot(request(headers=SESSION, method="DELETE"))  # not known gone: sent
    watch.saw(request(headers=SESSION), httpx2.Response(404))
    assert watch.moot(request(headers=SESSION, method="DELETE"))
    assert not watch.moot(request(headers=SESSION))
    assert not watch.moot(request("http://127.0.0.1:9/mcp", SESSION, method="DELETE"))


def listening() -> httpx2.Request:
    return request(headers=SESSION, method="GET")


def test_a_listening_stream_failing_as_often_as_the_sdk_tries_it_is_a_loss_whose_session_is_still_ended() -> (
    None
):
    """The SDK gives the stream up then: nothing the server sends on its own would arrive. The
    server still answers, so its session is ended as usual when the connection closes."""
    watch = LinkWatch(URL)
    for _ in range(SDK_STREAM_ATTEMPTS - 1):
        watch.saw(listening(), httpx2.Response(503))
    assert not watch.lost.is_set()
    watch.failed(listening(), httpx2.ReadTimeout("slow"))
    assert watch.lost.is_set()
    assert "ReadTimeout" in watch.why
    assert not watch.moot(request(headers=SESSION, method="DELETE"))


@pytest.mark.anyio
async def test_a_listening_stream_the_server_closes_starts_the_count_over() -> None:
    watch = LinkWatch(URL)
    watch.saw(listening(), httpx2.Response(503))
    closed = watch.watched(listening(), httpx2.ByteStream(b"event: ping\n\n"))
    assert [chunk async for chunk in closed] == [b"event: ping\n\n"]
    watch.saw(listening(), httpx2.Response(503))
    assert not watch.lost.is_set()


@pytest.mark.parametrize(
    ("failing", "answer"),
    [(listening(), httpx2.Response(405)), (request(headers=SESSION), httpx2.Response(503))],
    ids=["no-listening-stream", "not-the-listening-stream"],
)
def test_a_server_without_a_listening_stream_or_other_failing_requests_are_no_loss(
    failing: httpx2.Request, answer: httpx2.Response
) -> None:
    watch = LinkWatch(URL)
    for _ in range(SDK_STREAM_ATTEMPTS + 1):
        watch.saw(failing, answer)
    assert not watch.lost.is_set()


class Silent(httpx2.AsyncByteStream):
    """An event stream that says one thing, then nothing past the read timeout."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b": open\n\n"
        raise httpx2.ReadTimeout("idle")


@pytest.mark.anyio
async def test_a_listening_stream_silent_past_the_read_timeout_ends_quietly_and_the_count_starts_over() -> (
    None
):
    """An idle server without keep-alives has nothing to say: its stream ends as if it had closed
    it (the SDK opens it again), no failure; only a failed opening after it counts."""
    watch = LinkWatch(URL)
    watch.saw(listening(), httpx2.Response(503))
    idle = watch.watched(listening(), Silent())
    assert [chunk async for chunk in idle] == [b": open\n\n"]  # ended, no error
    for _ in range(SDK_STREAM_ATTEMPTS - 1):
        watch.saw(listening(), httpx2.Response(503))
    assert not watch.lost.is_set()

"""URL mode on the client kit end to end: `ElicitClient` against the reference server over HTTP.

The pages live on the same server; the "browser" is the hand-off tests' `Browser`, injected as the
opener, which fills in the API key form. Both eras: 2025-11-25 (push + completion notification,
and -32042 then retry) and 2026-07-28 (the URL inside `InputRequiredResult`, retried until the
server stops asking) (U2, U3, U6, U7, U8).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcp_elicit.client import ElicitClient
from mcp_elicit.client.ui_protocol import UrlPrompt
from mcp_elicit.client.url import UrlMode, UrlSettings
from mcp_elicit.errors import UrlHandoffStopped
from mcp_elicit.reference import build_reference_server
from mcp_elicit.ui.scripted import ScriptedUI
from tests.e2e.servers import serving_app
from tests.server.handoff_support import SECRET_VALUE, Browser
from tests.support import text_of

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "modern"]
BOUND_SECONDS = 60.0


class Recorder:
    """ASGI middleware keeping the path of every HTTP request the server receives."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["path"])
        await self.app(scope, receive, send)

    def pages(self) -> list[str]:
        return [p for p in self.paths if p.startswith("/elicit/")]


@asynccontextmanager
async def reference() -> AsyncIterator[tuple[str, Recorder]]:
    recorder = Recorder(build_reference_server().streamable_http_app())
    async with serving_app(recorder) as origin:
        yield f"{origin}/mcp", recorder


class Person:
    """The person at the browser: opens each page and, unless told to wait, saves the key."""

    def __init__(self, *, finish: bool = True) -> None:
        self.finish = finish
        self.opened: list[str] = []
        self.browser = Browser()

    async def __call__(self, url: str) -> None:
        self.opened.append(url)
        if self.finish:
            await self.finish_page()

    async def finish_page(self) -> None:
        page = await self.browser.enter_key(self.opened[-1], SECRET_VALUE)
        assert page.status == 200


def consent_recording(recorder: Recorder, pages_at_consent: list[list[str]]) -> Callable[[Any], Any]:
    """A scripted person who notes which pages the server had served when asked, then says open."""

    def answer(prompt: Any) -> dict[str, str] | None:
        if not isinstance(prompt, UrlPrompt):
            return None
        pages_at_consent.append(recorder.pages())
        return {"url": "open"}

    return answer


def client(url: str, era: str, ui: ScriptedUI, person: Person, **settings: Any) -> ElicitClient:
    mode = UrlMode(opener=person, settings=UrlSettings(**settings))
    return ElicitClient(url, ui=ui, protocol=era, url_mode=mode)


@pytest.mark.parametrize("era", ERAS)
async def test_connect_service_consent_then_open_then_the_tool_finishes_U2_U3(era: str) -> None:
    pages_at_consent: list[list[str]] = []
    person = Person()
    with anyio.fail_after(BOUND_SECONDS):
        async with reference() as (url, recorder):
            ui = ScriptedUI(consent_recording(recorder, pages_at_consent))
            async with client(url, era, ui, person) as c:
                result = await c.call_tool("connect_service", {})
                status = await c.call_tool("service_status", {})
                tracker = c.url.tracker if c.url is not None else None
    assert text_of(result) == "Connected to Example API."
    assert text_of(status) == "Example API: connected, 3 projects."
    [prompt] = ui.seen
    assert isinstance(prompt, UrlPrompt)
    origin = url.removesuffix("/mcp")
    assert prompt.url.startswith(origin + "/elicit/start/")
    assert prompt.verdict == "ok"
    assert prompt.display["registrable_domain"] == "127.0.0.1"
    assert prompt.requester.name == "mcp-elicit-reference"
    assert (prompt.purpose.method, prompt.purpose.target) == ("tools/call", "connect_service")
    assert pages_at_consent == [[]]  # U3: nothing fetched before consent
    assert person.opened == [prompt.url]
    assert recorder.pages()[0].startswith("/elicit/start/")
    assert [(o.mode, o.action, o.decided_by) for o in c.outcomes] == [("url", "accept", "script")]
    if era == "legacy":
        assert tracker is not None
        assert tracker.ignored == 0


async def test_service_status_after_minus_32042_consents_opens_and_retries_on_2025_U7() -> None:
    person = Person()
    with anyio.fail_after(BOUND_SECONDS):
        async with reference() as (url, _), client(url, "legacy", ScriptedUI([{"url": "open"}]), person) as c:
            result = await c.call_tool("service_status", {})
            assert c.url is not None
            completed = [c.url.tracker.completed(eid) for eid in c.url.tracker.expected()]
    assert text_of(result) == "Example API: connected, 3 projects."
    assert len(person.opened) == 1
    assert completed == [True]  # the retry waited for the completion notification (U6)
    [outcome] = c.outcomes
    assert (outcome.mode, outcome.action, outcome.purpose.target) == ("url", "accept", "service_status")


async def test_service_status_asks_inside_an_input_request_on_2026_U8() -> None:
    person = Person()
    with anyio.fail_after(BOUND_SECONDS):
        async with reference() as (url, _), client(url, "modern", ScriptedUI([{"url": "open"}]), person) as c:
            result = await c.call_tool("service_status", {})
    assert text_of(result) == "Example API: connected, 3 projects."
    assert len(person.opened) == 1


async def test_on_2026_the_waiting_screen_shows_while_the_held_retry_is_in_flight_U8() -> None:
    """The person takes their time: after consent the accepting retry goes out at once and the
    server holds it while the page is pending; the client shows the waiting screen meanwhile
    (the person finishes from there), adds no backoff of its own and never asks consent again."""
    person = Person(finish=False)
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        await anyio.lowlevel.checkpoint()

    async def waiting(w: Any) -> None:
        if len(ui.waits) == 1:
            await person.finish_page()  # the person finishes while the screen shows
        return None  # keep waiting: the held retry comes back done

    ui = ScriptedUI([{"url": "open"}], waiting=waiting)
    with anyio.fail_after(BOUND_SECONDS):
        async with reference() as (url, _), client(url, "modern", ui, person, sleep=sleep) as c:
            result = await c.call_tool("connect_service", {})
    assert text_of(result) == "Connected to Example API."
    assert len(ui.seen) == 1
    assert len(person.opened) == 1
    assert [(w.reason, w.can_retry) for w in ui.waits] == [("completion", False)]
    assert delays == []
    assert [(o.action, o.decided_by, o.reason) for o in c.outcomes] == [("accept", "script", "")]


async def test_on_2026_the_person_gives_up_waiting_and_the_server_hears_cancel_C3() -> None:
    person = Person(finish=False)
    ui = ScriptedUI([{"url": "open"}], waiting=["cancel"])
    with anyio.fail_after(BOUND_SECONDS):
        async with reference() as (url, _), client(url, "modern", ui, person) as c:
            result = await c.call_tool("connect_service", {})
    assert text_of(result) == "Example API not connected (cancel)."
    assert (c.outcomes[-1].reason, c.outcomes[-1].decided_by) == ("url_wait_cancelled", "script")


async def test_on_2025_the_person_gives_up_waiting_for_a_pushed_page_and_the_call_ends_U6() -> None:
    person = Person(finish=False)
    ui = ScriptedUI([{"url": "open"}], waiting=["cancel"])
    with anyio.fail_after(BOUND_SECONDS):
        async with reference() as (url, _), client(url, "legacy", ui, person) as c:
            with pytest.raises(UrlHandoffStopped) as info:
                await c.call_tool("connect_service", {})
    assert info.value.reason == "cancelled"
    assert [w.reason for w in ui.waits] == ["completion"]
    assert ui.waits[0].can_retry is False


async def test_a_declined_minus_32042_page_ends_the_call_without_opening_anything() -> None:
    person = Person()
    ui = ScriptedUI([{"url": "decline"}])
    with anyio.fail_after(BOUND_SECONDS):
        async with reference() as (url, recorder), client(url, "legacy", ui, person) as c:
            with pytest.raises(UrlHandoffStopped) as info:
                await c.call_tool("service_status", {})
            pages = recorder.pages()
    assert (info.value.reason, info.value.rounds) == ("declined", 1)
    assert person.opened == []
    assert pages == []


async def test_retry_before_the_page_is_done_gets_a_new_page_to_consent_to_and_then_succeeds() -> None:
    """The person says retry before finishing: the server lists a fresh page (a new link); that
    one is a new URL and needs its own consent; finishing it completes the call."""
    person = Person(finish=False)

    def waiting(w: Any) -> str | None:
        return "retry" if len(ui.waits) == 1 else None  # then wait for the completion

    ui = ScriptedUI([{"url": "open", "repeat": True}], waiting=waiting)

    async def opener(url: str) -> None:
        person.opened.append(url)
        if len(person.opened) == 2:
            await person.finish_page()

    with anyio.fail_after(BOUND_SECONDS):
        async with reference() as (url, _):
            mode = UrlMode(opener=opener)
            async with ElicitClient(url, ui=ui, protocol="legacy", url_mode=mode) as c:
                result = await c.call_tool("service_status", {})
    assert text_of(result) == "Example API: connected, 3 projects."
    assert len(ui.seen) == 2
    assert len(set(person.opened)) == 2

"""BrowserUI without a browser: its lifetime, the queue's bounds, notices (real sockets, no Chromium)."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import anyio
import pytest

from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult, UrlCapableUI
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.errors import ConfigError
from mcp_elicit.testing import ManualClock
from mcp_elicit.ui.browser import BrowserUI
from mcp_elicit.ui.browser.app import ENDED_PAGE_SECONDS
from mcp_elicit.ui.browser.questions import MAX_QUEUED

pytestmark = pytest.mark.anyio

PROMPT = FormPrompt(Requester("s", "stdio: s"), Purpose(), "Name?", Form((Field.string("n"),)))


def _post(url: str, body: str) -> int:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=10)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    connection.request("POST", parts.path, body=body, headers=headers)
    status = connection.getresponse().status
    connection.close()
    return status


def _get(url: str) -> tuple[int, str]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=10)
    connection.request("GET", parts.path)
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    return response.status, body


async def test_the_browser_ui_is_a_url_capable_ui_and_has_no_page_before_it_is_entered() -> None:
    ui = BrowserUI()
    assert isinstance(ui, UrlCapableUI)
    with pytest.raises(ConfigError) as refused:
        _ = ui.url
    assert refused.value.key == "browser_ui"


async def test_questions_still_open_when_the_page_closes_end_as_cancel() -> None:
    results: list[UIResult] = []
    stop = anyio.Event()
    ui = BrowserUI(clock=ManualClock())

    async def serve() -> None:
        async with ui:
            await stop.wait()

    async def ask() -> None:
        results.append(await ui.ask_form(PROMPT))

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        tg.start_soon(ask)
        with anyio.fail_after(5):
            while not ui.queue.items:
                await ui.queue.changed.wait()
        stop.set()
    assert results == [UIResult("cancel")]


async def test_a_full_queue_cancels_the_next_question_at_once() -> None:
    async with BrowserUI(clock=ManualClock()) as ui, anyio.create_task_group() as tg:
        for _ in range(MAX_QUEUED):
            tg.start_soon(ui.ask_form, PROMPT)
        with anyio.fail_after(5):
            while len(ui.queue.items) < MAX_QUEUED:
                await ui.queue.changed.wait()
        assert await ui.ask_form(PROMPT) == UIResult("cancel")
        tg.cancel_scope.cancel()


async def test_a_notice_is_shown_on_the_page_as_text() -> None:
    async with BrowserUI(clock=ManualClock()) as ui:
        await ui.notice(Requester("<b>srv</b>", "x"), "asking too often <script>")
        status, body = await anyio.to_thread.run_sync(_get, ui.url)
    assert status == 200
    assert "&lt;b&gt;srv&lt;/b&gt;: asking too often &lt;script&gt;" in body
    assert "<script>" not in body.split("</head>", 1)[1].replace('<script src="', "")


async def test_url_mode_through_the_page_is_described_as_the_page_and_not_as_a_browser_opening() -> None:
    from mcp_elicit.client.opener import ShowLink
    from mcp_elicit.client.url import UrlMode

    mode = BrowserUI().url_mode()
    assert mode.in_page
    assert "in the page" in mode.describe()
    assert "opens in your browser" not in mode.describe()
    terminal = UrlMode(opener=ShowLink(print))
    assert (terminal.in_page, terminal.headless) == (False, True)


async def test_an_activity_report_touches_only_the_question_on_screen_and_needs_the_form_token() -> None:
    clock = ManualClock()
    async with BrowserUI(clock=clock) as ui, anyio.create_task_group() as tg:
        tg.start_soon(ui.ask_form, PROMPT)
        with anyio.fail_after(5):
            while not ui.queue.items:
                await ui.queue.changed.wait()
        q = ui.queue.items[0]
        asked = q.touched
        clock.advance(10)
        refused = await anyio.to_thread.run_sync(_post, f"{ui.url}q/{q.id}/active", "csrf=wrong")
        other = await anyio.to_thread.run_sync(_post, f"{ui.url}q/another/active", f"csrf={ui.csrf}")
        assert (refused, other, q.touched) == (403, 204, asked)
        ok = await anyio.to_thread.run_sync(_post, f"{ui.url}q/{q.id}/active", f"csrf={ui.csrf}")
        assert (ok, q.touched) == (204, asked + 10)
        tg.cancel_scope.cancel()


async def test_the_ui_closes_at_once_when_no_tab_is_polling() -> None:
    async with BrowserUI(clock=ManualClock()) as ui:
        status, _ = await anyio.to_thread.run_sync(_get, ui.url)  # a page without its script
        assert status == 200
        started = anyio.current_time()
    assert anyio.current_time() - started < ENDED_PAGE_SECONDS  # nothing to tell: no lingering

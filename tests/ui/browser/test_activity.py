"""The page's script and its session: the person's typing counts as activity, so the idle timeout
does not cancel a form while someone types in it; and when the session ends (or its program is
gone), the tab says so instead of showing a question nobody can answer (real Chromium)."""

from __future__ import annotations

from typing import Any

import anyio.from_thread
import pytest

from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.testing import ManualClock
from mcp_elicit.ui.browser import BrowserUI
from tests.ui.browser.conftest import Running, result_of

pytestmark = pytest.mark.browser

WHO = Requester("deployer", "stdio: python -m deployer")
LONG_FORM = Form((Field.string("first", title="First"), Field.string("second", title="Second")))


async def _expire(running: Running) -> None:
    running.ui.queue.expire_idle()


def _is_activity(request: Any) -> bool:
    return request.method == "POST" and request.url.endswith("/active")


def test_typing_in_a_form_keeps_the_idle_timeout_from_cancelling_it(running: Running, page: Any) -> None:
    answer = running.ask_form(FormPrompt(WHO, Purpose(), "A long form", LONG_FORM))
    page.goto(running.url)
    question = running.ui.queue.head
    assert question is not None
    timeout = running.ui.queue.idle_timeout or 0
    running.clock.advance(timeout - 1)  # the person took their time reading
    page.get_by_label("First").press_sequentially("typed slowly")
    running.until(lambda: question.touched == running.clock())  # the script said so
    running.clock.advance(2)  # past the timeout counted from when the page was shown
    running.call(_expire, running)
    assert not answer.done()
    assert page.get_by_label("First").input_value() == "typed slowly"  # nothing reloaded or lost

    running.clock.advance(timeout)  # then the person leaves: the timeout counts from their last activity
    running.call(_expire, running)
    assert result_of(answer) == UIResult("cancel", decided_by="timeout")


def test_the_script_reports_activity_at_most_once_per_interval(running: Running, page: Any) -> None:
    answer = running.ask_form(FormPrompt(WHO, Purpose(), "A long form", LONG_FORM))
    reports: list[Any] = []
    page.on("request", lambda request: reports.append(request) if _is_activity(request) else None)
    page.goto(running.url)
    with page.expect_response(lambda response: _is_activity(response.request)) as first:
        page.get_by_label("First").press_sequentially("many keys, one report")
    assert first.value.status == 204
    page.get_by_label("Second").click()
    page.get_by_label("Second").press_sequentially("and more")
    page.get_by_role("button", name="Review answers").click()  # a round trip: any report was sent by now
    assert len(reports) == 1
    page.get_by_role("button", name="Cancel").click()
    assert result_of(answer) == UIResult("cancel")


def test_the_page_says_the_session_ended_when_the_ui_closes(page: Any, accessible: Any) -> None:
    with anyio.from_thread.start_blocking_portal() as portal:
        ui = BrowserUI(clock=ManualClock(), idle_check_seconds=3600)
        context = portal.wrap_async_context_manager(ui)
        context.__enter__()
        try:
            running = Running(portal, ui, ManualClock())
            answer = running.ask_form(FormPrompt(WHO, Purpose(), "A long form", LONG_FORM))
            with page.expect_response(lambda response: response.url.endswith("/state")):
                page.goto(running.url)  # the tab is open and polling
            answer.cancel()  # the server gave up: its call ends and takes the question with it
            running.until(lambda: not ui.queue.items)
        finally:
            context.__exit__(None, None, None)  # the session ended; the page hears it before the exit
    page.wait_for_selector("text=This session has ended")
    assert page.locator("form").count() == 0  # no question left with live buttons
    said = page.locator("main").inner_text()
    assert "A question was withdrawn" in said
    assert "You can close this tab" in said
    accessible(page)


def test_the_page_says_the_session_ended_when_its_program_stops_answering(
    running: Running, page: Any
) -> None:
    running.ask_form(FormPrompt(WHO, Purpose(), "A long form", LONG_FORM))
    page.goto(running.url)
    page.wait_for_selector("form.answers")
    page.route("**/state", lambda route: route.abort("connectionrefused"))  # as when the process is gone
    page.wait_for_selector("text=This session has ended")
    assert page.get_by_role("button").count() == 0

"""The page's script reports that the person is working on a question, so the idle timeout does
not cancel a form while someone types in it (real Chromium, the UI's clock injected)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult
from mcp_elicit.core.forms import Field, Form
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

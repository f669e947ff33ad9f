"""The review step and typed answers in real Chromium, as a person meets them: what Send agrees
to stays on screen, a date and time typed the ordinary way (no seconds) is an answer, what the
browser cannot read is a problem, and the link works without its last slash."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult
from mcp_elicit.core.forms import Field, Form
from tests.ui.browser.conftest import Running, result_of

pytestmark = pytest.mark.browser

WHO = Requester("data", "stdio: mcp-elicit serve-data", version="0.1.0")
FOR = Purpose("tools/call", "query", {"sql": "SELECT name, email FROM customers"})


def test_the_review_step_still_shows_the_question_and_its_warnings(
    running: Running, page: Any, accessible: Any
) -> None:
    """Send is the consent: the page it is on says what it agrees to (the server's message, such
    as the query and the personal data it reads, and every warning of the client)."""
    form = Form((Field.single_select("decision", [("run", "Run it"), ("dont_run", "Don't run it")]),))
    message = "It reads personal data: main.customers.email (pii).\nQuery: SELECT name, email FROM customers"
    warning = "This server asks about personal data."
    answer = running.ask_form(FormPrompt(WHO, FOR, message, form, warnings=(warning,)))
    page.goto(running.url)
    page.get_by_role("radio", name="Run it", exact=True).check()
    page.get_by_role("button", name="Review answers").click()
    page.wait_for_selector("table.review")
    assert page.locator(".message").inner_text() == message
    assert warning in page.locator(".warning").inner_text()
    accessible(page)
    page.get_by_role("button", name="Send", exact=True).click()
    assert result_of(answer) == UIResult("accept", {"decision": "run"})


def test_a_date_and_time_typed_without_seconds_is_an_answer(running: Running, page: Any) -> None:
    """Typed with the keyboard as a person does (date, hour, minute, AM/PM): no seconds segment
    left empty that would make the browser send nothing."""
    form = Form((Field.string("when", title="Meeting time", format="date-time"),))
    answer = running.ask_form(FormPrompt(WHO, FOR, "When?", form))
    page.goto(running.url)
    page.get_by_label("Meeting time").focus()
    page.keyboard.type("03012026")
    page.keyboard.press("Tab")  # to the hour
    page.keyboard.type("0930")
    page.keyboard.type("A")  # AM
    page.keyboard.press("Enter")
    page.wait_for_selector("table.review")
    page.get_by_role("button", name="Send", exact=True).click()
    result = result_of(answer)
    assert result.action == "accept"
    assert result.content["when"].startswith("2026-03-01T09:30:00")


def test_a_date_and_time_given_with_seconds_keeps_them(running: Running, page: Any) -> None:
    form = Form((Field.string("when", title="Meeting time", format="date-time"),))
    prompt = FormPrompt(WHO, FOR, "When?", form, values={"when": "2026-03-01T09:30:15"})
    answer = running.ask_form(prompt)
    page.goto(running.url)
    assert page.get_by_label("Meeting time").input_value() == "2026-03-01T09:30:15"
    page.get_by_role("button", name="Review answers").click()
    page.get_by_role("button", name="Send", exact=True).click()
    assert result_of(answer).content["when"].startswith("2026-03-01T09:30:15")


def test_a_number_the_browser_cannot_read_is_a_problem_not_no_answer(running: Running, page: Any) -> None:
    """Chromium sends "1e" typed in a number input as empty: on an optional field that read as
    "no answer" and went to the review unsaid; now the field shows a problem."""
    form = Form((Field.number("ratio", title="Traffic ratio", required=False),))
    answer = running.ask_form(FormPrompt(WHO, FOR, "How much?", form))
    page.goto(running.url)
    page.get_by_label("Traffic ratio").focus()
    page.keyboard.type("1e")
    page.keyboard.press("Enter")
    page.wait_for_selector("#field-0-error")
    page.wait_for_load_state("load")  # the page's script, which sets the focus, has run by then
    assert page.locator("table.review").count() == 0
    assert page.evaluate("document.activeElement.id") == "field-0"
    page.get_by_label("Traffic ratio").fill("0.5")
    page.get_by_role("button", name="Review answers").click()
    page.get_by_role("button", name="Send", exact=True).click()
    assert result_of(answer) == UIResult("accept", {"ratio": 0.5})


def test_a_date_half_typed_is_a_problem_not_no_answer(running: Running, page: Any) -> None:
    form = Form((Field.string("day", title="Start day", format="date", required=False),))
    running.ask_form(FormPrompt(WHO, FOR, "When?", form))
    page.goto(running.url)
    page.get_by_label("Start day").focus()
    page.keyboard.type("0301")  # month and day, no year
    page.keyboard.press("Enter")
    page.wait_for_selector("#field-0-error")
    assert page.locator("table.review").count() == 0


def test_the_link_without_its_last_slash_opens_the_page(running: Running, page: Any) -> None:
    """A person who types the link, or whose copy lost the final "/", gets the page, not a 404."""
    running.ask_form(FormPrompt(WHO, FOR, "Name?", Form((Field.string("n", title="Name"),))))
    page.goto(running.url.rstrip("/"))
    assert page.url == running.url
    assert page.get_by_label("Name").is_visible()
    wrong = running.url.rstrip("/")[:-1] + ("A" if not running.url.rstrip("/").endswith("A") else "B")
    assert page.request.get(wrong, max_redirects=0).status == 404  # only the session's own token

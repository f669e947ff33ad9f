"""The browser UI's forms in real Chromium: every field shape, the review step, decline, cancel,
idle timeout, queueing, and server text that stays text."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult
from mcp_elicit.core.forms import Field, Form
from tests.ui.browser.conftest import Running, result_of

pytestmark = pytest.mark.browser

WHO = Requester("deployer", "stdio: python -m deployer", title="Deployer", version="1.4.2")
FOR = Purpose("tools/call", "deploy", {"service": "billing"})

EVERY_SHAPE = Form(
    (
        Field.string("name", title="Your name", description="As it appears on the badge.", min_length=2),
        Field.string("email", title="Email", format="email"),
        Field.string("homepage", title="Home page", format="uri", required=False),
        Field.string("day", title="Start day", format="date"),
        Field.string("when", title="Meeting time", format="date-time", required=False),
        Field.integer("replicas", title="Replicas", minimum=1, maximum=20, default=2),
        Field.number("ratio", title="Traffic ratio", minimum=0, maximum=1, required=False),
        Field.boolean("notify", title="Notify the team", default=True),
        Field.single_select("region", [("eu", "Europe"), ("us", "United States")], title="Region"),
        Field.multi_select(
            "features",
            [("logs", "Logs"), ("metrics", "Metrics"), ("traces", "Traces")],
            title="Features",
            required=False,
        ),
    )
)


def shape_prompt(**kw: Any) -> FormPrompt:
    values = {f.name: f.default for f in EVERY_SHAPE.fields if f.has_default}
    return FormPrompt(WHO, FOR, "Where should billing go?", EVERY_SHAPE, values=values, **kw)


def test_every_field_shape_is_filled_reviewed_changed_and_sent(
    running: Running, page: Any, accessible: Any, screenshot: Any
) -> None:
    answer = running.ask_form(shape_prompt())
    page.goto(running.url)
    assert page.get_by_label("Replicas").input_value() == "2"  # the default is pre-filled
    assert page.get_by_role("radio", name="Yes").is_checked()
    accessible(page)
    screenshot(page, "form")

    page.get_by_label("Your name").fill("A")  # too short
    page.get_by_label("Email").fill("not an email")
    page.get_by_label("Replicas").fill("50")  # above the maximum
    page.get_by_role("button", name="Review answers").click()
    assert page.locator("#field-0-error").is_visible()
    assert page.locator("#field-1-error").is_visible()
    assert page.locator("#field-5-error").is_visible()
    assert page.locator("#field-3-error").is_visible()  # required date left empty
    assert page.get_by_label("Your name").get_attribute("aria-invalid") == "true"
    accessible(page)
    screenshot(page, "form-errors")

    page.get_by_label("Your name").fill("Ada")
    page.get_by_label("Email").fill("ada@example.org")
    page.get_by_label("Home page").fill("https://example.org/ada")
    page.get_by_label("Start day").fill("2026-03-01")
    page.get_by_label("Meeting time").fill("2026-03-01T09:30:00")
    page.get_by_label("Replicas").fill("3")
    page.get_by_label("Traffic ratio").fill("0.25")
    page.get_by_role("radio", name="No", exact=True).check()
    page.get_by_role("radio", name="Europe").check()
    page.get_by_role("checkbox", name="Logs").check()
    page.get_by_role("checkbox", name="Traces").check()
    page.get_by_role("button", name="Review answers").click()

    review = page.locator("table.review")
    assert "Europe" in review.inner_text()
    assert "Logs, Traces" in review.inner_text()
    accessible(page)
    screenshot(page, "review")
    page.get_by_role("button", name="Change: Region").click()  # change an answer from the review
    page.get_by_role("radio", name="United States").check()
    page.get_by_role("button", name="Review answers").click()
    assert "United States" in page.locator("table.review").inner_text()
    assert not answer.done()  # nothing is sent before Send
    page.get_by_role("button", name="Send").click()

    result = result_of(answer)
    assert result.action == "accept"
    content = dict(result.content)
    when = content.pop("when")
    assert when.startswith("2026-03-01T09:30:00")
    assert len(when) > len("2026-03-01T09:30:00")
    assert content == {
        "name": "Ada",
        "email": "ada@example.org",
        "homepage": "https://example.org/ada",
        "day": "2026-03-01",
        "replicas": 3,
        "ratio": 0.25,
        "notify": False,
        "region": "us",
        "features": ["logs", "traces"],
    }
    EVERY_SHAPE.validate(result.content)  # what is sent satisfies the form
    assert page.locator(".flash").inner_text() == "Sent."


def test_a_retry_shows_the_pipelines_refusal_next_to_the_field(running: Running, page: Any) -> None:
    prompt = shape_prompt(errors={"email": "the server refused this address"})
    answer = running.ask_form(prompt)
    page.goto(running.url)
    assert "the server refused this address" in page.locator("#field-1-error").inner_text()
    page.get_by_role("button", name="Cancel").click()
    assert result_of(answer) == UIResult("cancel")


@pytest.mark.parametrize(("button", "action"), [("Decline", "decline"), ("Cancel", "cancel")])
def test_decline_and_cancel_end_the_question_from_the_form_and_the_review(
    running: Running, page: Any, button: str, action: str
) -> None:
    form = Form((Field.string("note", title="Note"),))
    first = running.ask_form(FormPrompt(WHO, FOR, "A note?", form))
    page.goto(running.url)
    page.get_by_role("button", name=button).click()  # with a required field still empty
    assert result_of(first) == UIResult(action)

    second = running.ask_form(FormPrompt(WHO, FOR, "A note?", form))
    page.goto(running.url)
    page.get_by_label("Note").fill("hello")
    page.get_by_role("button", name="Review answers").click()
    page.get_by_role("button", name=button).click()
    assert result_of(second) == UIResult(action)


def test_a_question_left_idle_ends_as_cancel_by_timeout(
    running: Running, page: Any, accessible: Any, screenshot: Any
) -> None:
    answer = running.ask_form(FormPrompt(WHO, FOR, "Still there?", Form((Field.string("x"),))))
    page.goto(running.url)
    running.clock.advance(running.ui.queue.idle_timeout or 0)
    running.call(_expire, running)
    assert result_of(answer) == UIResult("cancel", decided_by="timeout")
    page.reload()
    assert "nobody answered it in time" in page.locator(".flash").inner_text()
    assert page.locator("h1").inner_text() == "No question is waiting"
    accessible(page)
    screenshot(page, "idle-timeout")


async def _expire(running: Running) -> None:
    running.ui.queue.expire_idle()


def test_a_second_question_waits_behind_the_first(running: Running, page: Any, screenshot: Any) -> None:
    other = Requester("calendar", "http://127.0.0.1:9/mcp", version="0.1")
    first = running.ask_form(FormPrompt(WHO, FOR, "First question", Form((Field.string("a", title="A"),))))
    second = running.ask_form(
        FormPrompt(other, Purpose(), "Second question", Form((Field.string("b", title="B"),)))
    )
    page.goto(running.url)
    assert page.locator(".message").inner_text() == "First question"
    assert "1 more question waiting" in page.locator("#queued").inner_text()
    screenshot(page, "queued")
    page.get_by_label("A").fill("one")
    page.get_by_role("button", name="Review answers").click()
    page.get_by_role("button", name="Send").click()
    assert result_of(first) == UIResult("accept", {"a": "one"})
    assert page.locator(".message").inner_text() == "Second question"
    assert "calendar" in page.locator(".server").inner_text()
    assert not second.done()
    page.get_by_role("button", name="Decline").click()
    assert result_of(second) == UIResult("decline")


HOSTILE = (
    '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    "<b>bold</b> &amp; {{ 7*7 }} \u202egnp.exe\u202c \x1b[31mred"
)


def test_server_text_with_markup_scripts_and_escapes_is_shown_inert(
    running: Running, page: Any, screenshot: Any
) -> None:
    hostile_who = Requester(HOSTILE, "stdio: x", title="<i>t</i>")
    form = Form(
        (
            Field.single_select(
                "pick",
                [("a", "<script>window.pwned=3</script>A"), ("b", "<u>B</u>")],
                title="<em>Pick</em>",
                description=HOSTILE,
            ),
        )
    )
    answer = running.ask_form(
        FormPrompt(
            hostile_who,
            Purpose("tools/call", "<x>", {"q": "</dd><script>"}),
            HOSTILE,
            form,
            warnings=(HOSTILE,),
        )
    )
    page.goto(running.url)
    assert page.evaluate("window.pwned") is None
    for tag in ("main script", "main img", "main b", "main i", "main em", "main u", "main x"):
        assert page.locator(tag).count() == 0, tag
    message = page.locator(".message").inner_text()
    assert "<script>window.pwned=1</script>" in message
    assert "{{ 7*7 }}" in message
    assert "\u202e" not in message
    assert "\x1b" not in message
    assert "<script>window.pwned=3</script>A" in page.locator("fieldset").inner_text()
    screenshot(page, "hostile-text")
    page.get_by_role("radio", name="<u>B</u>").check()
    page.get_by_role("button", name="Review answers").click()
    page.get_by_role("button", name="Send").click()
    assert result_of(answer) == UIResult("accept", {"pick": "b"})


def test_a_form_without_fields_is_shown_as_the_policys_approval(
    running: Running, page: Any, accessible: Any, screenshot: Any
) -> None:
    message = (
        "This server wants to ask you a question (for tool deploy). Accept (send this empty form) to see "
        "the question, or decline to refuse."
    )
    answer = running.ask_form(FormPrompt(WHO, FOR, message, Form(()), approval=True))
    page.goto(running.url)
    assert "Allow" in page.locator("h1").inner_text()
    assert "send this empty form" not in page.content()
    assert page.locator("input:not([type=hidden])").count() == 0
    accessible(page)
    screenshot(page, "approval")
    page.get_by_role("button", name="Allow").click()
    assert result_of(answer) == UIResult("accept", {})

    refused = running.ask_form(FormPrompt(WHO, FOR, message, Form(()), approval=True))
    page.goto(running.url)
    page.get_by_role("button", name="Refuse").click()
    assert result_of(refused) == UIResult("decline")


def test_a_servers_empty_form_in_the_policys_words_is_not_shown_as_the_policys_approval(
    running: Running, page: Any
) -> None:
    """The server controls the message, not the pipeline's approval flag: its copy of the
    wording gets the plain go-ahead page, its whole message shown."""
    message = (
        "This server wants to delete every backup (for tool spoof). Accept (send this empty form) to "
        "see the question, or decline to refuse."
    )
    answer = running.ask_form(FormPrompt(WHO, FOR, message, Form(())))
    page.goto(running.url)
    assert "Allow" not in page.locator("h1").inner_text()
    assert "Your policy" not in page.content()
    assert "send this empty form" in page.content()
    page.get_by_role("button", name="Decline").click()
    assert result_of(answer) == UIResult("decline")


def test_the_form_works_with_the_keyboard_alone(running: Running, page: Any) -> None:
    form = Form((Field.string("city", title="City"), Field.boolean("sure", title="Sure")))
    answer = running.ask_form(FormPrompt(WHO, FOR, "Where?", form))
    page.goto(running.url)
    page.keyboard.press("Tab")  # first stop inside the form is the first field
    for _ in range(10):
        if page.evaluate("document.activeElement.id") == "field-0":
            break
        page.keyboard.press("Tab")
    page.keyboard.type("Oslo")
    page.keyboard.press("Tab")
    page.keyboard.press("Space")  # the first radio: Yes
    page.keyboard.press("Enter")  # submits to the review
    page.wait_for_selector("table.review")
    page.get_by_role("button", name="Send").focus()
    page.keyboard.press("Enter")
    assert result_of(answer) == UIResult("accept", {"city": "Oslo", "sure": True})


def test_the_form_path_works_without_javascript(running: Running, browser: Any) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        tab = context.new_page()
        form = Form((Field.string("city", title="City"), Field.integer("n", title="How many", minimum=1)))
        answer = running.ask_form(FormPrompt(WHO, FOR, "Where?", form))
        tab.goto(running.url)
        tab.get_by_label("City").fill("Oslo")
        tab.get_by_label("How many").fill("0")
        tab.get_by_role("button", name="Review answers").click()
        assert tab.locator("#field-1-error").is_visible()  # checked by the page, not by a script
        tab.get_by_label("How many").fill("2")
        tab.get_by_role("button", name="Review answers").click()
        tab.get_by_role("button", name="Change: City").click()
        tab.get_by_label("City").fill("Bergen")
        tab.get_by_role("button", name="Review answers").click()
        tab.get_by_role("button", name="Send").click()
        assert result_of(answer) == UIResult("accept", {"city": "Bergen", "n": 2})
    finally:
        context.close()


def test_a_problem_in_a_choice_group_puts_the_focus_on_its_first_choice(running: Running, page: Any) -> None:
    """The page's fragment names the field with the problem; for radios and checkboxes it must
    name a control that takes the focus (a fieldset does not: the focus fell back to the page)."""
    form = Form(
        (
            Field.single_select("env", [("staging", "Staging"), ("prod", "Production")], title="Environment"),
            Field.string("note", title="Note", required=False),
        )
    )
    answer = running.ask_form(FormPrompt(WHO, FOR, "Where?", form))
    page.goto(running.url)
    page.get_by_role("button", name="Review answers").click()
    page.wait_for_selector("#field-0-error")
    page.wait_for_load_state("load")  # the page's script, which sets the focus, has run by then
    focused = "[document.activeElement.id, document.activeElement.type]"
    assert page.evaluate(focused) == ["field-0", "radio"]
    page.get_by_role("radio", name="Staging").check()
    page.get_by_role("button", name="Review answers").click()
    page.get_by_role("button", name="Change: Environment").click()
    page.wait_for_selector("form.answers")
    page.wait_for_load_state("load")
    assert page.evaluate(focused) == ["field-0", "radio"]
    page.get_by_role("button", name="Cancel").click()
    assert result_of(answer) == UIResult("cancel")


def test_send_never_sends_answers_the_page_did_not_show(running: Running, page: Any) -> None:
    """Two tabs on one question: answers reviewed in tab B are not sent by tab A's Send (A showed
    others); A is shown B's answers, and its next Send sends what it then showed."""
    form = Form((Field.string("note", title="Note"),))
    answer = running.ask_form(FormPrompt(WHO, FOR, "A note?", form))
    other = page.context.new_page()
    for tab in (page, other):  # both open on the form
        tab.goto(running.url)
    for tab, note in ((page, "from tab A"), (other, "from tab B")):
        tab.get_by_label("Note").fill(note)
        tab.get_by_role("button", name="Review answers").click()
        tab.wait_for_selector("table.review")
    page.get_by_role("button", name="Send").click()
    page.wait_for_selector(".flash")
    assert not answer.done()  # the server handled the Send before the page came back
    assert page.locator("table.review .answer").inner_text() == "from tab B"
    page.get_by_role("button", name="Send").click()
    assert result_of(answer) == UIResult("accept", {"note": "from tab B"})


def test_long_unbroken_server_text_wraps_inside_the_page(running: Running, page: Any) -> None:
    """Titles, descriptions and option labels at the gate's limits, with no space to break at."""
    form = Form(
        (
            Field.string("a", title="T" * 256, description="D" * 2000),
            Field.single_select("b", [("x", "X" * 256), ("y", "Y" * 256)], title="U" * 256),
            Field.multi_select("c", [(str(i), "M" * 256) for i in range(3)], title="V" * 256, required=False),
        )
    )
    answer = running.ask_form(FormPrompt(WHO, FOR, "W" * 2000, form))
    page.goto(running.url)
    width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert width[0] <= width[1]
    page.get_by_role("button", name="Cancel").click()
    assert result_of(answer) == UIResult("cancel")

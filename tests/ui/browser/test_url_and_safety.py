"""The browser UI's URL consent and waiting screens, and the page's own defences, in real Chromium."""

from __future__ import annotations

import http.client
from typing import Any
from urllib.parse import urlsplit

import pytest

from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult, UrlPrompt, UrlWaiting
from mcp_elicit.client.url import url_warnings
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.core.urls import check_url, escape_for_display
from mcp_elicit.errors import UrlHandoffStopped
from mcp_elicit.ui.browser.guard import CONTENT_SECURITY_POLICY
from tests.ui.browser.conftest import Running, result_of

pytestmark = pytest.mark.browser

WHO = Requester("payments", "https://mcp.example.org/mcp", version="2.0")
FOR = Purpose("tools/call", "connect_bank", {"bank": "demo"})


def url_prompt(url: str) -> UrlPrompt:
    """What the client's URL stage hands a UI (client/url.py UrlMode.prompt)."""
    v = check_url(url)
    parts = v.parts
    display = {
        "scheme": escape_for_display(parts.scheme),
        "subdomain": escape_for_display(parts.subdomain),
        "registrable_domain": escape_for_display(parts.registrable_domain),
        "rest": escape_for_display(parts.rest),
    }
    return UrlPrompt(
        WHO,
        FOR,
        "Sign in to your bank to link it.",
        escape_for_display(v.display_url),
        display,
        url_warnings(v),
        v.verdict,
        v.reasons,
    )


def test_url_consent_highlights_the_site_warns_of_a_look_alike_and_opens_without_referrer(
    running: Running, page: Any, accessible: Any, screenshot: Any
) -> None:
    url = "https://paypal.com.secure-login.example.net/link?step=1"
    prompt = url_prompt(url)
    assert prompt.verdict == "warn"
    assert "embedded_domain" in prompt.reasons
    consent = running.ask_url(prompt)
    page.goto(running.url)
    assert page.locator("mark.site").inner_text() == "example.net"
    assert page.locator(".url").inner_text() == url
    assert "(embedded_domain)" in page.locator(".warning").first.inner_text()
    assert page.locator(f'a[href="{url}"]').count() == 0  # nothing opens before consent
    accessible(page)
    screenshot(page, "url-consent")
    page.get_by_role("button", name="Open the page").click()
    assert result_of(consent) == UIResult("accept")

    # The client records the consent, then calls the opener, then shows the waiting screen.
    running.call(running.ui.opener, url)
    waiting = running.wait_url(UrlWaiting(prompt, "retry", check=1, max_checks=5, next_check_seconds=10))
    page.goto(running.url)
    link = page.get_by_role("link", name="Open example.net in a new tab")
    assert link.get_attribute("href") == url
    assert link.get_attribute("target") == "_blank"
    assert set((link.get_attribute("rel") or "").split()) >= {"noopener", "noreferrer"}
    accessible(page)
    screenshot(page, "waiting")
    page.get_by_role("button", name="I am done: check now").click()
    assert result_of(waiting) == "retry"

    again = running.wait_url(UrlWaiting(prompt, "retry", check=2, max_checks=5, next_check_seconds=10))
    page.goto(running.url)
    page.get_by_role("button", name="Cancel").click()
    assert result_of(again) == "cancel"


def test_a_blocked_url_is_never_clickable_or_openable(
    running: Running, page: Any, accessible: Any, screenshot: Any
) -> None:
    url = "https://paypa1.com/login"
    prompt = url_prompt(url)
    assert prompt.verdict == "block"
    consent = running.ask_url(prompt)
    page.goto(running.url)
    assert page.get_by_role("button", name="Open the page").count() == 0
    assert page.locator("a[href*='paypa1']").count() == 0
    assert "paypal.com" in page.locator(".warning").first.inner_text()
    accessible(page)
    screenshot(page, "url-blocked")
    # Even a forged "open" is refused by the page, and the question stays open.
    token = page.locator("input[name=csrf]").input_value()
    response = page.request.post(
        f"{running.url}q/{running.ui.queue.items[0].id}", form={"csrf": token, "do": "open"}
    )
    assert response.status == 409
    assert not consent.done()
    with pytest.raises(UrlHandoffStopped) as refused:
        running.call(running.ui.opener, url)  # the opener refuses it too
    assert refused.value.reason == "refused"
    page.get_by_role("button", name="Decline").click()
    assert result_of(consent) == UIResult("decline")


def _request(running: Running, method: str, path: str, headers: dict[str, str], body: str = "") -> Any:
    base = urlsplit(running.url)
    connection = http.client.HTTPConnection(base.hostname or "", base.port, timeout=10)
    connection.request(method, path, body=body.encode(), headers=headers)
    response = connection.getresponse()
    response.read()
    connection.close()
    return response


def test_a_request_to_another_host_name_is_told_the_address_the_page_answers_at_without_its_token(
    running: Running,
) -> None:
    base = urlsplit(running.url)
    connection = http.client.HTTPConnection(base.hostname or "", base.port, timeout=10)
    connection.request("GET", base.path, headers={"Host": f"localhost:{base.port}"})
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    assert response.status == 421
    assert f"http://127.0.0.1:{base.port}/" in body
    assert base.path.strip("/") not in body


def test_requests_without_the_token_with_a_foreign_host_or_without_the_csrf_token_are_refused(
    running: Running, page: Any
) -> None:
    answer = running.ask_form(FormPrompt(WHO, FOR, "Name?", Form((Field.string("n", title="Name"),))))
    page.goto(running.url)
    csrf = page.locator("input[name=csrf]").input_value()
    qid = running.ui.queue.items[0].id
    host = f"127.0.0.1:{running.ui.port}"
    root = urlsplit(running.url).path  # /<token>/
    form = {"Content-Type": "application/x-www-form-urlencoded"}

    good = _request(running, "GET", root, {"Host": host})
    assert good.status == 200
    assert good.getheader("Content-Security-Policy") == CONTENT_SECURITY_POLICY
    assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    assert good.getheader("X-Frame-Options") == "DENY"

    assert _request(running, "GET", "/", {"Host": host}).status == 404
    assert _request(running, "GET", "/" + "x" * 43 + "/", {"Host": host}).status == 404
    assert _request(running, "GET", root + "static/ui.css", {"Host": host}).status == 200
    assert _request(running, "GET", "/static/ui.css", {"Host": host}).status == 404
    for foreign in (f"evil.example:{running.ui.port}", f"localhost:{running.ui.port}", "127.0.0.1"):
        assert _request(running, "GET", root, {"Host": foreign}).status == 421

    post = f"{root}q/{qid}"
    assert _request(running, "POST", post, {"Host": host, **form}, "do=cancel").status == 403
    assert _request(running, "POST", post, {"Host": host, **form}, "do=cancel&csrf=wrong").status == 403
    cross = {"Host": host, "Origin": "http://evil.example", **form}
    assert _request(running, "POST", post, cross, f"do=cancel&csrf={csrf}").status == 403
    assert _request(running, "PUT", root, {"Host": host}).status == 405
    assert not answer.done()  # none of them reached the question

    # The page itself cannot be framed by another site, and no inline script runs in it.
    page.set_content(f'<iframe title="x" src="{running.url}"></iframe>')
    page.wait_for_load_state()
    framed = page.frames[-1]
    assert "csrf" not in framed.content()  # Chromium refused to render it (frame-ancestors 'none')
    page.goto(running.url)
    page.get_by_role("button", name="Cancel").click()
    assert result_of(answer) == UIResult("cancel")


def test_the_page_listens_only_on_the_loopback_address(running: Running) -> None:
    assert urlsplit(running.url).hostname == "127.0.0.1"
    assert running.ui._server is not None
    assert running.ui._server.socket.getsockname()[0] == "127.0.0.1"

"""End to end: `mcp-elicit call --ui browser` against the reference server (a real stdio process),
its elicitations answered in Chromium; the same through `ElicitClient(ui=BrowserUI())`."""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from mcp_elicit.client import ElicitClient
from tests.support import text_of
from tests.ui.browser.conftest import WAIT_SECONDS, Running

pytestmark = pytest.mark.browser

REFERENCE = shlex.join([sys.executable, "-m", "mcp_elicit", "serve-reference"])


def _link_from(process: subprocess.Popen[str]) -> str:
    """The page link `call --ui browser` prints on stderr (bounded wait on the pipe)."""
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], deadline - time.monotonic())
        if not ready:
            break
        line = process.stderr.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"http://127\.0\.0\.1:\d+/[A-Za-z0-9_-]+/", line)
        if found:
            return found.group(0)
    raise AssertionError(f"no link on stderr: {seen}")


def test_call_with_the_browser_ui_answers_the_reference_servers_questions(page: Any, screenshot: Any) -> None:
    command = [
        sys.executable,
        "-m",
        "mcp_elicit",
        "call",
        "--server",
        REFERENCE,
        "--tool",
        "deploy",
        "--args",
        json.dumps({"service": "billing"}),
        "--ui",
        "browser",
        "--json",
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        page.goto(_link_from(process))
        # The default policy asks first: the page reloads itself when the approval arrives.
        page.wait_for_selector("text=Your policy asks you to approve this server")
        page.get_by_role("button", name="Allow").click()
        page.wait_for_selector("form.answers")
        assert "mcp-elicit-reference" in page.locator(".server").inner_text()
        assert 'tool deploy {"service": "billing"}' in page.locator(".purpose").inner_text()
        assert page.locator(".message").inner_text() == "Where should billing be deployed?"
        page.get_by_role("radio", name="production").check()
        page.get_by_role("radio", name="US East (Virginia)").check()
        page.get_by_label("Replicas").fill("4")
        page.get_by_role("button", name="Review answers").click()
        page.get_by_role("button", name="Send").click()
        # The server confirms before production: a yes/no question follows.
        page.wait_for_selector("text=This affects live traffic")
        screenshot(page, "end-to-end-confirm")
        page.get_by_role("radio", name="Yes").check()
        page.get_by_role("button", name="Review answers").click()
        page.get_by_role("button", name="Send").click()
        out, err = process.communicate(timeout=60)
        page.wait_for_selector("text=This session has ended")  # not "keep it open" for a process gone
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    report = json.loads(out)
    assert report["completed"] is True
    assert (
        report["result"]["content"][0]["text"] == "Deployed billing to production in us-east with 4 replicas."
    )
    assert [(e["action"], e["decided_by"]) for e in report["elicitations"]] == [
        ("accept", "person"),
        ("accept", "person"),
    ]  # approved once for the session: the confirm is not approved again
    assert process.returncode == 0
    # the terminal says when a question waits in the page (the form and the confirm; the
    # approval's line may have been read with the link's)
    assert err.count("a question is waiting for you at ") >= 2


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        select.select([], [], [], 0.1)  # a bounded poll for a server process started outside the test
    raise AssertionError("the reference server did not start")


def test_a_url_hand_off_is_consented_opened_and_finished_in_the_browser(page: Any, screenshot: Any) -> None:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    call = None
    try:
        _wait_for_port(port, server)
        call = subprocess.Popen(
            [
                *[sys.executable, "-m", "mcp_elicit", "call", "--server", f"http://127.0.0.1:{port}/mcp"],
                *["--tool", "connect_service", "--ui", "browser", "--json", "--no-audit"],
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        page.goto(_link_from(call))
        page.wait_for_selector("text=Your policy asks you to approve this server")
        page.get_by_role("button", name="Allow").click()
        page.wait_for_selector("mark.site")
        assert page.locator("mark.site").inner_text() == "127.0.0.1"
        page.get_by_role("button", name="Open the page").click()
        link = page.get_by_role("link", name="Open 127.0.0.1 in a new tab")
        assert link.get_attribute("rel") == "noopener noreferrer"
        with page.context.expect_page() as opened:
            link.click()
        handoff = opened.value
        handoff.wait_for_load_state()
        assert handoff.evaluate("window.opener") is None  # no handle back to the question page
        assert handoff.evaluate("document.referrer") == ""  # and no referrer: the token stays here
        handoff.locator("#secret").fill("sk-test-browser-ui")
        handoff.get_by_role("button", name="Save").click()
        handoff.wait_for_load_state()
        assert handoff.title() != "Not for this browser"  # the page takes a real browser's own post
        out, _ = call.communicate(timeout=60)
    finally:
        for process in (call, server):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
    report = json.loads(out)
    assert report["result"]["content"][0]["text"] == "Connected to Example API."
    assert "sk-test-browser-ui" not in out  # the key went to the server's page, never through the client


def test_elicit_client_with_a_browser_ui_hears_a_decline_from_the_page(running: Running, page: Any) -> None:
    async def call() -> str:
        async with ElicitClient(REFERENCE, ui=running.ui) as client:
            result = await client.call_tool("deploy", {"service": "search"})
        return text_of(result)

    future = running.portal.start_task_soon(call)
    page.goto(running.url)
    page.wait_for_selector("form.answers")
    page.get_by_role("button", name="Decline").click()
    assert future.result(timeout=WAIT_SECONDS * 3) == "Nothing deployed (decline)."

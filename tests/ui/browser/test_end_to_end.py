"""End to end: `mcp-elicit call --ui browser` against the reference server (a real stdio process),
its elicitations answered in Chromium; the same through `ElicitClient(ui=BrowserUI())`."""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import subprocess
import sys
import time
from typing import Any

import pytest
from tests.support import text_of
from tests.ui.browser.conftest import WAIT_SECONDS, Running

from mcp_elicit.client import ElicitClient

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
        out, _ = process.communicate(timeout=60)
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

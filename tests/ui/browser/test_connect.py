"""`mcp-elicit connect --ui browser`: the session in the terminal, the questions in the page."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.ui.browser.test_end_to_end import REFERENCE, _link_from

pytestmark = pytest.mark.browser


def test_connect_with_the_browser_ui_asks_in_the_page_and_reports_in_the_terminal(page: Any) -> None:
    command = [
        sys.executable,
        "-m",
        "mcp_elicit",
        "connect",
        "--server",
        REFERENCE,
        "--ui",
        "browser",
        "--no-url",
    ]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        page.goto(_link_from(process))
        assert process.stdin is not None
        process.stdin.write("call deploy " + json.dumps({"service": "search"}) + "\n")
        process.stdin.flush()
        page.wait_for_selector("text=Your policy asks you to approve this server")
        page.get_by_role("button", name="Allow").click()
        page.wait_for_selector("form.answers")
        assert page.locator(".message").inner_text() == "Where should search be deployed?"
        page.get_by_role("button", name="Decline").click()
        out, _ = process.communicate("quit\n", timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "Nothing deployed (decline)." in out
    assert process.returncode == 0

"""URL mode with no browser on this machine (over SSH, in a container): `connect` in a real pty
says it is headless and why, asks consent, then shows the checked link for the person to open
elsewhere and waits; the test plays the person's other device (the fake browser, run by hand)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcp_elicit.client.opener import BROWSER_ENV
from mcp_elicit.reference import build_reference_server
from tests.e2e.servers import serving_http
from tests.ui.screen import Terminal, strip_ansi

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]
FAKE_BROWSER = ROOT / "tests" / "client" / "fake_browser.py"
BOUND_SECONDS = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
async def test_connect_without_a_browser_shows_the_link_after_consent_and_waits(
    protocol: str, tmp_path: Path
) -> None:
    async with serving_http(build_reference_server()) as url:
        argv = [sys.executable, "-m", "mcp_elicit", "connect", "--server", url]
        argv += ["--protocol", protocol, "--no-audit"]

        def drive() -> str:
            env = {k: v for k, v in os.environ.items() if k != BROWSER_ENV}
            env["PATH"] = str(Path(sys.executable).parent)  # no xdg-open on it
            old = dict(os.environ)
            os.environ.clear()
            os.environ.update(env)
            try:
                term = Terminal(argv, cwd=str(ROOT), cols=400)
            finally:
                os.environ.clear()
                os.environ.update(old)
            try:
                term.wait_for("URL mode is headless: no browser can be opened here")
                term.wait_for("Web pages are on (URL mode), headless")
                term.wait_for("mcp>")
                term.type_line("call connect_service {}")
                term.wait_for("Allow? [allow]:")  # the policy's ask-first approval
                term.type_line("")
                term.wait_for("Open this page?")
                assert "Open this link in a browser" not in strip_ansi(term.raw)  # consent first
                term.type_line("open")
                term.wait_for("Open this link in a browser")
                term.wait_for("This client waits here until the page is done")
                shown = strip_ansi(term.raw).split("Open this link in a browser", 1)[1]
                link = re.search(r"https?://\S+", shown)
                assert link is not None
                # The person opens it on another device.
                subprocess.run(
                    [sys.executable, str(FAKE_BROWSER), link.group(0)], check=True, timeout=BOUND_SECONDS
                )
                term.wait_for("Connected to Example API.")
                term.wait_for("mcp>")
                term.type_line("quit")
                assert term.exit_code() == 0
                return strip_ansi(term.raw)
            finally:
                term.close()

        screen = await anyio.to_thread.run_sync(drive)
    assert screen.index("Open this page?") < screen.index("Open this link in a browser")


async def test_connect_to_a_command_that_is_not_a_server_ends_at_its_timeout() -> None:
    argv = [sys.executable, "-m", "mcp_elicit", "connect", "--server", "sleep 100", "--timeout", "1"]
    with anyio.fail_after(BOUND_SECONDS):
        done = await anyio.run_process(argv, check=False, cwd=str(ROOT))
    assert done.returncode == 1
    assert b"did not answer within 1 s (--timeout)" in done.stdout

"""`mcp-elicit call` and `connect` in URL mode, against the reference server over HTTP.

`call` needs no terminal: it runs in-process (click's runner, in a worker thread with its own event
loop) while the server runs in the test's loop. `connect` runs as a real process in a pty. The
browser is `tests/client/fake_browser.py`, named by MCP_ELICIT_BROWSER: the client starts it as a
separate process (no shell) after consent, and it fills in the API key page like a person would.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result

from mcp_elicit.cli import main
from mcp_elicit.client.opener import BROWSER_ENV
from mcp_elicit.reference import build_reference_server
from tests.e2e.servers import serving_http
from tests.ui.screen import Terminal

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]
FAKE_BROWSER = ROOT / "tests" / "client" / "fake_browser.py"
BOUND_SECONDS = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def browser_env(log: Path) -> dict[str, str]:
    return {**os.environ, BROWSER_ENV: f"{sys.executable} {FAKE_BROWSER}", "FAKE_BROWSER_LOG": str(log)}


def browser_log(tmp_path: Path) -> Path:
    """A FIFO the fake browser writes its line into: reading it waits for the browser, no polling."""
    log = tmp_path / "browser.fifo"
    os.mkfifo(log)
    return log


async def call(args: list[str], env: dict[str, str | None]) -> Result:
    """`mcp-elicit call ARGS` in-process, in a worker thread (it runs its own event loop)."""
    with anyio.fail_after(BOUND_SECONDS):
        return await anyio.to_thread.run_sync(
            lambda: CliRunner().invoke(main, ["call", *args], env=env, catch_exceptions=False)
        )


def browser_only(log: Path) -> dict[str, str | None]:
    return {BROWSER_ENV: f"{sys.executable} {FAKE_BROWSER}", "FAKE_BROWSER_LOG": str(log)}


async def wait_for_log(log: Path) -> list[str]:
    """The fake browser runs detached: wait (bounded) until it wrote its line."""
    with anyio.fail_after(BOUND_SECONDS):
        text = await anyio.to_thread.run_sync(log.read_text, abandon_on_cancel=True)
    return text.splitlines()


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
async def test_call_with_scripted_consent_opens_the_page_in_the_browser_and_completes(
    protocol: str, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"steps": [{"url": "open", "match": {"tool": "connect_service"}}]}))
    log = browser_log(tmp_path)
    async with serving_http(build_reference_server()) as url:
        done = await call(
            [
                "--server",
                url,
                "--tool",
                "connect_service",
                "--answers",
                str(answers),
                "--protocol",
                protocol,
                "--json",
                "--no-audit",
            ],
            browser_only(log),
        )
        opened = await wait_for_log(log)
    report: dict[str, Any] = json.loads(done.stdout)
    assert done.exit_code == 0, done.stderr
    assert report["completed"] is True
    assert report["result"]["content"][0]["text"] == "Connected to Example API."
    # one question, as in the trail: the era's automatic re-checks of the page are not listed
    [first] = report["elicitations"]
    assert (first["mode"], first["action"], first["decided_by"]) == ("url", "accept", "script")
    [line] = opened
    assert line.startswith("200 " + url.removesuffix("/mcp") + "/elicit/start/")


async def test_call_without_a_consent_step_declines_the_page_and_opens_nothing(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"otherwise": "accept_defaults"}))
    log = tmp_path / "browser.log"
    async with serving_http(build_reference_server()) as url:
        done = await call(
            [
                "--server",
                url,
                "--tool",
                "connect_service",
                "--answers",
                str(answers),
                "--protocol",
                "legacy",
                "--json",
                "--no-audit",
            ],
            browser_only(log),
        )
    report = json.loads(done.stdout)
    assert report["result"]["content"][0]["text"] == "Example API not connected (decline)."
    assert not log.exists()


async def test_call_no_url_does_not_declare_url_mode(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"steps": [{"url": "open"}]}))
    log = tmp_path / "browser.log"
    async with serving_http(build_reference_server()) as url:
        done = await call(
            [
                "--server",
                url,
                "--tool",
                "connect_service",
                "--answers",
                str(answers),
                "--protocol",
                "legacy",
                "--json",
                "--no-audit",
                "--no-url",
            ],
            browser_only(log),
        )
    report = json.loads(done.stdout)
    assert report["elicitations"] == []
    assert report["result"]["isError"] is True  # the server cannot hand off: no URL mode declared (C1)
    assert not log.exists()


async def test_call_url_without_any_browser_is_headless_and_says_why(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text("[]")
    done = await call(
        ["--server", "http://127.0.0.1:9/mcp", "--tool", "x", "--answers", str(answers), "--url", "--json"],
        {BROWSER_ENV: None, "PATH": ""},
    )
    assert done.exit_code == 1  # nothing listens on port 9
    report = json.loads(done.stdout)
    assert report["url_mode"].startswith("on, headless")
    assert "no browser can be opened here" in report["url_mode"]
    assert "))" not in report["url_mode"]  # one parenthesis, read as a sentence


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
async def test_connect_in_a_terminal_asks_consent_opens_the_page_and_shows_the_result(
    protocol: str, tmp_path: Path
) -> None:
    """U3 with a person at a real terminal: the page opens only after `open`; the tool goes on."""
    log = browser_log(tmp_path)
    opened: list[str] = []
    async with serving_http(build_reference_server()) as url:
        argv = [
            sys.executable,
            "-m",
            "mcp_elicit",
            "connect",
            "--server",
            url,
            "--protocol",
            protocol,
            "--no-audit",
        ]

        def drive() -> str:
            env = browser_env(log)
            old = dict(os.environ)
            os.environ.update(env)
            try:
                term = Terminal(argv, cwd=str(ROOT))
            finally:
                os.environ.clear()
                os.environ.update(old)
            try:
                term.wait_for("Web pages are on")
                term.wait_for("mcp>")
                term.type_line("call connect_service {}")
                term.wait_for("wants to send you to a web page")  # the policy's ask-first approval
                term.wait_for("Allow? [allow]:")
                term.type_line("")
                term.wait_for("asks you to open a web page")
                term.wait_for("Open this page?")
                term.type_line("open")
                opened.extend(anyio.from_thread.run(wait_for_log, log))  # only now does the browser run
                term.wait_for("Connected to Example API.")
                term.wait_for("mcp>")
                term.type_line("quit")
                assert term.exit_code() == 0
                return term.screen()
            finally:
                term.close()

        screen = await anyio.to_thread.run_sync(drive)
    assert "Page    \n" + url.removesuffix("/mcp") + "/elicit/start/" in screen  # a long URL wraps whole
    assert "Site    127.0.0.1\n" in screen
    assert len(opened) == 1


LEGACY_2S = ["--json", "--protocol", "legacy", "--timeout", "2", "--no-audit"]


async def test_a_scripted_legacy_wait_for_a_page_nobody_finishes_ends_at_the_timeout(tmp_path: Path) -> None:
    """A script cannot finish a page: `call --answers` stops waiting at --timeout and exits 1,
    instead of holding the command for the 10-minute wait bound and exiting 0."""
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([{"url": "open"}]))
    async with serving_http(build_reference_server()) as url:
        done = await call(
            [
                "--server",
                url,
                "--tool",
                "connect_service",
                "--answers",
                str(answers),
                "--json",
                "--protocol",
                "legacy",
                "--timeout",
                "2",
                "--no-audit",
            ],
            {BROWSER_ENV: f"{sys.executable} -c pass"},  # a browser that never finishes the page
        )
    assert done.exit_code == 1
    report = json.loads(done.stdout)
    # Whichever bound fires first (the page wait or the wait on the server), both are --timeout.
    assert report["error"]["type"] in ("UrlHandoffStopped", "TimeoutError")
    assert report["completed"] is False

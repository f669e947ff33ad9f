"""Fixtures for the browser tests: Debian's Chromium driven by Playwright, axe-core from npm.

The UI runs on an event loop in a second thread (a blocking portal), because Playwright's sync
API owns the test's own thread. Nothing is downloaded here except axe-core from npm into the
git-ignored `.cache/` when missing; a browser is never downloaded (`playwright install` is not
used: Chromium comes from apt).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest

from mcp_elicit.testing import ManualClock
from mcp_elicit.ui.browser import BrowserUI

CHROMIUM = "/usr/bin/chromium"
INSTALL = "apt-get update && apt-get install -y chromium"
ROOT = Path(__file__).resolve().parents[3]
AXE_DIR = ROOT / ".cache" / "axe"
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
SHOTS = ROOT / "docs" / "browser-ui"
UPDATE_SCREENSHOTS = "MCP_ELICIT_UPDATE_SCREENSHOTS"
WAIT_SECONDS = 10  # bound on waiting for the UI's own state (never a sleep)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # Per module, not per session: Playwright's sync API holds an event loop in this thread while
    # it runs, which would break every async test that runs after the browser tests.
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Chromium is not installed; install it with: {INSTALL}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-background-networking"]
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 840, "height": 640})
    tab = context.new_page()
    tab.set_default_timeout(WAIT_SECONDS * 1000)
    yield tab
    context.close()


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe-core's script (installed from npm into .cache/ when missing)."""
    if not AXE_JS.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is missing: axe-core cannot be installed")
        AXE_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--prefix", str(AXE_DIR), "--no-audit", "--no-fund", "axe-core@4"],
            check=True,
            capture_output=True,
            timeout=300,
        )
    return AXE_JS.read_text(encoding="utf-8")


@pytest.fixture
def accessible(axe_source: str) -> Callable[[Any], None]:
    """Run axe-core in the page (through the debugger, so the page's CSP stays as it is) and fail
    on any serious or critical violation."""

    def check(tab: Any) -> None:
        tab.evaluate(axe_source + ";0")
        result = tab.evaluate("async () => JSON.stringify(await axe.run(document))")
        violations = [v for v in json.loads(result)["violations"] if v["impact"] in ("serious", "critical")]
        assert violations == [], [(v["id"], v["help"], [n["target"] for n in v["nodes"]]) for v in violations]

    return check


@pytest.fixture
def screenshot(tmp_path: Path) -> Callable[[Any, str], None]:
    """Take the page as NAME.png (the viewport down to the end of the page's card): into
    docs/browser-ui/ when MCP_ELICIT_UPDATE_SCREENSHOTS is set, else into the test's temporary
    directory, so an ordinary test run leaves the work tree as it was."""
    shots = SHOTS if os.environ.get(UPDATE_SCREENSHOTS) else tmp_path

    def take(tab: Any, name: str) -> None:
        shots.mkdir(parents=True, exist_ok=True)
        box = tab.locator("main").bounding_box()
        viewport = tab.viewport_size
        height = min(viewport["height"], int(box["y"] + box["height"] + 16)) if box else viewport["height"]
        clip = {"x": 0, "y": 0, "width": viewport["width"], "height": height}
        tab.screenshot(path=str(shots / f"{name}.png"), clip=clip, type="png", scale="css")

    return take


class Running:
    """A BrowserUI served from a second thread; `ask_*` start a question and return its future."""

    def __init__(self, portal: anyio.from_thread.BlockingPortal, ui: BrowserUI, clock: ManualClock) -> None:
        self.portal, self.ui, self.clock = portal, ui, clock

    @property
    def url(self) -> str:
        return self.ui.url

    def ask_form(self, prompt: Any) -> Future[Any]:
        return self._ask(self.ui.ask_form, prompt)

    def ask_url(self, prompt: Any) -> Future[Any]:
        return self._ask(self.ui.ask_url, prompt)

    def wait_url(self, waiting: Any) -> Future[Any]:
        return self._ask(self.ui.wait_url, waiting)

    def _ask(self, method: Any, prompt: Any) -> Future[Any]:
        before = len(self.ui.queue.items)
        future = self.portal.start_task_soon(method, prompt)
        self.until(lambda: len(self.ui.queue.items) > before or future.done())
        return future

    def call(self, func: Callable[..., Any], *args: Any) -> Any:
        return self.portal.call(func, *args)

    def until(self, predicate: Callable[[], bool]) -> None:
        """Wait (bounded) until the UI's state satisfies `predicate`; woken by each change."""

        async def wait() -> None:
            with anyio.fail_after(WAIT_SECONDS):
                while not predicate():
                    changed = self.ui.queue.changed
                    with anyio.move_on_after(0.05):
                        await changed.wait()

        self.portal.call(wait)


@pytest.fixture
def running() -> Iterator[Running]:
    clock = ManualClock()
    with anyio.from_thread.start_blocking_portal() as portal:
        ui = BrowserUI(clock=clock, idle_check_seconds=3600)
        with portal.wrap_async_context_manager(ui):
            yield Running(portal, ui, clock)


def result_of(future: Future[Any]) -> Any:
    return future.result(timeout=WAIT_SECONDS)

"""Opening a checked URL in the person's own browser, never through a shell (U3, U4).

The client opens a URL only after the person consented, and only where neither the client nor
the model can read the page (U3): the person's desktop browser, started as a separate process.
The opener gets the argument vector directly (`subprocess.Popen(argv)`, no shell, the URL as one
argument), so nothing in a URL can be read as a command.

Which browser:

1. `MCP_ELICIT_BROWSER` (`BROWSER_ENV`): a command line, split like a shell would
   (`shlex.split`) and never run through one; the URL is added as its last argument. For a
   browser of your choice, or a test double that drives the page.
2. macOS: `/usr/bin/open`; Windows: `os.startfile` (the system's URL handler).
3. Elsewhere: `xdg-open` from the PATH, only with a desktop session (`DISPLAY` or
   `WAYLAND_DISPLAY` set): without one, xdg-open falls back to a text browser in this terminal.
4. None of these: `system_opener()` returns None. `mcp-elicit call`/`connect` then use the
   headless opener (`ShowLink`): after the person consents, the checked link is shown for them to
   open on a device that has a browser (over SSH, in a container), and the waiting screen follows.

Python's `webbrowser` module is not used: on a machine without a desktop it picks a text browser
(lynx, w3m) that would run in the client's own terminal, where the page is not out of band.

Every opener here refuses anything but an `http(s)://` URL whose check is not `block`
(defence in depth: the URL stage has already checked it).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final

import anyio.to_thread

from mcp_elicit.core.urls import check_url
from mcp_elicit.errors import ConfigError

__all__ = ["BROWSER_ENV", "NO_BROWSER_REASON", "ShowLink", "UrlOpener", "argv_opener", "system_opener"]

BROWSER_ENV: Final = "MCP_ELICIT_BROWSER"

UrlOpener = Callable[[str], Awaitable[None]]
"""Opens one checked URL out of band; raises when it cannot (the question then ends as cancel)."""

NO_BROWSER_REASON: Final = f"no browser can be opened here: no {BROWSER_ENV}, no desktop session"


class ShowLink:
    """The headless opener: shows the checked link (after consent) for the person to open elsewhere.

    `show` gets the cleaned link; the terminal prints it on its own line, so it can be copied."""

    headless: Final = True

    def __init__(self, show: Callable[[str], None]) -> None:
        self._show = show

    async def __call__(self, url: str) -> None:
        _openable(url)
        self._show(url)


def _openable(url: str) -> None:
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise ConfigError("url", "only http(s) URLs are opened")
    if check_url(url).verdict == "block":
        raise ConfigError("url", "the URL check blocks this URL")


def _spawn(argv: Sequence[str]) -> None:
    # No shell; no terminal for the browser (it must not share the client's screen or input);
    # its own session, so a Ctrl-C in the client's terminal does not reach it.
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    # Reap it whenever it ends (xdg-open may live as long as the browser), without waiting here.
    threading.Thread(target=process.wait, name="mcp-elicit-browser", daemon=True).start()


def argv_opener(argv: Sequence[str]) -> UrlOpener:
    """An opener that runs `argv + [url]` (no shell) and does not wait for it to finish."""
    command = tuple(argv)
    if not command:
        raise ConfigError(BROWSER_ENV, "the browser command is empty")

    async def open_url(url: str) -> None:
        _openable(url)
        await anyio.to_thread.run_sync(_spawn, [*command, url])

    return open_url


async def _startfile(url: str) -> None:  # pragma: no cover - Windows only
    _openable(url)
    startfile = getattr(os, "startfile")  # noqa: B009 - defined on Windows only
    await anyio.to_thread.run_sync(startfile, url)


def system_opener(environ: Mapping[str, str] | None = None) -> UrlOpener | None:
    """The opener for this machine (see the module docstring), or None when there is none."""
    env = os.environ if environ is None else environ
    command = env.get(BROWSER_ENV, "").strip()
    if command:
        return argv_opener(shlex.split(command))
    if sys.platform == "darwin":  # pragma: no cover - macOS only
        return argv_opener(["/usr/bin/open"]) if os.path.exists("/usr/bin/open") else None
    if sys.platform == "win32":  # pragma: no cover - Windows only
        return _startfile
    if not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return None  # SSH or a container: xdg-open would pick lynx/w3m in this very terminal
    found = shutil.which("xdg-open", path=env.get("PATH"))
    return argv_opener([found]) if found else None

"""A stand-in browser for the command-line tests, started by the client's opener (MCP_ELICIT_BROWSER).

`python tests/client/fake_browser.py URL` opens the hand-off link and saves the test API key on
its page, as a person at a browser would, then appends the URL and the final page status to the
file named by FAKE_BROWSER_LOG.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import anyio

from tests.server.handoff_support import SECRET_VALUE, Browser


async def main(url: str) -> None:
    browser = Browser()
    try:
        page = await browser.enter_key(url, SECRET_VALUE)
    finally:
        await browser.close()
    log = os.environ.get("FAKE_BROWSER_LOG")
    if log:
        await anyio.Path(log).write_text(f"{page.status} {url}\n")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])

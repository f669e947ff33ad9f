"""A stand-in browser for the command-line OAuth tests, started by the client's opener (MCP_ELICIT_BROWSER).

`python tests/client/oauth_browser.py URL` follows the authorization link through the authorization
server's redirect to the client's loopback callback, as a browser would, then appends the final
page's status and URL to the file named by FAKE_BROWSER_LOG.
"""

from __future__ import annotations

import os
import sys

import anyio
import httpx2


async def main(url: str) -> None:
    async with httpx2.AsyncClient(follow_redirects=True, timeout=30) as http:
        response = await http.get(url)
    log = os.environ.get("FAKE_BROWSER_LOG")
    if log:
        async with await anyio.open_file(log, "a", encoding="utf-8") as f:
            await f.write(f"{response.status_code} {response.url}\n")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])

"""A FastMCP server over stdio whose tool asks a question, for tests/server/test_fastmcp_log_lines.py.

`python fastmcp_logging_server.py MODE`: MODE "plain" configures no logging (as most FastMCP
servers), "twice" installs the kit on a second server as well; "before" and "after" call
`logging.basicConfig` before or after `install`; "quiet" calls it after `install` at WARNING.
"""

from __future__ import annotations

import logging
import sys
from typing import TypedDict

import fastmcp

from mcp_elicit import ask, install

ROOT_FORMAT = "ROOT %(levelname)s %(name)s: %(message)s"


class Name(TypedDict):
    name: str


def main(mode: str) -> None:
    if mode == "before":
        logging.basicConfig(level=logging.INFO, format=ROOT_FORMAT)
    server = fastmcp.FastMCP("log-lines")
    install(server)
    if mode == "twice":
        install(fastmcp.FastMCP("another"))
    if mode == "after":
        logging.basicConfig(level=logging.INFO, format=ROOT_FORMAT)
    if mode == "quiet":
        logging.basicConfig(level=logging.WARNING, format=ROOT_FORMAT)

    async def greet(ctx: fastmcp.Context) -> str:
        answer = await ask(ctx, "Who are you?", Name)
        return answer.action

    server.tool(greet, name="greet")
    server.run("stdio", show_banner=False)


if __name__ == "__main__":
    main(sys.argv[1])

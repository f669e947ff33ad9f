"""`--ui browser` for `mcp-elicit call` and `connect`: the same commands, questions in a local page.

The page's link goes to stderr (stdout stays the command's own output, `call --json` included).
URL mode uses the page as its opener: after consent, the waiting screen links to the page.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from mcp_elicit.ui.browser.app import BrowserUI

__all__ = ["call_in_browser", "connect_in_browser"]


def _announce(ui: BrowserUI, stream: TextIO) -> None:
    print(f"mcp-elicit: the server's questions appear at {ui.url}", file=stream, flush=True)

    def waiting() -> None:  # each question: the terminal says where it is, not only the page
        print(f"mcp-elicit: a question is waiting for you at {ui.url}", file=stream, flush=True)

    ui.on_question = waiting


async def call_in_browser(
    *args: Any, url_mode: bool | None = None, stream: TextIO = sys.stderr, **kw: Any
) -> Any:
    """`run_call(*args, **kw)` with a `BrowserUI`; URL mode on unless `url_mode` is False."""
    from mcp_elicit.cli.call import run_call

    async with BrowserUI() as ui:
        _announce(ui, stream)
        return await run_call(*args, ui=ui, url_mode=False if url_mode is False else ui.url_mode(), **kw)


async def connect_in_browser(
    spec: str,
    *,
    protocol: Any = "auto",
    config: Any = None,
    audit: bool = True,
    url_mode: bool | None = None,
    stream: TextIO = sys.stderr,
    oauth: Any = None,
) -> int:
    """An interactive `connect` session in the terminal whose questions appear in the page."""
    from mcp_elicit.cli.connect import ConnectSession, open_pipeline_client

    async with BrowserUI() as ui:
        _announce(ui, stream)

        def opener(spec: str, _terminal: Any, protocol: Any, errlog: TextIO) -> Any:
            return open_pipeline_client(spec, ui, protocol, errlog, config=config, audit=audit, oauth=oauth)  # type: ignore[arg-type]

        session = ConnectSession(
            spec, protocol=protocol, opener=opener, url_mode=False if url_mode is False else ui.url_mode()
        )
        return await session.run()

"""The conformance client: what the official suite runs for its client scenarios.

`python -m mcp_elicit.cli.conformance URL` (or `mcp-elicit conformance-client URL`, the default
client command of `.ci/conformance.sh`): connects to the suite's mock server with a kit client whose
UI accepts every form with its defaults, calls every tool that takes no required arguments, and
exits 0 when every call completed. The suite appends the URL as the last argument and sets
`MCP_CONFORMANCE_PROTOCOL_VERSION`; a 2026-07-28 version connects directly, anything else through
the 2025-11-25 handshake (which also opens the standalone GET stream the
`elicitation-sep1034-client-defaults` scenario pushes its question on).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Final

import anyio

from mcp_elicit.client.connection import ElicitClient
from mcp_elicit.core.revisions import is_modern
from mcp_elicit.core.text import clean_text
from mcp_elicit.ui.scripted import ScriptedUI

__all__ = ["main", "run"]

# A bound on the whole run, below the suite's own 30 s scenario timeout, so a hung server ends
# this process with a clear error rather than the suite killing it.
RUN_TIMEOUT_SECONDS: Final = 25.0


async def run(url: str, protocol_version: str | None = None) -> int:
    protocol = protocol_version if protocol_version and is_modern(protocol_version) else "legacy"
    failures = 0
    with anyio.fail_after(RUN_TIMEOUT_SECONDS):
        async with ElicitClient(url, ui=ScriptedUI.accept_defaults(), protocol=protocol) as client:
            for tool in await client.list_tools():
                if tool.input_schema.get("required"):
                    continue
                result = await client.call_tool(tool.name, {})
                if result.is_error:
                    failures += 1
                text = " ".join(getattr(c, "text", "") for c in result.content)
                print(clean_text(f"{tool.name}: {text}", limit=1_000, multiline=False), file=sys.stderr)
            for outcome in client.outcomes:
                print(f"elicitation: {outcome.action} by {outcome.decided_by}", file=sys.stderr)
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m mcp_elicit.cli.conformance URL", file=sys.stderr)
        return 2
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    return anyio.run(run, args[-1], version)


if __name__ == "__main__":
    sys.exit(main())

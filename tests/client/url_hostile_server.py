"""A hostile MCP server for the client's URL-mode tests, run in-process (both eras).

Every tool takes the URL to push, so one server serves every attack:

- `push(url, eid)` (2025-11-25): `elicitation/create` in URL mode; answers with the action.
- `push_then_complete(url, eid, ids)` (2025-11-25): the push, then a completion notification for
  each of `ids` (unknown ids, repeats); answers with the action.
- `required(url, eid, fresh)` (2025-11-25): always -32042 listing `url` (`fresh`: a new id each
  time, else the same). `server.completions` lets the test's opener send the completion.
- `required_list(entries)`: -32042 with `entries` as `data.elicitations`, whatever they are.
- `embedded(url)` (2026-07-28): an `InputRequiredResult` asking for `url`; the retry's answer
  comes back as the result.
- `embedded_forever(url)` (2026-07-28): asks for `url` again on every retry, whatever the answer.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError

NAME = "hostile-url"


class HostileUrlServer:
    def __init__(self) -> None:
        self.server: MCPServer[Any] = MCPServer(NAME)
        self.session: Any = None  # the session of the last call, for completions sent by a test
        self.calls: dict[str, int] = {}
        self._ids = itertools.count(1)
        self._tools()

    async def complete(self, elicitation_id: str) -> None:
        await self.session.send_elicit_complete(elicitation_id)

    def _count(self, tool: str, ctx: Context[Any, Any]) -> None:
        self.session = ctx.request_context.session
        self.calls[tool] = self.calls.get(tool, 0) + 1

    def _tools(self) -> None:
        server = self.server

        @server.tool()
        async def push(ctx: Context[Any, Any], url: str, eid: str = "e-1") -> str:
            self._count("push", ctx)
            result = await ctx.elicit_url("Open this page, please.", url, eid)
            return result.action

        @server.tool()
        async def push_then_complete(ctx: Context[Any, Any], url: str, eid: str, ids: list[str]) -> str:
            self._count("push_then_complete", ctx)
            result = await ctx.elicit_url("Open this page, please.", url, eid)
            for other in ids:
                await ctx.session.send_elicit_complete(other)
            return result.action

        @server.tool()
        async def required(ctx: Context[Any, Any], url: str, eid: str = "r-1", fresh_id: bool = False) -> str:
            self._count("required", ctx)
            elicitation_id = f"{eid}-{next(self._ids)}" if fresh_id else eid
            raise UrlElicitationRequiredError(
                [t.ElicitRequestURLParams(message="Connect first.", url=url, elicitation_id=elicitation_id)]
            )

        @server.tool()
        async def required_fresh_url(ctx: Context[Any, Any], origin: str) -> str:
            self._count("required_fresh_url", ctx)
            n = next(self._ids)
            raise UrlElicitationRequiredError(
                [
                    t.ElicitRequestURLParams(
                        message="Connect first.", url=f"{origin}/page/{n}", elicitation_id=f"f-{n}"
                    )
                ]
            )

        @server.tool()
        async def required_list(ctx: Context[Any, Any], entries: Any) -> str:
            self._count("required_list", ctx)
            raise MCPError(
                code=t.URL_ELICITATION_REQUIRED, message="needs pages", data={"elicitations": entries}
            )

        @server.tool()
        async def embedded(ctx: Context[Any, Any], url: str) -> str | t.InputRequiredResult:
            self._count("embedded", ctx)
            responses = ctx.input_responses or {}
            if "page" in responses:
                return json.dumps(responses["page"].model_dump(mode="json", exclude_none=True))
            return _ask(url)

        @server.tool()
        async def embedded_forever(ctx: Context[Any, Any], url: str) -> str | t.InputRequiredResult:
            self._count("embedded_forever", ctx)
            return _ask(url)


def _ask(url: str) -> t.InputRequiredResult:
    request = t.ElicitRequest(params=t.ElicitRequestURLParams(message="Open this page, please.", url=url))
    return t.InputRequiredResult(input_requests={"page": request}, request_state="s")

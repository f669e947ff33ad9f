"""URL elicitations through the gateway: checked once, pushed to the caller under an id of ours.

The upstream connection declares URL mode honestly: its pipeline has the client kit's URL stages
(`client/url.py`: the URL check, the -32042 retries, the completion tracker), with an "opener" that
opens nothing, because the downstream person opens the page. Each relayed URL goes to the downstream
client under a fresh `elicitationId`; the upstream's id maps to (that downstream request, our id), so
the upstream's `notifications/elicitation/complete` reaches exactly the session that triggered it.
An upstream -32042 is answered the same way: each listed page is pushed, and the client kit retries
the upstream call once the pages are done.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from mcp_elicit.client.model import Decision, Elicitation
from mcp_elicit.client.pipeline import Pipeline
from mcp_elicit.client.sdk import completed_elicitation_id
from mcp_elicit.client.ui_protocol import UrlPrompt
from mcp_elicit.client.url import UrlMode
from mcp_elicit.server import sdk as server_sdk

if TYPE_CHECKING:
    from mcp_elicit.core.urls import UrlVerdict

__all__ = ["MAX_URL_ROUTES", "CompletionRoutes", "RelayUrlMode", "TieToCall"]

# Relayed URL elicitations whose completion is still expected, per upstream connection; the oldest
# route is forgotten beyond this (its completion then reaches nobody).
MAX_URL_ROUTES: Final = 64


class CompletionRoutes:
    """Upstream elicitationId -> (the downstream request that asked, our elicitationId)."""

    def __init__(self) -> None:
        self._routes: OrderedDict[str, tuple[Any, str]] = OrderedDict()
        self.notes: dict[int, tuple[str | None, str]] = {}  # id(UrlPrompt) -> (upstream id, URL)

    def add(self, upstream_id: str, ctx: Any, ours: str) -> None:
        self._routes[upstream_id] = (ctx, ours)
        while len(self._routes) > MAX_URL_ROUTES:
            self._routes.popitem(last=False)

    async def complete(self, upstream_id: str) -> None:
        route = self._routes.pop(upstream_id, None)
        if route is None:  # unknown or repeated: nobody to tell (U6)
            return
        ctx, ours = route
        session = server_sdk.session_of(ctx)
        if session is not None:
            await server_sdk.send_elicit_complete(session, ours, server_sdk.request_id(ctx))


@runtime_checkable
class Ties(Protocol):
    def tie(self, e: Elicitation) -> object: ...


class TieToCall:
    """The first stage of an upstream connection's pipeline: the relay (`RelayUI.tie`) ties each
    question to the downstream call it will be relayed for, before anything decides on it, so
    every consent record names that call, refusals by the guardrails included."""

    name = "tie_to_call"

    def __init__(self, relay: Ties) -> None:
        self.relay = relay

    async def __call__(self, e: Elicitation) -> Decision | None:
        self.relay.tie(e)
        return None


class RelayUrlMode(UrlMode):
    """URL mode for an upstream connection of the gateway."""

    def __init__(self, routes: CompletionRoutes) -> None:
        async def downstream_opens(url: str) -> None:
            return None  # the downstream person opens the page; the gateway never does

        super().__init__(opener=downstream_opens)
        self.routes = routes

    def install(self, pipeline: Pipeline) -> None:
        """The client kit's URL stages, and first of all `TieToCall` when the pipeline's UI is the
        relay (installing URL mode is where the client kit hands the gateway its pipeline)."""
        super().install(pipeline)
        if isinstance(pipeline.ui, Ties):
            pipeline.insert(TieToCall(pipeline.ui), before=pipeline.names[0])

    def prompt(self, e: Elicitation, verdict: UrlVerdict) -> UrlPrompt:
        """The prompt for the relay, noting what the UI protocol does not carry: the upstream's
        elicitationId and the canonical URL the check produced."""
        shown = super().prompt(e, verdict)
        self.routes.notes[id(shown)] = (e.elicitation_id, verdict.canonical or "")
        if e.elicitation_id is not None:
            # Tracked before the question goes downstream: the person may finish the page before
            # their client answers accept (mcpdo: open the page, then `--done`), and a completion
            # for an id not yet tracked would be ignored, leaving a -32042 retry waiting forever.
            self.tracker.expect(e.elicitation_id)
        return shown

    async def on_message(self, message: Any) -> None:
        await super().on_message(message)
        eid = completed_elicitation_id(message)
        if eid is not None:
            await self.routes.complete(eid)

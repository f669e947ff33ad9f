"""The one module on the server side that speaks the SDK's types.

Everything else in `mcp_elicit.server` works with plain values; an SDK upgrade should
touch only this file.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as t
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel, TypeAdapter, ValidationError

from mcp_elicit.core.revisions import is_modern
from mcp_elicit.server.disconnect import wait_for_disconnect

__all__ = [
    "INVALID_PARAMS",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "URL_ELICITATION_REQUIRED",
    "declared_capabilities",
    "declared_modes",
    "input_required_result",
    "missing_capability",
    "protocol_version",
    "push_request",
]

INVALID_PARAMS = t.INVALID_PARAMS
MISSING_REQUIRED_CLIENT_CAPABILITY = t.MISSING_REQUIRED_CLIENT_CAPABILITY
URL_ELICITATION_REQUIRED = t.URL_ELICITATION_REQUIRED
_INPUT_REQUEST = TypeAdapter[t.InputRequest](t.InputRequest)


def protocol_version(ctx: Context[Any, Any]) -> str | None:
    return ctx.protocol_version


def declared_modes(ctx: Context[Any, Any]) -> frozenset[str]:
    """The elicitation modes the client declared for this request (C1, C2).

    A bare `elicitation: {}` predates modes and means form only.
    """
    try:
        caps = ctx.client_capabilities
    except ValueError:  # no request context: a direct call outside any session
        return frozenset()
    elicitation = caps.elicitation if caps is not None else None
    if elicitation is None:
        return frozenset()
    modes = set()
    if elicitation.form is not None or elicitation.url is None:
        modes.add("form")
    if elicitation.url is not None:
        modes.add("url")
    return frozenset(modes)


def form_request(message: str, requested_schema: dict[str, Any]) -> dict[str, Any]:
    """The wire shape of one embedded (2026-07-28) or pushed form request."""
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": requested_schema},
    }


def url_request(message: str, url: str, elicitation_id: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"mode": "url", "message": message, "url": url}
    if elicitation_id is not None:
        params["elicitationId"] = elicitation_id
    return {"method": "elicitation/create", "params": params}


def input_required_result(requests: dict[str, dict[str, Any]], request_state: str) -> t.InputRequiredResult:
    return t.InputRequiredResult(
        input_requests={key: _INPUT_REQUEST.validate_python(r) for key, r in requests.items()},
        request_state=request_state,
    )


async def _push(ctx: Context[Any, Any], request: dict[str, Any]) -> dict[str, Any] | None:
    """Send a server-to-client `elicitation/create` (2025-11-25 and older) and return the raw result.

    Returns None when the client's reply is not a well-formed ElicitResult; the caller
    treats that like an invalid answer.
    """
    if is_modern(ctx.protocol_version):  # never push on a 2026-07-28 request
        raise RuntimeError("server-to-client requests are not allowed on 2026-07-28 requests")
    try:
        result = await ctx.session.send_request(
            _INPUT_REQUEST.validate_python(request),
            _RESULT_TYPES[request["method"]],
            metadata=ServerMessageMetadata(related_request_id=ctx.request_context.request_id),
        )
    except ValidationError:
        return None
    dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


class PeerGone(Exception):
    """The HTTP connection that carried the question closed before an answer came."""


async def _watch_disconnect(ctx: Context[Any, Any], scope: anyio.CancelScope, gone: list[bool]) -> None:
    # parked on the request's ASGI receive, no polling: see server/disconnect.py
    if await wait_for_disconnect(getattr(ctx.request_context, "request", None)):
        gone.append(True)
        scope.cancel()


async def push_watching(ctx: Context[Any, Any], request: dict[str, Any]) -> dict[str, Any] | None:
    """`_push`, released with PeerGone as soon as the HTTP client disconnects."""
    gone: list[bool] = []
    result: dict[str, Any] | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch_disconnect, ctx, tg.cancel_scope, gone)
        result = await _push(ctx, request)
        tg.cancel_scope.cancel()
    if gone:
        raise PeerGone
    return result


def response_as_dict(response: Any) -> dict[str, Any] | None:
    """An `inputResponses` entry as a plain dict, or None when it is not a result model."""
    if isinstance(response, BaseModel):
        dumped: dict[str, Any] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped
    return None


def declared_capabilities(ctx: Context[Any, Any]) -> frozenset[str]:
    """What the client declared for this request: "elicitation.form", "elicitation.url",
    "sampling", "roots" (C1, C2)."""
    declared = {f"elicitation.{mode}" for mode in declared_modes(ctx)}
    try:
        caps = ctx.client_capabilities
    except ValueError:
        return frozenset(declared)
    if caps is not None and caps.sampling is not None:
        declared.add("sampling")
    if caps is not None and caps.roots is not None:
        declared.add("roots")
    return frozenset(declared)


def missing_capability(capability: str) -> MCPError:
    """-32021 naming `capability` ("elicitation.form", "sampling", ...) as a ClientCapabilities object."""
    head, _, mode = capability.partition(".")
    required: dict[str, Any] = {head: {mode: {}} if mode else {}}
    return MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message=f"This request needs the client's {capability} capability",
        data={"requiredCapabilities": required},
    )


_RESULT_TYPES: dict[str, Any] = {
    "elicitation/create": t.ElicitResult,
    "sampling/createMessage": t.CreateMessageResult,
    "roots/list": t.ListRootsResult,
}


async def push_request(ctx: Context[Any, Any], request: dict[str, Any]) -> dict[str, Any] | None:
    """Send any input request (elicitation, sampling, roots) server-to-client, watching for disconnects."""
    return await push_watching(ctx, request)


# --- URL mode (hand-offs) ---------------------------------------------------------------------


def access_token() -> Any | None:
    """The verified MCP access token of the request being handled (None without MCP authorization)."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    return get_access_token()


def token_principal(token: Any) -> tuple[str, str | None, str | None]:
    """(client_id, issuer, subject) of a verified access token, the SDK's own notion of a principal."""
    from mcp.server.auth.provider import principal_components

    return principal_components(token)


def browser_access_token(request: Any) -> Any | None:
    """The access token the SDK's bearer middleware verified on a plain HTTP request (a page), if any."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

    user = request.scope.get("user")
    return user.access_token if isinstance(user, AuthenticatedUser) else None


def http_request(ctx: Context[Any, Any]) -> Any | None:
    """The Starlette request that carried this MCP request (None over stdio and in memory)."""
    try:
        return getattr(ctx.request_context, "request", None)
    except ValueError:
        return None


def session_of(ctx: Context[Any, Any]) -> Any:
    return ctx.request_context.session


def request_id(ctx: Context[Any, Any]) -> Any:
    return ctx.request_context.request_id


async def send_elicit_complete(session: Any, elicitation_id: str, related_request_id: Any = None) -> None:
    """`notifications/elicitation/complete` to one session (2025-11-25 only; U6)."""
    await session.send_elicit_complete(elicitation_id, related_request_id=related_request_id)


def url_elicitation_required(elicitations: list[dict[str, Any]]) -> MCPError:
    """Error -32042 listing URL elicitations (each with `elicitationId`); 2025-11-25 only (U7)."""
    from mcp.shared.exceptions import UrlElicitationRequiredError

    params = [t.ElicitRequestURLParams.model_validate(e) for e in elicitations]
    return UrlElicitationRequiredError(params)


async def run_watching(ctx: Context[Any, Any], fn: Any) -> Any:
    """Await `fn()`, released with PeerGone as soon as the HTTP client behind `ctx` disconnects."""
    gone: list[bool] = []
    result: Any = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(_watch_disconnect, ctx, tg.cancel_scope, gone)
        result = await fn()
        tg.cancel_scope.cancel()
    if gone:
        raise PeerGone
    return result


def add_route(server: Any, path: str, methods: list[str], endpoint: Any) -> None:
    """Add a plain Starlette route to the server's HTTP app (outside MCP authorization)."""
    server.custom_route(path, methods=methods, include_in_schema=False)(endpoint)


def wrap_lifespan(server: Any, context: Any) -> None:
    """Run the async context manager factory `context()` around the server's own lifespan.

    The SDK enters the lifespan once per HTTP app (and once per in-memory connection); there
    is no public hook for a library to add to it, so this wraps the low-level server's.
    """
    from contextlib import asynccontextmanager

    low = server._lowlevel_server
    inner = low.lifespan

    @asynccontextmanager
    async def lifespan(app: Any) -> Any:
        async with context(), inner(app) as state:
            yield state

    low.lifespan = lifespan

"""The gateway's one door to the SDK: the downstream server, its transports and result shapes.

The downstream side is the SDK's low-level `Server` (the tool list is the upstreams', not
functions of ours) with handlers from `gateway/app.py`; it serves both protocol eras. Questions to
the downstream client go through the server kit (`server/questions.py`), not through here.
"""

from __future__ import annotations

import hmac
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, cast

import anyio
import mcp_types as t
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from pydantic import AnyHttpUrl, BaseModel, TypeAdapter

from mcp_elicit.client.sdk_transport import guarded_http_client
from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.core.wire_codes import INTERNAL_ERROR, INVALID_PARAMS
from mcp_elicit.errors import ElicitError
from mcp_elicit.gateway.auth import GatewayOAuth, Introspection, mcp_url
from mcp_elicit.server.stdin import stdin_lines

__all__ = [
    "CONNECTION_CLOSED",
    "MAX_LISTEN_STREAMS_PER_USER",
    "Listeners",
    "bearer_of",
    "build_server",
    "connection_closed",
    "connection_of",
    "error_result",
    "error_text",
    "http_status",
    "input_required",
    "jsonrpc_error",
    "not_found",
    "protocol_version",
    "refused",
    "report_progress",
    "request_failed",
    "result_from_json",
    "result_json",
    "send_lists_changed",
    "serve_http",
    "serve_stdio",
    "subject_of",
    "tool_named",
    "upstream_error",
    "with_notice",
]

ListTools = Callable[[Any], Awaitable[list[Any]]]
CallTool = Callable[[Any, str, dict[str, Any], str | None, dict[str, Any]], Awaitable[Any]]
_INPUT_REQUEST = TypeAdapter[t.InputRequest](t.InputRequest)
# `subscriptions/listen` streams (2026-07-28 clients) one user may hold open at once.
MAX_LISTEN_STREAMS_PER_USER: Final = 16


def build_server(
    name: str,
    version: str,
    list_tools: ListTools,
    call_tool: CallTool,
    more: Any = None,
    state_keys: Sequence[bytes] | None = None,
) -> Server[Any]:
    """The downstream server; `more` has `list_prompts`, `get_prompt`, `list_resources`,
    `list_resource_templates`, `read_resource(ctx, ...)` and `listen(ctx, params)` (a 2026-07-28
    client's `subscriptions/listen`) coroutines when prompts, resources and changes are offered
    too. `state_keys` seal `requestState` with keys every replica shares (else a key of this
    process only)."""

    async def on_list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=await list_tools(ctx))

    async def on_call_tool(ctx: Any, params: t.CallToolRequestParams) -> Any:
        arguments = dict(params.arguments or {})
        return await call_tool(ctx, params.name, arguments, params.request_state, _responses(params))

    handlers: dict[str, Any] = {"on_list_tools": on_list_tools, "on_call_tool": on_call_tool}
    if more is not None:

        async def on_list_prompts(ctx: Any, params: Any) -> t.ListPromptsResult:
            return t.ListPromptsResult(prompts=await more.list_prompts(ctx))

        async def on_get_prompt(ctx: Any, params: t.GetPromptRequestParams) -> Any:
            arguments = dict(params.arguments or {})
            return await more.get_prompt(
                ctx, params.name, arguments, params.request_state, _responses(params)
            )

        async def on_list_resources(ctx: Any, params: Any) -> t.ListResourcesResult:
            return t.ListResourcesResult(resources=await more.list_resources(ctx))

        async def on_list_resource_templates(ctx: Any, params: Any) -> t.ListResourceTemplatesResult:
            return t.ListResourceTemplatesResult(resource_templates=await more.list_resource_templates(ctx))

        async def on_read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> Any:
            return await more.read_resource(ctx, str(params.uri), params.request_state, _responses(params))

        async def on_subscriptions_listen(ctx: Any, params: t.SubscriptionsListenRequestParams) -> Any:
            return await more.listen(ctx, params)

        handlers.update(
            on_subscriptions_listen=on_subscriptions_listen,
            on_list_prompts=on_list_prompts,
            on_get_prompt=on_get_prompt,
            on_list_resources=on_list_resources,
            on_list_resource_templates=on_list_resource_templates,
            on_read_resource=on_read_resource,
        )
    server: Server[Any] = _Changing(name, version=version, **handlers)
    # Our requestState (a random single-use id) is sealed on top by the SDK's own boundary.
    security = RequestStateSecurity(keys=list(state_keys)) if state_keys else RequestStateSecurity.ephemeral()
    server.middleware.append(RequestStateBoundary(security, default_audience=name))
    return server


class _Changing(Server[Any]):
    """The low-level server, saying in the 2025-11-25 handshake that its tool, prompt and resource
    lists change (an upstream lost or back: `send_lists_changed`). The HTTP transport asks for
    the options without arguments, hence the default here."""

    def create_initialization_options(self, notification_options: Any = None, *args: Any, **kw: Any) -> Any:
        changes = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
        return super().create_initialization_options(notification_options or changes, *args, **kw)


class Listeners:
    """One user's `subscriptions/listen` streams (2026-07-28 clients), told when the lists change."""

    def __init__(self) -> None:
        self._bus = InMemorySubscriptionBus()
        self._handler = ListenHandler(self._bus, max_subscriptions=MAX_LISTEN_STREAMS_PER_USER)

    async def listen(self, ctx: Any, params: t.SubscriptionsListenRequestParams) -> Any:
        return await self._handler(ctx, params)

    async def lists_changed(self) -> None:
        for event in (ToolsListChanged(), PromptsListChanged(), ResourcesListChanged()):
            await self._bus.publish(event)

    def close(self) -> None:
        """End the open streams gracefully (each sends its final result)."""
        self._handler.close()


def connection_of(ctx: Any) -> Any:
    """The downstream connection a request came on (its standalone channel outlives the request);
    None when the SDK keeps it elsewhere (a private attribute of its per-request session)."""
    return getattr(getattr(ctx, "session", None), "_connection", None)


async def send_lists_changed(connection: Any) -> None:
    """`notifications/tools/list_changed` (and prompts, resources) on a downstream connection; a
    2026-07-28 connection drops them (they travel on `subscriptions/listen` streams there)."""
    await connection.send_tool_list_changed()
    await connection.send_prompt_list_changed()
    await connection.send_resource_list_changed()


def connection_closed(exc: BaseException) -> bool:
    """Whether `exc` is the SDK's "connection closed" for a request (the upstream went away)."""
    return isinstance(exc, MCPError) and exc.error.code == t.CONNECTION_CLOSED


def _responses(params: Any) -> dict[str, Any]:
    """A retry's `inputResponses` as plain JSON, by key."""
    return {k: _plain(v) for k, v in (params.input_responses or {}).items()}


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def protocol_version(ctx: Any) -> str:
    return str(getattr(ctx, "protocol_version", "") or "")


def input_required(key: str, request: dict[str, Any], state: str) -> t.InputRequiredResult:
    """End this downstream run with one question (a wire request; 2026-07-28); the retry carries
    `state`."""
    return t.InputRequiredResult(
        input_requests={key: _INPUT_REQUEST.validate_python(request)}, request_state=state
    )


async def report_progress(ctx: Any, progress: float, total: float | None, message: str | None) -> None:
    """An upstream's progress, sent on the downstream request `ctx` under the downstream's own
    progressToken (nothing when the downstream asked for no progress)."""
    session = getattr(ctx, "session", None)
    if session is not None:
        await session.report_progress(progress, total, message)


def result_json(result: Any) -> Any:
    """A tool result as JSON (a replica hands it to the one the client reached)."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


_RESULTS: dict[str, type[BaseModel]] = {
    "tools/call": t.CallToolResult,
    "prompts/get": t.GetPromptResult,
    "resources/read": t.ReadResourceResult,
}


def result_from_json(value: Any, method: str = "tools/call") -> Any:
    """A result `result_json` made, as the model of the request `method` answers."""
    return _RESULTS[method].model_validate(value)


def request_failed(text: str, code: int = INTERNAL_ERROR) -> BaseException:
    """The JSON-RPC error for a held prompt or resource request that cannot go on."""
    return MCPError(code=code, message=text)


def refused(exc: ElicitError, method: str) -> Any:
    """A gateway error of the tree (`UpstreamLost`) as the downstream request `method` gets it,
    worded once (`core.refusals`): the tool error result a `tools/call` answers with, else the
    JSON-RPC error (code, text, `{"reason": …}` data) to raise."""
    refusal = refusal_of(exc, modern=False, method=method)
    if method == "tools/call" and not refusal.protocol:
        return error_result(refusal.text)
    return MCPError(code=refusal.code, message=refusal.text, data=refusal.error_data())


def upstream_error(exc: BaseException) -> BaseException:
    """What a held prompt or resource request answers when the upstream request failed: the
    upstream's own JSON-RPC error as it is, else one naming the failure."""
    if isinstance(exc, MCPError):
        return exc
    return request_failed(f"The upstream request failed: {type(exc).__name__}.")


def with_reason(exc: BaseException, text: str) -> BaseException:
    """An upstream's JSON-RPC error for a prompt or a read, with `text` (what the gateway could not
    ask) after its message, its code and data kept; anything else as it is."""
    if isinstance(exc, MCPError):
        return MCPError(exc.error.code, f"{exc.error.message} ({text})", exc.error.data)
    return exc


def error_text(exc: BaseException) -> str:
    """An error's message for the client (a replica hands it to the one the client reached)."""
    return exc.error.message if isinstance(exc, MCPError) else str(exc)


def jsonrpc_error(exc: BaseException) -> tuple[int, str] | None:
    """An upstream's JSON-RPC error (code, message), None for anything else; the SDK's own
    "connection closed" comes as code `CONNECTION_CLOSED`."""
    return (exc.error.code, exc.error.message) if isinstance(exc, MCPError) else None


CONNECTION_CLOSED: Final = t.CONNECTION_CLOSED


def tool_named(tool: Any, name: str) -> Any:
    """The upstream's tool as offered: only the name changes."""
    return tool if tool.name == name else tool.model_copy(update={"name": name})


def not_found(what: str, unavailable: str = "") -> BaseException:
    """The JSON-RPC error for an unknown prompt or resource (they have no error result), with the
    upstreams that are unavailable and why (`Pool.unavailable`), as an unknown tool's result says."""
    said = f"{what} is not offered (or its server is unavailable). {unavailable}".strip()
    return MCPError(code=INVALID_PARAMS, message=said)


def error_result(text: str) -> t.CallToolResult:
    """A tool error of the gateway's own (no upstream result to forward) the model can read."""
    return t.CallToolResult(content=[t.TextContent(type="text", text=text)], is_error=True)


def with_notice(text: str, result: Any) -> Any:
    """The upstream's tool result as it came (its `isError`, `structuredContent`, `_meta` and
    content blocks), with the gateway's notice `text` as the first content block."""
    return result.model_copy(update={"content": [t.TextContent(type="text", text=text), *result.content]})


async def http_status(url: str, headers: Mapping[str, str]) -> int | None:
    """The HTTP status an upstream answers a ping with, sending the configured headers (None when
    it cannot be reached). The SDK turns an HTTP error into a bare JSON-RPC error; this is how the
    gateway learns that an upstream refused its credentials, to say so."""
    body = {"jsonrpc": "2.0", "id": "mcp-elicit-gateway-probe", "method": "ping"}
    accept = {"accept": "application/json, text/event-stream"}
    try:
        async with guarded_http_client({**accept, **headers}) as http:
            return (await http.post(url, json=body)).status_code
    except Exception:  # unreachable: the caller says what failed instead
        return None


def over_http(ctx: Any) -> bool:
    """Whether this request came over HTTP (it carries the HTTP request; stdio's and memory's do not)."""
    return getattr(ctx, "request", None) is not None


def bearer_of(ctx: Any) -> str | None:
    """The downstream's bearer token on this request (None over stdio or without one)."""
    request = getattr(ctx, "request", None)
    header = request.headers.get("authorization", "") if request is not None else ""
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def subject_of(ctx: Any) -> str | None:
    """The subject of the OAuth token the bearer middleware verified for this request, if any."""
    request = getattr(ctx, "request", None)
    user = request.scope.get("user") if request is not None else None
    return user.access_token.subject if isinstance(user, AuthenticatedUser) else None


class _IntrospectionVerifier:
    """The SDK's `TokenVerifier` over token introspection (`gateway/auth.py`)."""

    def __init__(self, introspection: Introspection, resource: str) -> None:
        self.introspection, self.resource = introspection, resource

    async def verify_token(self, token: str) -> AccessToken | None:
        found = await self.introspection.check(token)
        if found is None:
            return None
        return AccessToken(
            token=token,
            client_id=found.client_id,
            scopes=list(found.scopes),
            expires_at=found.expires_at,
            resource=found.resource_for(self.resource),
            subject=found.subject,
            claims={"iss": found.issuer} if found.issuer else None,
        )


def _oauth_app_options(oauth: GatewayOAuth, resource: str) -> dict[str, Any]:
    """The SDK's resource-server settings: RFC 9728 metadata, 401 with `resource_metadata`, the
    bearer middleware with our verifier, the audience check (`AccessToken.resource`)."""
    settings = AuthSettings(
        issuer_url=AnyHttpUrl(oauth.issuer),
        resource_server_url=AnyHttpUrl(resource),
        required_scopes=list(oauth.scopes) or None,
        validate_token_resource=oauth.audience,
    )
    return {"auth": settings, "token_verifier": _IntrospectionVerifier(Introspection(oauth), resource)}


async def serve_stdio(server: Server[Any], stop: anyio.Event | None = None) -> None:
    """Serve over the process's stdin and stdout until end of file or until `stop` is set (which
    ends the session as end of file does: see `mcp_elicit.server.stdin`)."""
    async with stdin_lines(stop) as lines, stdio_server(stdin=cast(Any, lines)) as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _require_token(app: Any, users: Mapping[str, str]) -> Any:
    """An ASGI wrapper: every HTTP request needs a configured bearer token (else 401)."""
    tokens = [k.encode() for k in users]

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers") or []).get(b"authorization", b"")
            scheme, _, token = header.partition(b" ")
            ok = scheme.lower() == b"bearer" and any(hmac.compare_digest(token.strip(), k) for k in tokens)
            if not ok:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b'{"error":"invalid_token"}'})
                return
        await app(scope, receive, send)

    return guarded


async def serve_http(
    server: Server[Any],
    host: str,
    port: int,
    users: Mapping[str, str],
    *,
    started: Callable[[int], None] | None = None,
    stop: anyio.Event | None = None,
    oauth: GatewayOAuth | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Streamable HTTP at /mcp; with `users`, only their bearer tokens get in; with `oauth`, only
    tokens the authorization server vouches for. `started(port)` is called once listening (port 0
    picks a free one); setting `stop` shuts the server down gracefully (uvicorn then leaves the
    signals to the caller: `mcp_elicit.server.serving`). `sock`: a socket already bound to `host`
    and `port` (the CLI binds it first, so a port in use is said before anything starts)."""
    import uvicorn

    from mcp_elicit.server.serving import serve_uvicorn

    if sock is None:
        sock = socket.create_server((host, port))  # bound here, so the port is known before serving
    options: dict[str, Any] = {}
    if oauth is not None:
        resource = oauth.resource or mcp_url(host, sock.getsockname()[1])
        options = _oauth_app_options(oauth, resource)
    app: Any = server.streamable_http_app(host=host, **options)
    if users:
        app = _require_token(app, users)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", log_config=None)  # as server/sdk.py
    if started is not None:
        started(sock.getsockname()[1])
    with sock:
        await serve_uvicorn(config, sock, stop)

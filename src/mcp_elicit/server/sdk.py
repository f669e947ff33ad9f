"""The server side's one door to the SDK (`mcp` 2.x).

Everything else in `mcp_elicit.server` works with plain values (dicts in wire shape, the
project's own errors); an SDK upgrade should touch only this file and `sdk_fastmcp.py`. Tool
code hands the kit whatever context its framework gives it (the SDK's `MCPServer` Context,
FastMCP's Context, or the low-level `ServerRequestContext`); `call_of` finds the SDK's
per-request context behind any of them, and everything here works from that.

Hosting a server (HTTP routes, the lifespan, serving over stdio or HTTP) is the other door,
`sdk_serving.py`.

Private SDK hooks used here (each has a canary test in tests/server/test_sdk_canaries.py):
- `MCPServer._lowlevel_server` (and FastMCP's `_mcp_server`): `lowlevel_of`.
- `MCPServer` answers every tools/call through its `call_tool` method, whose rejection of the
  arguments (`rejected_arguments`) keeps pydantic's error as its cause: `tool_arguments.py` wraps
  it to name the arguments at fault.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Concatenate, Final, ParamSpec, TypeVar

import anyio
import mcp_types as t
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import principal_components
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError, NoBackChannelError, UrlElicitationRequiredError
from mcp.shared.message import ServerMessageMetadata
from pydantic import BaseModel, TypeAdapter, ValidationError

from mcp_elicit import errors
from mcp_elicit.core.limits import MAX_CLIENT_ERROR_CHARS
from mcp_elicit.core.refusals import Refusal, refusal_of
from mcp_elicit.core.revisions import is_modern, usable_capabilities
from mcp_elicit.core.text import clean_text
from mcp_elicit.errors import AuditError, ClientGone, ClientRefused, ElicitError, InvalidArgument, UsageError
from mcp_elicit.server import disconnect

__all__ = [
    "CARRIERS",
    "Call",
    "call_of",
    "carry",
    "client_refused",
    "declared_capabilities",
    "input_pending",
    "protocol_version",
    "push_request",
]

logger = logging.getLogger("mcp_elicit.server")

Call = ServerRequestContext[Any, Any]
# The requests that may ask questions (the only ones a 2026-07-28 InputRequiredResult answers).
CARRIERS = frozenset({"tools/call", "prompts/get", "resources/read"})
_INPUT_REQUEST = TypeAdapter[t.InputRequest](t.InputRequest)
_RESULT_TYPES: dict[str, Any] = {
    "elicitation/create": t.ElicitResult,
    "sampling/createMessage": t.CreateMessageResult,
    "roots/list": t.ListRootsResult,
}

# --- the request behind a tool's context ------------------------------------------------------


def call_of(ctx: Any) -> Call | None:
    """The SDK's per-request context behind `ctx`, or None outside a request (a direct call)."""
    if isinstance(ctx, ServerRequestContext):
        return ctx
    try:
        rc = ctx.request_context  # MCPServer's Context raises ValueError outside a request
    except (ValueError, AttributeError):
        return None
    if isinstance(rc, ServerRequestContext):
        return rc
    inner = getattr(rc, "_srctx", None)  # FastMCP's wrapper keeps the SDK's context here
    return inner if isinstance(inner, ServerRequestContext) else None


def protocol_version(ctx: Any) -> str | None:
    call = call_of(ctx)
    return call.protocol_version if call is not None else None


def capabilities_known(ctx: Any) -> bool:
    """False on a 2025-11-25 session that never saw `initialize` (stateless HTTP): unknown, not none."""
    call = call_of(ctx)
    return call is None or is_modern(call.protocol_version) or call.session.client_capabilities is not None


def declared_capabilities(ctx: Any) -> frozenset[str]:
    """What the client declared for this request and its revision allows: "elicitation.form",
    "elicitation.url", "sampling", "roots" (C1, C2). A bare `elicitation: {}` predates modes and
    means form only; see `revisions.usable_capabilities` for the revision rules."""
    call = call_of(ctx)
    caps = call.session.client_capabilities if call is not None else None
    if call is None or caps is None:
        return frozenset()
    declared: set[str] = set()
    elicitation = caps.elicitation
    if elicitation is not None:
        if elicitation.form is not None or elicitation.url is None:
            declared.add("elicitation.form")
        if elicitation.url is not None:
            declared.add("elicitation.url")
    if caps.sampling is not None:
        declared.add("sampling")
    if caps.roots is not None:
        declared.add("roots")
    return usable_capabilities(call.protocol_version, frozenset(declared))


def http_request(ctx: Any) -> Any | None:
    """The Starlette request that carried this MCP request (None over stdio and in memory)."""
    call = call_of(ctx)
    return call.request if call is not None else None


def session_of(ctx: Any) -> Any:
    call = call_of(ctx)
    return call.session if call is not None else None


def request_id(ctx: Any) -> Any:
    call = call_of(ctx)
    return call.request_id if call is not None else None


def identities(
    ctx: Any,
) -> tuple[tuple[str, str], tuple[str, str], tuple[str, Any, str] | None, str]:
    """((server name, version), (client name, version), (method, request id, target) or None,
    the protocol revision or ""), finding the request behind `ctx` once."""
    # MCPServer's Context keeps the server and the request as pydantic private attributes; read
    # there, they skip two properties that cost microseconds each (one record per elicitation).
    private = getattr(ctx, "__pydantic_private__", None)
    rc = private.get("_request_context") if isinstance(private, dict) else None
    call: Call | None
    if isinstance(rc, ServerRequestContext):
        app, call = private.get("_mcp_server"), rc  # type: ignore[union-attr]
    else:
        app, call = getattr(ctx, "mcp_server", None) or getattr(ctx, "fastmcp", None), call_of(ctx)
    server = (str(getattr(app, "name", "") or ""), str(getattr(app, "version", "") or ""))
    if call is None:
        return server, ("", ""), None, ""
    params = call.session.client_params
    client = (params.client_info.name, params.client_info.version) if params is not None else ("", "")
    target = (call.params or {}).get("name") or (call.params or {}).get("uri") or ""
    return server, client, (call.method, call.request_id, str(target)), call.protocol_version or ""


# --- wire shapes ------------------------------------------------------------------------------


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


def response_as_dict(response: Any) -> dict[str, Any] | None:
    """An `inputResponses` entry as a plain dict, or None when it is not a result object."""
    if isinstance(response, dict):
        return response
    if isinstance(response, BaseModel):
        dumped: dict[str, Any] = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped
    return None


# --- pushing a question (2025-11-25 and older) ------------------------------------------------


async def push_request(
    ctx: Any, request: dict[str, Any], timeout: float | None = None
) -> dict[str, Any] | None:
    """Send an input request (elicitation, sampling, roots) server-to-client and return the raw
    result; None when the reply is not a well-formed result of its kind (treated like an invalid
    answer). Raises ClientRefused when the client answers with a JSON-RPC error, ClientGone as soon
    as the client behind the request disconnects (HTTP) or its connection closes (stdio), and
    TimeoutError after `timeout` seconds (None: no limit)."""
    call = call_of(ctx)
    if call is None or is_modern(call.protocol_version):  # never push on a 2026-07-28 request
        raise InvalidArgument("ctx", "server-to-client requests need a 2025-11-25 (or older) request")
    session = call.session

    async def send() -> dict[str, Any] | None:
        try:
            result = await session.send_request(
                _INPUT_REQUEST.validate_python(request),
                _RESULT_TYPES[request["method"]],
                metadata=ServerMessageMetadata(related_request_id=call.request_id),
            )
        except ValidationError:
            return None
        except NoBackChannelError:  # this server's own transport cannot push (JSON responses): not the client
            mode = _PUSHED_MODES.get(request["method"]) or request["params"].get("mode") or "form"
            raise errors.CapabilityError(mode, channel=False) from None
        except MCPError as exc:
            if exc.error.code == t.CONNECTION_CLOSED:  # stdio: the client closed stdin (or was stopped)
                raise ClientGone("the client disconnected before answering") from None
            raise client_refused(exc.error.code, exc.error.message) from None  # the client's error reply
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped

    result: dict[str, Any] | None = await run_watching(ctx, send, timeout)
    return result


_PUSHED_MODES: Final = {"sampling/createMessage": "sampling", "roots/list": "roots"}  # not questions


def client_refused(code: int, message: str) -> ClientRefused:
    """A client's JSON-RPC error reply as ClientRefused. The message is the client's text and the
    model reads it: cleaned (`core.text`) to one line of at most `MAX_CLIENT_ERROR_CHARS`."""
    cleaned = clean_text(message, limit=MAX_CLIENT_ERROR_CHARS, multiline=False)
    return ClientRefused(code, " ".join(cleaned.split()))  # a validation error's indented lines, run together


async def run_watching(ctx: Any, fn: Callable[[], Any], timeout: float | None = None) -> Any:
    """Await `fn()`, released with ClientGone as soon as the HTTP client behind `ctx` disconnects
    (TimeoutError after `timeout` seconds; None: no limit)."""
    request = http_request(ctx)
    if request is not None:
        return await disconnect.until_disconnected(request, fn, timeout)
    # stdio and in-memory: the transport ends the process or the task
    if timeout is None:
        return await fn()
    with anyio.fail_after(timeout):
        return await fn()


async def send_elicit_complete(session: Any, elicitation_id: str, related_request_id: Any = None) -> None:
    """`notifications/elicitation/complete` to one session (2025-11-25 only; U6)."""
    await session.send_elicit_complete(elicitation_id, related_request_id=related_request_id)


def url_elicitation_required(elicitations: list[dict[str, Any]]) -> MCPError:
    """Error -32042 listing URL elicitations (each with `elicitationId`); 2025-11-25 only (U7).

    On a framework with its own error base (FastMCP) it also derives from that base, so the
    framework's tool wrapper lets it through; `plain_url_elicitation_required` undoes that."""
    params = [t.ElicitRequestURLParams.model_validate(e) for e in elicitations]
    flavor = _FLAVOR.get()
    if not flavor:
        return UrlElicitationRequiredError(params)
    bases: tuple[type[Any], ...] = (UrlElicitationRequiredError, *flavor)
    cls = _CARRIER_TYPES.get(bases)
    if cls is None:
        cls = type("UrlElicitationRequiredError", bases, {"__module__": __name__, "log_level": logging.DEBUG})
        _CARRIER_TYPES[bases] = cls
    flavored: MCPError = _class_log_level(cls(params))
    return flavored


def _class_log_level(exc: Any) -> Any:
    """`exc` without the log level FastMCPError's __init__ sets (ERROR) on the instance, which would
    hide the carrier class's DEBUG and log every pending question as "Error calling tool"."""
    vars(exc).pop("log_level", None)
    return exc


def plain_url_elicitation_required(exc: BaseException) -> MCPError | None:
    """A -32042 raised with a framework's error base, as the plain SDK error; None for anything else."""
    if isinstance(exc, UrlElicitationRequiredError) and type(exc) is not UrlElicitationRequiredError:
        return UrlElicitationRequiredError(list(exc.elicitations))
    return None


# --- identity ---------------------------------------------------------------------------------


def access_token() -> Any | None:
    """The verified MCP access token of the request being handled (None without MCP authorization)."""
    return get_access_token()


def token_principal(token: Any) -> tuple[str, str | None, str | None]:
    """(client_id, issuer, subject) of a verified access token, the SDK's own notion of a principal."""
    return principal_components(token)


def browser_access_token(request: Any) -> Any | None:
    """The access token the SDK's bearer middleware verified on a plain HTTP request (a page), if any."""
    user = request.scope.get("user")
    return user.access_token if isinstance(user, AuthenticatedUser) else None


def access_subject() -> str:
    """Who the verified MCP access token names (subject, else client id); "" without one."""
    token = get_access_token()
    if token is None:
        return ""
    return str(getattr(token, "subject", None) or getattr(token, "client_id", "") or "")


# --- errors and results on the way out --------------------------------------------------------

# Extra base classes for the exceptions that leave a tool, per framework: FastMCP's own error
# base lets them through its tool wrapper without a traceback (see sdk_fastmcp).
_FLAVOR: ContextVar[tuple[type[BaseException], ...]] = ContextVar("mcp_elicit_flavor", default=())
_CARRIER_TYPES: dict[tuple[type[Any], ...], type[Any]] = {}


class _Carried:
    """Marks an mcp-elicit error dressed as an MCPError so framework tool wrappers let it through."""

    refusal: Refusal


def carry(exc: ElicitError, ctx: Any = None) -> ElicitError:
    """`exc` as an instance of a subclass of its own class and of MCPError (plus the framework's
    own error base where it needs one), so it leaves the tool untouched: `ElicitMiddleware` then
    answers with its refusal (`core.refusals`). Tool code still catches it by its own class."""
    if isinstance(exc, _Carried):
        return exc
    call = call_of(ctx)
    version, method = (call.protocol_version, call.method) if call is not None else (None, None)
    refusal = refusal_of(exc, modern=is_modern(version), method=method)
    # A framework's tool wrapper turns its own errors into a tool error result, which would lose a
    # protocol refusal's code (-32021); its prompt and resource wrappers pass them on as they are.
    in_tool = call is None or call.method == "tools/call"
    flavor = _FLAVOR.get() if not (refusal.protocol and in_tool) else ()
    bases: tuple[type[BaseException] | type[_Carried], ...] = (type(exc), _Carried, *flavor, MCPError)
    cls = _CARRIER_TYPES.get(bases)
    if cls is None:
        # MCPError's __str__ (the refusal's line) first: FastMCP answers a tool error with str(exc),
        # and OSError's own __str__ (TimeoutError, PermissionError, ...) would print the bare args.
        namespace = {"__module__": type(exc).__module__, "log_level": logging.DEBUG}
        cls = type(type(exc).__name__, bases, {**namespace, "__str__": MCPError.__str__})
        _CARRIER_TYPES[bases] = cls
    carried: Any = cls.__new__(cls, *exc.args)
    carried.__dict__.update(exc.__dict__)
    carried.args = exc.args
    carried.refusal = refusal
    carried.error = t.ErrorData(code=refusal.code, message=refusal.text, data=refusal.error_data())
    carried.__cause__ = exc.__cause__
    result: ElicitError = carried
    return result


P = ParamSpec("P")
R = TypeVar("R")


def carrying(fn: Callable[Concatenate[Any, P], Awaitable[R]]) -> Callable[Concatenate[Any, P], Awaitable[R]]:
    """Decorate a kit entry point `fn(ctx, ...)` so the mcp-elicit errors it raises are carried."""

    async def wrapper(ctx: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(ctx, *args, **kwargs)
        except ElicitError as exc:
            raise carry(exc, ctx) from exc.__cause__

    return functools.update_wrapper(wrapper, fn)


class _Pending(MCPError):
    """Ends this run of a handler with an InputRequiredResult (2026-07-28). An MCPError, so the
    SDK's tool, prompt and resource wrappers let it through untouched to `ElicitMiddleware`;
    without the middleware the client sees this error."""

    result: t.InputRequiredResult


def input_pending(requests: dict[str, dict[str, Any]], request_state: str) -> BaseException:
    """The exception that ends this run with an InputRequiredResult carrying `requests`."""
    flavor = _FLAVOR.get()
    bases: tuple[type[BaseException] | type[_Carried], ...] = (_Pending, *flavor)
    cls = _CARRIER_TYPES.get(bases)
    if cls is None:
        cls = type("InputPending", bases, {"__module__": __name__, "log_level": logging.DEBUG})
        _CARRIER_TYPES[bases] = cls
    pending: Any = _class_log_level(cls(-32603, "mcp-elicit: ask() needs mcp_elicit.server.install(server)"))
    pending.result = t.InputRequiredResult(
        input_requests={key: _INPUT_REQUEST.validate_python(r) for key, r in requests.items()},
        request_state=request_state,
    )
    out: BaseException = pending
    return out


def pending_result(exc: BaseException) -> t.InputRequiredResult | None:
    return exc.result if isinstance(exc, _Pending) else None


def refusal_result(call: Call, exc: BaseException) -> HandlerResult:
    """What the client gets for an mcp-elicit error that left a handler: a tool error result on
    `tools/call` (unless the spec makes it a protocol error), else a JSON-RPC error."""
    target = (call.params or {}).get("name") or (call.params or {}).get("uri") or ""
    refusal = log_refusal(call.method, target, exc, call.protocol_version)
    if call.method == "tools/call" and not refusal.protocol:
        return t.CallToolResult(content=[t.TextContent(type="text", text=refusal.text)], is_error=True)
    raise MCPError(code=refusal.code, message=refusal.text, data=refusal.error_data()) from None


def log_refusal(method: str, target: str, exc: BaseException, protocol_version: str | None = None) -> Refusal:
    """The refusal for an mcp-elicit error that left a handler, logged as one line: at WARNING
    when the server's own setup, code or transport is at fault, else at INFO."""
    refusal = (
        exc.refusal
        if isinstance(exc, _Carried)
        else refusal_of(exc, modern=is_modern(protocol_version), method=method)
    )
    if isinstance(exc, errors.CapabilityError) and not exc.channel:  # JSON responses cannot push
        logger.warning("%s %s refused: %s (serve event streams)", method, target, refusal.reason)
    elif refusal.ordinary:
        logger.info("%s %s ended: %s", method, target, refusal.reason)
    elif isinstance(exc, UsageError | AuditError):  # the server's own setup or code is wrong
        # The error's own message says what to fix; a carried error prints the refusal's line.
        logger.warning("%s %s failed: %s: %s", method, target, type(exc).__name__, BaseException.__str__(exc))
    else:
        logger.info("%s %s refused: %s", method, target, refusal.reason)
    return refusal


def rejected_arguments(exc: BaseException) -> bool:
    """Whether `exc`, raised by `MCPServer.call_tool`, says the SDK rejected the call's arguments
    (a ToolError whose cause is pydantic's error; a validator that crashed is an UnexpectedToolError)."""
    return isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError)


def is_tool_error(result: Any) -> bool:
    """Whether a handler's result (the SDK's model, or in wire shape) is a tool error result."""
    if isinstance(result, t.CallToolResult):
        return result.is_error is True
    return isinstance(result, dict) and result.get("isError") is True


def flavored(flavor: tuple[type[BaseException], ...]) -> Any:
    """Set the framework's extra error bases for the request being handled; returns a reset token."""
    return _FLAVOR.set(flavor)


def unflavored(token: Any) -> None:
    _FLAVOR.reset(token)


def install_middleware(chain: list[Any], middleware: Any) -> None:
    """Append `middleware` to a server's chain: innermost, inside the SDK's requestState sealing."""
    if any(type(m) is type(middleware) for m in chain):
        raise InvalidArgument("server", "mcp-elicit is already installed on this server")
    chain.append(middleware)


# --- the low-level server behind a framework's server ------------------------------------------


def lowlevel_of(server: Any) -> Any:
    """The SDK low-level server behind an MCPServer or a FastMCP server (private attributes;
    canary-tested)."""
    low = getattr(server, "_lowlevel_server", None)
    return low if low is not None else server._mcp_server

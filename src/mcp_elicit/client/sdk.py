"""The client side's SDK boundary, with `client/sdk_transport.py`: no other client module imports `mcp`.

An SDK upgrade touches only these two modules. What the rest of the client needs from the SDK is
named here: the result types `ElicitClient` returns (they are the SDK's own, on purpose: it wraps
`mcp.client.Client`), the errors as `SdkError` with `error_code` / `error_data` to read them, and the
private hooks, each with a canary test (`tests/client/test_sdk_canaries.py`) that fails naming the
hook when the SDK moves it.

- `ElicitationHandler`: the pipeline as the SDK's `elicitation_callback`. The SDK routes both
  2025-11-25 pushes (`elicitation/create`) and 2026-07-28 embedded requests (`InputRequiredResult`)
  through that one callback, so one handler serves both eras.
- `KitClient`: `mcp.client.Client` declaring only the elicitation modes the pipeline honours. The
  SDK 2.3 declares `{form: {}, url: {}}` whenever a callback is set (`ClientSession.
  _build_capabilities`); a client that cannot show URLs must not say it can (C1).
- `GuardedTransport`: a transport wrapper that answers what the SDK would drop or refuse without
  reasons. The SDK's transports parse each message with pydantic and hand a message that does not
  validate (a request whose `params` is not an object) to the session as a bare exception, which the
  session only logs: the server waits forever for a reply. The guard recovers the request's id
  from the validation error and answers -32602. It also screens `elicitation/create` pushes and
  the elicitations embedded in an `InputRequiredResult` with the pipeline's screening stages before
  the SDK's own strict validation runs, so a refused schema gets this project's reasons (field and
  problem) and an outcome record instead of a generic "Invalid request parameters".

Over streamable HTTP the SDK's transport parses a call's event stream itself and would end the
call on a request it cannot parse; `client/sdk_transport.py` rewrites such a request, below the SDK,
into a `mcp-elicit/malformed` stand-in with the same id, which the guard answers here.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, cast

import anyio
import mcp_types as t
from mcp.client import Client, InputRequiredRoundsExceededError
from mcp.client._input_required import DEFAULT_INPUT_REQUIRED_MAX_ROUNDS
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_elicit.client import sdk_logs  # noqa: F401  (installs the filters on the SDK's HTTP logger)
from mcp_elicit.client.model import (
    CallRegistry,
    Decision,
    Elicitation,
    Outcome,
    Refuse,
)
from mcp_elicit.client.pipeline import Pipeline
from mcp_elicit.client.read_stream import WrappedReadStream
from mcp_elicit.client.ui_protocol import Requester, UserInterface
from mcp_elicit.core.wire_codes import INVALID_PARAMS, INVALID_REQUEST

__all__ = [
    "MALFORMED_METHOD",
    "SDK_INPUT_REQUIRED_MAX_ROUNDS",
    "SDK_STREAM_ENDED",
    "URL_ELICITATION_REQUIRED",
    "CallToolResult",
    "ElicitationHandler",
    "GetPromptResult",
    "GuardedTransport",
    "Implementation",
    "KitClient",
    "Prompt",
    "ReadResourceResult",
    "Resource",
    "ResourceTemplate",
    "RoundsExceeded",
    "SdkError",
    "TextContent",
    "Tool",
    "capability",
    "completed_elicitation_id",
    "discover_identity",
    "error_code",
    "error_data",
    "handshake_refusal",
    "stream_ended",
    "to_result",
]

logger = logging.getLogger(__name__)

_FALLBACK_PROTOCOL = "2025-11-25"  # what the SDK assumes before a handshake

# Outcomes a handler keeps in memory (`ElicitClient.outcomes`); older ones are dropped. An
# interactive session can run for days; observers (the audit sink) keep the full history.
MAX_KEPT_OUTCOMES: Final = 1_000

# -- the SDK's names the rest of the client side uses ----------------------------------------------

CallToolResult = t.CallToolResult
GetPromptResult = t.GetPromptResult
ReadResourceResult = t.ReadResourceResult
Tool = t.Tool
Prompt = t.Prompt
Resource = t.Resource
ResourceTemplate = t.ResourceTemplate
TextContent = t.TextContent
Implementation = t.Implementation

SdkError = MCPError
"""An error reply from the server, as the SDK raises it; read it with `error_code` / `error_data`."""
RoundsExceeded = InputRequiredRoundsExceededError
"""A 2026-07-28 call that kept answering `InputRequiredResult` past the SDK's bound on rounds."""

URL_ELICITATION_REQUIRED: Final[int] = t.URL_ELICITATION_REQUIRED  # -32042 (U7)

# Private hook: the SDK's default bound on InputRequiredResult rounds, which URL mode raises by its
# own number of checks (the SDK takes the bound as an option but does not export its default).
SDK_INPUT_REQUIRED_MAX_ROUNDS: Final[int] = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS

# The stand-in method the HTTP guard (`client/sdk_transport.py`) puts in place of a request the
# SDK could not parse, so the transport guard below can answer it.
MALFORMED_METHOD: Final = "mcp-elicit/malformed"

# How the SDK's streamable HTTP client begins the error (code CONNECTION_CLOSED) it gives a request
# whose event stream ended before the server answered: "SSE stream ended without a response", or
# "... and reconnection attempts were exhausted" (a canary test checks the words).
SDK_STREAM_ENDED: Final = "SSE stream ended"


def error_code(exc: BaseException) -> int | None:
    """The JSON-RPC error code of an error reply from the server; None for any other exception."""
    return exc.error.code if isinstance(exc, MCPError) else None


def stream_ended(exc: BaseException) -> bool:
    """Whether `exc` (or the one error inside its groups) is the SDK's for a request over
    streamable HTTP whose event stream ended before the server answered: the server stopped or
    restarted during the call. Not a reply of the server: the SDK makes it up."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return (
        isinstance(exc, MCPError)
        and exc.error.code == t.CONNECTION_CLOSED
        and exc.error.message.startswith(SDK_STREAM_ENDED)
    )


def connection_closed(exc: BaseException) -> bool:
    """Whether `exc` (or the one error inside its groups) is the SDK's for a request whose
    connection closed before the answer (over stdio: the server's process ended), not over an
    HTTP stream (`stream_ended`)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return isinstance(exc, MCPError) and exc.error.code == t.CONNECTION_CLOSED and not stream_ended(exc)


def unfit_answer(exc: BaseException) -> str | None:
    """One line for the SDK's refusal of a server's answer that does not fit the result it should
    be (a pydantic ValidationError: a 2025-11-25 result read as a 2026-07-28 one lacks
    `resultType`), naming the first field at fault; None for any other exception. pydantic's own
    text runs over several lines, with links."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if not isinstance(exc, ValidationError):
        return None
    found = exc.errors(include_url=False, include_input=False)
    if not found:
        return "the server's answer does not fit the result the protocol expects"
    where = ".".join(str(part) for part in found[0].get("loc", ())) or "(the answer)"
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (
        f"the server's answer does not fit the result the protocol expects: {where}: {found[0]['msg']}{more}"
    )


def error_data(exc: BaseException) -> object:
    """The `data` of an error reply from the server (untrusted JSON); None for any other exception."""
    return exc.error.data if isinstance(exc, MCPError) else None


def handshake_refusal(exc: BaseException) -> MCPError | None:
    """The server's error reply to the handshake inside `exc`, however deep the SDK's task groups
    wrapped it (over stdio it arrives inside two); None for anything else, a closed connection
    included (a server that died would only die again on a second connection)."""
    if isinstance(exc, MCPError):
        return exc if exc.error.code != t.CONNECTION_CLOSED else None
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = handshake_refusal(inner)
            if found is not None:
                return found
    return None


def completed_elicitation_id(message: object) -> str | None:
    """The elicitation a `notifications/elicitation/complete` says is done; None for any other message."""
    return message.params.elicitation_id if isinstance(message, t.ElicitCompleteNotification) else None


async def discover_identity(session: ClientSession) -> MCPError | None:
    """Ask a server who it is (`server/discover`) when a pinned 2026-07-28 connection skipped it.

    Sent as any request on the connection is (the session stamps the adopted version, this
    client and its capabilities), so it waits as long as they do: the connection's read timeout,
    unbounded by default, as the 2025-11-25 handshake waits. Not the SDK's `send_discover`, whose
    fixed ten-second probe bound a server still starting can miss (a gateway starts its upstreams
    before it reads its input): it then stayed anonymous for the whole connection.

    Identity is display-only: a server that will not say stays anonymous (logged, never raised).
    Returns the server's error reply when it refused (a 2025-11-25-only server does: see
    `KitClient.discover_refusal`), else None.
    """
    try:
        result = await session.send_request(t.DiscoverRequest(), t.DiscoverResult)
        session.adopt(result)
    except (MCPError, ValidationError, RuntimeError) as exc:
        logger.info("server/discover failed (%s); the server stays anonymous", exc)
        return exc if isinstance(exc, MCPError) and exc.error.code != t.CONNECTION_CLOSED else None
    return None


class ElicitationHandler:
    """The pipeline as an SDK `elicitation_callback`, for one connection.

    `where` says where the server runs (a command line or URL) for the prompt; `calls` is the
    registry that ties questions to requests (wrap your own calls in `handler.calls.track(...)` when
    you drive a bare `mcp.client.Client`; `ElicitClient` does it for you).
    """

    def __init__(
        self, pipeline: Pipeline | UserInterface, *, where: str = "", calls: CallRegistry | None = None
    ) -> None:
        self.pipeline = pipeline if isinstance(pipeline, Pipeline) else Pipeline(pipeline)
        self.where = where
        self.calls = calls if calls is not None else CallRegistry()
        self.session: ClientSession | None = None  # set once connected, for the transport guard
        self.outcomes: deque[Outcome] = deque(maxlen=MAX_KEPT_OUTCOMES)
        self._requester: tuple[Any, Requester] | None = None

    async def __call__(
        self, context: ClientRequestContext, params: t.ElicitRequestParams
    ) -> t.ElicitResult | t.ErrorData:
        self.session = context.session
        e = self.elicitation(_wire(params), request_id=context.request_id)
        try:
            decision, outcome = await self.pipeline.run(e)
        except anyio.get_cancelled_exc_class():
            if e.outcome is not None:  # withdrawn while open: on the trail, so in the report too
                self.outcomes.append(e.outcome)
            raise
        self.outcomes.append(outcome)
        return to_result(decision)

    def elicitation(self, params: Any, *, request_id: Any = None, context: Any = None) -> Elicitation:
        """A fresh `Elicitation` for raw wire `params`, with who asks and for what filled in."""
        session = self.session
        info = session.server_info if session is not None else None
        protocol = (session.protocol_version if session is not None else None) or _FALLBACK_PROTOCOL
        purpose, attribution = self.calls.attribute(context)
        if self._requester is None or self._requester[0] is not info:
            # One Requester per server identity, so the identify stage finds it cleaned already.
            self._requester = (
                info,
                Requester(
                    name=info.name if info is not None else "",
                    where=self.where,
                    title=info.title if info is not None else None,
                    version=info.version if info is not None else None,
                ),
            )
        return Elicitation(
            params=params,
            protocol=protocol,
            requester=self._requester[1],
            purpose=purpose,
            attribution=attribution,
            declared_modes=self.pipeline.modes,
            request_id=request_id if isinstance(request_id, str | int) else None,
            time=self.pipeline.clock(),
        )


def _wire(params: t.ElicitRequestParams) -> dict[str, Any]:
    """The request's params as wire JSON. The schema is the server's own parsed JSON (the SDK keeps
    `requestedSchema` as a plain dict): passed on as is, not deep-copied by a model dump."""
    if isinstance(params, t.ElicitRequestFormParams):
        return {"mode": params.mode, "message": params.message, "requestedSchema": params.requested_schema}
    if isinstance(params, t.ElicitRequestURLParams):
        wire = {"mode": params.mode, "message": params.message, "url": params.url}
        if params.elicitation_id is not None:
            wire["elicitationId"] = params.elicitation_id
        return wire
    return cast(dict[str, Any], params.model_dump(by_alias=True, mode="json", exclude_none=True))


def to_result(decision: Decision) -> t.ElicitResult | t.ErrorData:
    """A decision as the SDK's answer. On 2026-07-28 an `ErrorData` ends the call with that error."""
    if isinstance(decision, Refuse):
        return t.ErrorData(code=decision.code, message=decision.message)
    content = dict(decision.content) if decision.action == "accept" and decision.content is not None else None
    return t.ElicitResult(action=decision.action, content=content)


def capability(modes: frozenset[str]) -> t.ElicitationCapability:
    """The elicitation capability for exactly `modes` (`{form: {}}` for form only, C1)."""
    return t.ElicitationCapability(
        form=t.FormElicitationCapability() if "form" in modes else None,
        url=t.UrlElicitationCapability() if "url" in modes else None,
    )


@dataclass
class KitClient(Client):
    """`mcp.client.Client` that declares only `elicitation_modes` instead of every mode."""

    elicitation_modes: frozenset[str] = frozenset({"form"})
    # The server's error reply to `server/discover` on a pinned 2026-07-28 connection (None: it
    # answered, or was not asked): every 2026-07-28 server answers it, so a refusal is the sign of
    # a server that speaks only 2025-11-25.
    discover_refusal: MCPError | None = None

    async def _build_session(self, exit_stack: AsyncExitStack) -> ClientSession:
        session = await super()._build_session(exit_stack)
        build = session._build_capabilities
        declared = capability(self.elicitation_modes)

        def build_capabilities(version: str) -> t.ClientCapabilities:
            caps = build(version)
            if caps.elicitation is None:
                return caps
            return caps.model_copy(update={"elicitation": declared})

        # The SDK has no setting for this; its capability builder is the one place to correct it.
        session._build_capabilities = build_capabilities  # type: ignore[method-assign]
        return session

    async def __aenter__(self) -> KitClient:
        await super().__aenter__()
        if self.mode in MODERN_PROTOCOL_VERSIONS and self.prior_discover is None:
            # A pinned modern version skips discovery, and with it the server's name. Ask once, so
            # every prompt can say who is asking; a server that will not say stays anonymous.
            self.discover_refusal = await discover_identity(self.session)
        return self


# -- the transport guard ---------------------------------------------------------------------------


class GuardedTransport:
    """Wrap an SDK transport (an async context manager yielding read and write streams)."""

    def __init__(self, inner: Any, handler: ElicitationHandler) -> None:
        self._inner = inner
        self._handler = handler

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._inner.__aenter__()
        return _GuardedReadStream(read, write, self._handler), write

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return cast(bool | None, await self._inner.__aexit__(exc_type, exc, tb))


class _GuardedReadStream(WrappedReadStream):
    """The transport's read stream, minus the messages the guard answered itself.

    `last_context` is the inner stream's: the dispatcher runs handlers in the sender's context
    (how a push over HTTP is tied to its call), so the guard must not hide it.
    """

    def __init__(self, inner: Any, write: Any, handler: ElicitationHandler) -> None:
        super().__init__(inner)
        self._write = write
        self._handler = handler

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            try:
                replacement = await self._screen(item)
            except Exception:
                logger.exception("the transport guard failed on a message; passing it on")
                return item
            if replacement is not None:
                return replacement
            # None: the guard answered the message itself; read the next one

    async def _screen(self, item: Any) -> Any | None:
        """The item to pass on, or None when the guard answered it."""
        if isinstance(item, ValidationError):
            return await self._unparseable(item)
        if not isinstance(item, SessionMessage):
            return item
        message = item.message
        if isinstance(message, t.JSONRPCRequest) and message.method == MALFORMED_METHOD:
            # A request the HTTP guard could not let through as it was (see client/sdk_transport.py).
            params = message.params or {}
            if params.get("paramsIsObject") is False:
                await self._reply_error(message.id, INVALID_PARAMS, "params must be an object")
            else:
                await self._reply_error(message.id, INVALID_REQUEST, "invalid request")
            return None
        if isinstance(message, t.JSONRPCRequest) and message.method == "elicitation/create":
            refused = await self._refused(message.params)
            if refused is None:
                return item
            await self._reply_error(message.id, refused.code, refused.message)
            return None
        if isinstance(message, t.JSONRPCResponse) and message.result.get("resultType") == "input_required":
            return await self._screen_input_required(item, message)
        return item

    async def _refused(self, params: Any) -> Refuse | None:
        e = self._handler.elicitation(params, context=self.last_context)
        screened = await self._handler.pipeline.screen(e)
        if screened is None:
            return None
        self._handler.outcomes.append(screened[1])
        return screened[0]

    async def _unparseable(self, error: ValidationError) -> Any | None:
        request = _recover_request(error)
        if request is None:
            return error
        params = request.get("params")
        if request["method"] == "elicitation/create":
            refused = await self._refused(params)
            if refused is not None:
                await self._reply_error(request["id"], refused.code, refused.message)
                return None
        if "params" in request and not isinstance(params, Mapping | None):
            await self._reply_error(request["id"], INVALID_PARAMS, "params must be an object")
        else:
            await self._reply_error(request["id"], INVALID_REQUEST, "invalid request")
        return None

    async def _screen_input_required(
        self, item: SessionMessage, response: t.JSONRPCResponse
    ) -> SessionMessage:
        requests = response.result.get("inputRequests")
        if not isinstance(requests, Mapping):
            return item
        for request in requests.values():
            if not isinstance(request, Mapping) or request.get("method") != "elicitation/create":
                continue
            refused = await self._refused(request.get("params"))
            if refused is not None:
                # 2026-07-28 has no per-question error slot: the call ends with the refusal.
                error = t.JSONRPCError(
                    jsonrpc="2.0",
                    id=response.id,
                    error=t.ErrorData(code=refused.code, message=refused.message),
                )
                return SessionMessage(error, metadata=item.metadata)
        return item

    async def _reply_error(self, request_id: str | int, code: int, message: str) -> None:
        error = t.JSONRPCError(jsonrpc="2.0", id=request_id, error=t.ErrorData(code=code, message=message))
        await self._write.send(SessionMessage(error))


def _recover_request(error: ValidationError) -> dict[str, Any] | None:
    """The JSON-RPC request behind a message that failed validation, if it was one.

    Pydantic reports a missing key with the whole enclosing object as `input`: the union of message
    types always includes members with required keys the request lacks (`result`, `error`).
    """
    for problem in error.errors():
        candidate = problem.get("input")
        if isinstance(candidate, dict) and "method" in candidate and "id" in candidate:
            request_id, method = candidate["id"], candidate["method"]
            if (
                isinstance(method, str)
                and isinstance(request_id, str | int)
                and not isinstance(request_id, bool)
            ):
                return candidate
    return None

"""`ElicitClient`: a connection to one server with the pipeline behind every question.

```
async with ElicitClient("http://127.0.0.1:8765/mcp", ui=ScriptedUI.accept_defaults()) as client:
    result = await client.call_tool("deploy", {"service": "web"})
    client.outcomes  # one Outcome per question the server asked
```

It wraps `mcp.client.Client` (reachable as `client.sdk`): declares only the modes the pipeline
honours, guards the transport (see `client/sdk.py`) and tracks the calls in flight so each question
is shown with the request it serves.

Guardrails are explicit in the library: `policy=` installs the policy stages (`client/guardrails.py`)
and `audit=` (a sink, or an `AuditConfig` the client opens on entry and closes on exit) adds the
audit trail (`client/audit.py`). Nothing is read from the configuration file here; the
`mcp-elicit call` and `connect` commands read it (`mcp_elicit.config.load_config`) and pass it on.

`url_mode=True` (or a `UrlMode`, to inject the opener, trusted domains and bounds) adds URL mode
(`client/url.py`): the URL check and consent stages, the completion notifications, the waiting
screen and the retries after -32042. It needs a URL-capable UI and a way to open a browser. A
pipeline that already has URL mode installed brings it along.

`oauth=OAuthLogin()` (or True) signs in to an HTTP server that requires OAuth with the SDK's
client flow before connecting (`client/oauth.py`): the browser opens on the authorization server,
comes back to a loopback listener, and the tokens are kept for the next run. `sign_in()` runs that
step on its own (the command line runs it outside its own time bounds: a person is signing in).

A server is named by a spec string: an `http://` or `https://` URL (streamable HTTP), or a command
line for a stdio server, split like a shell would (`shlex.split`) but never run through one.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from types import TracebackType
from typing import Any, Final, Literal, Protocol, TextIO, TypeVar

from mcp_elicit.audit.base import AuditSink
from mcp_elicit.client.audit import AuditTrail
from mcp_elicit.client.guardrails import Approval, Guardrails, install_guardrails
from mcp_elicit.client.model import Outcome
from mcp_elicit.client.names import cleaned_requester
from mcp_elicit.client.oauth import OAuthLogin
from mcp_elicit.client.pipeline import Pipeline
from mcp_elicit.client.sdk import (
    CallToolResult,
    ElicitationHandler,
    GetPromptResult,
    Implementation,
    KitClient,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
    handshake_refusal,
)
from mcp_elicit.client.sdk_oauth import sign_in
from mcp_elicit.client.sdk_transport import (
    AccessRefusal,
    InProcessServer,
    LinkWatch,
    StdioServerParameters,
    describe_server,
    transport_for,
)
from mcp_elicit.client.servers import ServerSpec, parse_server_spec
from mcp_elicit.client.stdio_guard import BadBytes
from mcp_elicit.client.ui_protocol import Requester, UserInterface
from mcp_elicit.client.url import CheckUrl, UrlMode
from mcp_elicit.config import DEFAULT_ON_WRITE_ERROR, AuditConfig, OnWriteError, open_audit_sink
from mcp_elicit.core.consent import ClientIdentity
from mcp_elicit.core.policy import Policy, PolicyState
from mcp_elicit.errors import AuthorizationFailed, ConfigError, OutOfOrder, ServerOutputError

__all__ = ["PROTOCOLS", "ElicitClient", "ProtocolChoice", "ServerSpec", "connect", "parse_server_spec"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class Progress(Protocol):
    """Called with each progress notification of a call (the SDK's progress callback shape)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


ProtocolChoice = Literal["legacy", "modern", "auto"]
"""How a client picks the era: the 2025-11-25 handshake, 2026-07-28, or whichever the server offers."""

PROTOCOLS: Final[dict[str, str]] = {"legacy": "legacy", "modern": "2026-07-28", "auto": "auto"}
"""`--protocol` names: the 2025-11-25 handshake, 2026-07-28 directly, or the handshake when the
server takes it and 2026-07-28 only when it does not ("auto", see `ElicitClient.era`)."""

AUTO_LEGACY_REASON: Final = "auto: the server takes the 2025-11-25 handshake, where servers that push can ask"
AUTO_MODERN_REASON: Final = "auto: the server refused the 2025-11-25 handshake, so 2026-07-28"


def _client_version() -> str:
    try:
        return version("mcp-elicit")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


class ElicitClient:
    """A connection to one server; questions go through `pipeline` (or a default one around `ui`).

    `server` is a spec string, a `ServerSpec`, the SDK's `StdioServerParameters`, a transport, or
    (in tests) an `MCPServer` to run in-process (then the transport guard does not apply).
    `protocol` is "legacy", "modern", "auto" or a protocol version.

    `policy` puts the policy stages in the pipeline (`install_guardrails`; `policy_state` to share
    rate limits and embargoes between connections, `approval` for how "ask first" asks). `audit`
    records every elicitation: a sink (yours to close), or an `AuditConfig` whose sink is opened on
    entry and closed on exit; `on_audit_error` applies to a sink given directly (an `AuditConfig`
    carries its own `on_write_error`).
    """

    def __init__(
        self,
        server: str | ServerSpec | StdioServerParameters | InProcessServer | Any,
        *,
        ui: UserInterface | None = None,
        pipeline: Pipeline | None = None,
        protocol: str = "auto",
        client_name: str = "mcp-elicit",
        read_timeout: float | None = None,
        errlog: TextIO = sys.stderr,
        url_mode: bool | UrlMode = False,
        policy: Policy | None = None,
        policy_state: PolicyState | None = None,
        approval: Approval = "form",
        audit: AuditSink | AuditConfig | None = None,
        on_audit_error: OnWriteError = DEFAULT_ON_WRITE_ERROR,
        oauth: OAuthLogin | bool | None = None,
    ) -> None:
        if pipeline is None:
            if ui is None:
                raise ConfigError("ui", "give a ui or a pipeline")
            pipeline = Pipeline(ui)
        self.pipeline = pipeline
        self.guardrails: Guardrails | None = None
        if policy is not None:
            self.guardrails = install_guardrails(pipeline, policy, state=policy_state, approval=approval)
        self._audit = audit
        self._on_audit_error = on_audit_error
        self._trail: AuditTrail | None = None
        self._owned_sink: AuditSink | None = None
        self._mode = PROTOCOLS.get(protocol, protocol)
        if isinstance(server, str):
            server = parse_server_spec(server)
        self._server = server
        self.oauth: OAuthLogin | None = OAuthLogin() if oauth is True else (oauth or None)
        if self.oauth is not None and self.oauth.when == "always" and _http_url(server) is None:
            raise ConfigError("oauth", "OAuth needs an http(s):// server, not a command line")
        self._auth: Any = None  # the SDK's OAuth provider, once signed in
        self._signed_in = False
        self.handler = ElicitationHandler(pipeline, where=_where(server))
        self._client_name = client_name
        self._read_timeout = read_timeout
        self._bad_bytes: BadBytes | None = None  # stdio only: what the server wrote that is not the protocol
        self._refusal: AccessRefusal | None = None  # HTTP only: the server's last 401/403
        # HTTP only: whether the server is gone (unreachable, or its session forgotten), per connection
        self.link: LinkWatch | None = None
        self._errlog = errlog
        self._sdk: KitClient | None = None
        self.url_off_reason = ""  # why URL mode is off, when a program turned it off (for display)
        self.era_reason = "" if self._mode == "auto" else f"--protocol {protocol}"
        # On a connection pinned to 2026-07-28: the error message with which the server refused
        # `server/discover` (every 2026-07-28 server answers it; a 2025-11-25-only one does not).
        self.discover_refused: str | None = None
        # URL mode goes in after any guardrails, so its re-ask check runs before the policy.
        self.url: UrlMode | None = _url_mode_of(pipeline)
        if url_mode:
            self.enable_url_mode(url_mode if isinstance(url_mode, UrlMode) else None)

    def enable_url_mode(self, mode: UrlMode | None = None) -> UrlMode:
        """Add URL mode to this client's pipeline, before connecting (what `url_mode=True` does)."""
        if self._sdk is not None:
            raise OutOfOrder("enable_url_mode", "call it before connecting, not after")
        if self.url is not None:
            raise ConfigError("url_mode", "this client already has URL mode")
        self.url = mode if mode is not None else UrlMode()
        self.url.install(self.pipeline)
        return self.url

    @property
    def sdk(self) -> KitClient:
        """The underlying `mcp.client.Client`, for everything this wrapper does not cover."""
        if self._sdk is None:
            raise OutOfOrder("ElicitClient.sdk", "enter the client with `async with`")
        return self._sdk

    @property
    def outcomes(self) -> list[Outcome]:
        """One record per question the server asked on this connection, oldest first."""
        return list(self.handler.outcomes)

    @property
    def server(self) -> Requester:
        """The server as it introduced itself and where it runs, cleaned as every prompt and record
        shows it (a name that lost escapes or control characters is marked)."""
        info = self.sdk.server_info
        raw = Requester(
            name=info.name if info else "",
            where=self.handler.where,
            title=info.title if info else None,
            version=info.version if info else None,
        )
        return cleaned_requester(raw)

    @property
    def http_url(self) -> str:
        """The URL of a streamable HTTP server ("" for any other server)."""
        return _http_url(self._server) or ""

    @property
    def stdio_command(self) -> str:
        """The command a stdio server is started with ("" for any other server); see
        `servers.start_failure` for telling apart a command that could not be started."""
        return _stdio_command(self._server)

    @property
    def protocol_version(self) -> str:
        return self.sdk.protocol_version

    async def __aenter__(self) -> ElicitClient:
        self._open_audit()
        try:
            await self._connect()
        except BaseException as exc:
            self._close_audit()
            if isinstance(exc, Exception):
                self._raise_known_cause(exc)
            raise
        return self

    async def sign_in(self) -> bool:
        """Sign in with OAuth now, when `oauth` is set and the server needs it (else a no-op);
        True when the connection will carry an OAuth token. Raises `AuthorizationFailed`."""
        url = _http_url(self._server)
        if self.oauth is None or url is None or self._signed_in:
            return self._auth is not None
        assert isinstance(self._server, ServerSpec)
        self._auth = await sign_in(url, dict(self._server.headers), self.oauth)
        self._signed_in = True
        return self._auth is not None

    async def _connect(self) -> None:
        """Connect in the chosen era. "auto" tries the 2025-11-25 handshake first: a server that
        takes it can push questions mid-call (`ctx.elicit`), and servers that use 2026-07-28 rounds
        (`Resolve`, this kit's `ask`) serve it too. Only a server that refuses the handshake gets
        2026-07-28 (discovered on a fresh connection). Nothing is retried after a tool ran, so no
        tool runs twice: the choice is made at connect time, before any call (docs/client.md)."""
        await self.sign_in()
        if self._mode != "auto":
            self._sdk = await self._enter(self._mode)
            refusal = self._sdk.discover_refusal
            self.discover_refused = None if refusal is None else refusal.error.message
        else:
            try:
                self._sdk = await self._enter("legacy")
                self.era_reason = AUTO_LEGACY_REASON
            except Exception as exc:
                refusal = handshake_refusal(exc)
                if refusal is None or not self._can_reconnect():
                    raise
                logger.info("the server refused the 2025-11-25 handshake (%s); trying 2026-07-28", refusal)
                self._sdk = await self._enter("auto")
                self.era_reason = AUTO_MODERN_REASON
        self.handler.session = self._sdk.session

    def _can_reconnect(self) -> bool:
        """A second connection needs a target that can be built again (not a transport object)."""
        return isinstance(self._server, ServerSpec | StdioServerParameters)

    async def _enter(self, mode: str) -> KitClient:
        client = KitClient(
            self._target(),
            mode=mode,
            elicitation_callback=self.handler,
            elicitation_modes=self.pipeline.modes,
            client_info=Implementation(name=self._client_name, version=_client_version()),
            read_timeout_seconds=self._read_timeout,
            **(self.url.sdk_options() if self.url is not None else {}),
        )
        await client.__aenter__()
        return client

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        client, self._sdk = self._sdk, None
        try:
            if client is not None:
                await client.__aexit__(exc_type, exc, tb)
        finally:
            self._close_audit()

    def _open_audit(self) -> None:
        """Add the audit trail to the pipeline, opening the configured sink (fail closed: an
        unopenable sink is an error, unless the configuration says to proceed without it)."""
        audit, on_error = self._audit, self._on_audit_error
        if audit is None:
            return
        if isinstance(audit, AuditConfig):
            on_error = audit.on_write_error
            if audit.level == "none":
                return
            try:
                sink = self._owned_sink = open_audit_sink(audit)
            except OSError:
                if on_error != "proceed":
                    raise
                logger.exception("the audit sink could not be opened; proceeding without a trail")
                return
        else:
            sink = audit
        client = ClientIdentity(name=self._client_name, version=_client_version())
        self._trail = AuditTrail(sink, client=client, on_write_error=on_error)
        self.pipeline.observers.append(self._trail)  # last: the record shows the answer sent

    def _close_audit(self) -> None:
        trail, self._trail = self._trail, None
        if trail is not None and trail in self.pipeline.observers:
            self.pipeline.observers.remove(trail)
        sink, self._owned_sink = self._owned_sink, None
        if sink is not None:
            sink.close()

    def _target(self) -> Any:
        server = self._server
        if isinstance(server, ServerSpec):
            self._bad_bytes = BadBytes()
            self._refusal = AccessRefusal()
            self.link = LinkWatch(server.url) if server.url is not None else None
            return transport_for(
                None,
                self.handler,
                url=server.url,
                argv=server.argv,
                env=dict(server.env),
                headers=dict(server.headers),
                auth=self._auth,
                errlog=self._errlog,
                bad_bytes=self._bad_bytes,
                refusal=self._refusal,
                watch=self.link,
            )
        self._bad_bytes = BadBytes()
        return transport_for(server, self.handler, errlog=self._errlog, bad_bytes=self._bad_bytes)

    # -- requests that may ask: tracked, so their questions are attributed -----------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        read_timeout: float | None = None,
        progress: Progress | None = None,
    ) -> CallToolResult:
        """`progress(progress, total, message)` is awaited for each progress notification of the call."""
        with self.handler.calls.track("tools/call", name, arguments):
            return await self._send(
                lambda: self.sdk.call_tool(
                    name, dict(arguments or {}), read_timeout_seconds=read_timeout, progress_callback=progress
                )
            )

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> GetPromptResult:
        with self.handler.calls.track("prompts/get", name, arguments):
            return await self._send(lambda: self.sdk.get_prompt(name, dict(arguments or {})))

    async def read_resource(self, uri: str) -> ReadResourceResult:
        with self.handler.calls.track("resources/read", uri, None):
            return await self._send(lambda: self.sdk.read_resource(uri))

    async def _send(self, send: Callable[[], Awaitable[_T]]) -> _T:
        """One request; with URL mode, its pushed pages are waited on and -32042 is answered."""
        try:
            if self.url is None:
                return await send()
            return await self.url.run(send, self.handler)
        except Exception as exc:
            self._raise_known_cause(exc)
            raise

    def _raise_known_cause(self, exc: Exception) -> None:
        """Raise what the transport saw behind `exc`, when it saw something: bytes from a stdio
        server that are not UTF-8 or a line over the bound (`ServerOutputError`), or an HTTP
        server's 401/403, which the SDK reports as a bare -32603 (`AuthorizationFailed`, reason
        "required" or "refused")."""
        bad = self._bad_bytes
        if bad is not None and bad.broken:
            raise ServerOutputError(bad.detail, limit=bad.limit) from exc
        url = _http_url(self._server)
        refused = self._refusal.error(url) if self._refusal is not None and url is not None else None
        if refused is not None and not isinstance(exc, AuthorizationFailed):
            raise refused from exc

    # -- listings -----------------------------------------------------------------------------------

    async def list_tools(self) -> list[Tool]:
        return await _all_pages(self.sdk.list_tools, "tools")

    async def list_prompts(self) -> list[Prompt]:
        return await _all_pages(self.sdk.list_prompts, "prompts")

    async def list_resources(self) -> list[Resource]:
        return await _all_pages(self.sdk.list_resources, "resources")

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return await _all_pages(self.sdk.list_resource_templates, "resource_templates")


# Pages fetched for one listing: a server whose cursor never ends cannot hang the client.
_MAX_LIST_PAGES: Final = 100


async def _all_pages(fetch: Any, attr: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_MAX_LIST_PAGES):
        page = await fetch(cursor=cursor)
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if cursor is None:
            break
    return items


def connect(server: Any, *, ui: UserInterface | None = None, **options: Any) -> ElicitClient:
    """`ElicitClient(server, ui=ui, **options)`, to use as `async with connect(...) as client`."""
    return ElicitClient(server, ui=ui, **options)


def _url_mode_of(pipeline: Pipeline) -> UrlMode | None:
    """The URL mode already installed in `pipeline` (by `UrlMode.install`), if any."""
    modes = (s.mode for s in pipeline.stages if isinstance(s, CheckUrl))
    return next((m for m in modes if isinstance(m, UrlMode)), None)


def _http_url(server: Any) -> str | None:
    return server.url if isinstance(server, ServerSpec) else None


def _where(server: Any) -> str:
    if isinstance(server, ServerSpec):
        return server.where
    return describe_server(server)


def _stdio_command(server: Any) -> str:
    """The command a stdio server is started with ("" for any other server)."""
    if isinstance(server, ServerSpec):
        return server.argv[0] if server.argv else ""
    return server.command if isinstance(server, StdioServerParameters) else ""

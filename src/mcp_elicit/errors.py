"""Every exception mcp-elicit raises, in one tree.

The tree splits by whose mistake it is, as h11 does. A usage error means the caller (a tool
author, a client author, an operator) built or configured something wrong; it is raised at
definition time and says what to change. A peer error means the other side of the connection
sent something wrong or went away; it carries the evidence (which field, which keyword). The
audit and hand-off families belong to the consent trail and to URL hand-offs. Each class also
subclasses the builtin a caller would already catch, and each `reason`-like field is an
enumeration (a `StrEnum`, so it still compares equal to its plain string; they are kept in
`mcp_elicit.error_reasons` and exported from here).

How each error reaches the other side (a JSON-RPC error with code and data, or a tool error
result with a one-line reason) is decided in one place: `mcp_elicit.core.refusals`.

    ElicitError
    ├── UsageError                               the caller built or configured something wrong
    │   ├── FormDefinitionError (TypeError)      a Python type cannot become a spec-valid form
    │   │   └── UnsupportedInRevision            the form needs a construct this revision lacks
    │   ├── InvalidArgument (ValueError, TypeError) an argument the function does not accept
    │   ├── UnknownRevision (ValueError)         a protocol revision this project does not speak
    │   ├── UnknownField (KeyError)              a form has no field of that name
    │   ├── ConfigError (ValueError)             a setting (policy TOML, hand-off base URL) is wrong
    │   ├── NotInstalled (RuntimeError)          the server lacks install(server) for what was asked
    │   ├── OutOfOrder (RuntimeError)            the client kit was used out of order (not entered, too late)
    │   └── SecretInForm (ValueError)            a form asks for a secret: use URL mode (F5)
    ├── PeerError                                the other side sent something wrong or went away
    │   ├── SchemaError (ValueError)             an incoming requestedSchema deviates from the spec
    │   ├── AnswerError (ValueError)             content does not satisfy the form
    │   ├── ToolArgumentsError (ValueError)      a tool call's arguments do not fit the tool
    │   ├── InvalidRequestState (ValueError)     a requestState we did not mint, or one used up
    │   ├── WrongResponseType (ValueError)       a 2026-07-28 response of the wrong kind for its request
    │   ├── CapabilityError (RuntimeError)       the client did not declare what a question needs
    │   ├── CapabilityRequired (RuntimeError)    the same on 2026-07-28: the request gets -32021
    │   ├── ElicitationTimeout (TimeoutError)    nobody answered within the per-call timeout
    │   ├── ClientGone (ConnectionError)         the client disconnected while a question was open
    │   ├── ClientRefused (RuntimeError)         the client answered a pushed request with an error
    │   ├── ServerOutputError (ConnectionError)  a stdio server broke the protocol (bad UTF-8, a huge line)
    │   ├── AuthorizationFailed (PermissionError) signing in to an MCP server with OAuth did not complete
    │   └── UpstreamLost (ConnectionError)       a gateway's upstream server went away during a request
    ├── AuditError                               the consent trail
    │   ├── AuditWriteError (OSError)            a sink could not store a record (fail closed)
    │   ├── AuditReadError (OSError)             a store could not be opened or read
    │   └── OutcomeNotRecorded (RuntimeError)    an observer could not record an answer: not sent
    ├── HandoffError                             URL hand-offs
    │   ├── IdentityRequired (PermissionError)   a hand-off needs a user and the request names none
    │   ├── HandoffNotCompleted (PermissionError) the person did not finish the out-of-band step
    │   ├── TooManyHandoffs (RuntimeError)       a user has too many hand-offs open at once
    │   ├── UrlHandoffStopped (RuntimeError)     a request needing a URL step (-32042) could not go on
    │   └── VaultError (ValueError)              a vault row does not decrypt for this user and provider
    └── DataError                                the guarded data server (apps/data)
        ├── QueryRefused (PermissionError)       the data server will not run a query (write, no estimate…)
        └── DataEngineError (OSError)            a data engine could not be reached or answered badly
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mcp_elicit.error_reasons import ArgumentProblem, AuthProblem, ConfigProblem, StopReason, VaultProblem

__all__ = [
    "AnswerError",
    "ArgumentProblem",
    "AuditError",
    "AuditReadError",
    "AuditWriteError",
    "AuthProblem",
    "AuthorizationFailed",
    "CapabilityError",
    "CapabilityRequired",
    "ClientGone",
    "ClientRefused",
    "ConfigError",
    "ConfigProblem",
    "DataEngineError",
    "DataError",
    "ElicitError",
    "ElicitationTimeout",
    "FieldProblem",
    "FormDefinitionError",
    "HandoffError",
    "HandoffNotCompleted",
    "IdentityRequired",
    "InvalidArgument",
    "InvalidRequestState",
    "NotInstalled",
    "OutOfOrder",
    "OutcomeNotRecorded",
    "PeerError",
    "QueryRefused",
    "SchemaError",
    "SchemaProblem",
    "SecretInForm",
    "ServerOutputError",
    "StopReason",
    "TooManyHandoffs",
    "ToolArgumentsError",
    "UnknownField",
    "UnknownRevision",
    "UnsupportedInRevision",
    "UpstreamLost",
    "UrlHandoffStopped",
    "UsageError",
    "VaultError",
    "VaultProblem",
    "WrongResponseType",
]


class ElicitError(Exception):
    """Base of every mcp-elicit error."""


class UsageError(ElicitError):
    """The caller built or configured something wrong: fix the code or the settings."""


class PeerError(ElicitError):
    """The other side of the connection sent something wrong, did not answer, or went away."""


class AuditError(ElicitError):
    """The consent trail could not be written or read."""


class HandoffError(ElicitError):
    """A URL hand-off could not be made, finished or read."""


class DataError(ElicitError):
    """The guarded data server refused a query or its engine failed."""


class FormDefinitionError(UsageError, TypeError):
    """A Python type cannot be turned into a spec-valid form.

    `field` names the offending field ("" for the form as a whole) and `construct`
    names what the spec does not allow there (for example "pattern", "nested model").
    """

    def __init__(self, field: str, construct: str, detail: str = "") -> None:
        self.field, self.construct, self.detail = field, construct, detail
        where = f"field {field!r}" if field else "form"
        super().__init__(
            f"{where}: {construct} is not allowed in an elicitation form" + (f" ({detail})" if detail else "")
        )


class UnsupportedInRevision(FormDefinitionError):
    """The form is valid, but the protocol revision in use cannot express `construct`."""

    def __init__(self, field: str, construct: str, revision: str) -> None:
        self.revision = revision
        super().__init__(field, construct, f"not expressible in protocol revision {revision}")


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """One deviation of a requestedSchema from the spec: where, which keyword, what is wrong."""

    field: str  # "" when the problem is at the top level
    keyword: str
    problem: str


class SchemaError(PeerError, ValueError):
    """An incoming requestedSchema is not one the spec allows; `problems` lists every deviation."""

    def __init__(self, problems: tuple[SchemaProblem, ...]) -> None:
        self.problems = problems
        summary = "; ".join(f"{p.field or '<form>'}.{p.keyword}: {p.problem}" for p in problems[:5])
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"requestedSchema is not spec-valid: {summary}{more}")


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One field of an answer that does not satisfy the form (or one argument of a tool call that
    does not fit the tool); `code` is stable, `detail` is prose."""

    field: str
    code: str
    detail: str = ""


class AnswerError(PeerError, ValueError):
    """Content does not satisfy the form; `problems` lists each bad field."""

    def __init__(self, problems: tuple[FieldProblem, ...]) -> None:
        self.problems = problems
        super().__init__(
            "answer does not satisfy the form: " + ", ".join(f"{p.field}: {p.code}" for p in problems)
        )

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(p.field for p in self.problems)


class ToolArgumentsError(PeerError, ValueError):
    """The arguments of a call of tool `tool` do not fit its input schema; `problems` has one
    FieldProblem per argument at fault: `field` the argument (a dotted path inside one), `code`
    an ArgumentProblem, `detail` the validator's words (never the value sent)."""

    def __init__(self, tool: str, problems: tuple[FieldProblem, ...]) -> None:
        self.tool, self.problems = tool, problems
        said = ", ".join(f"{p.field or '<arguments>'}: {p.code}" for p in problems)
        super().__init__(f"arguments of tool {tool!r} do not fit it: {said}")


class CapabilityError(PeerError, RuntimeError):
    """The client did not declare the mode (`mode`: "form", "url") a question needs, or, with
    `channel=False`, the connection cannot carry a question to the client at all (no back channel)."""

    def __init__(self, mode: str, *, channel: bool = True) -> None:
        self.mode, self.channel = mode, channel
        said = f"the client did not declare the {mode} elicitation capability"
        super().__init__(said if channel else f"this connection cannot carry a {mode} question to the client")


class CapabilityRequired(PeerError, RuntimeError):
    """A 2026-07-28 request needs a client capability (`capability`: "elicitation.form",
    "elicitation.url", "sampling", "roots") the client did not declare for it. The specification
    answers the whole request with -32021 (C2), so this is not a CapabilityError: a tool that
    catches CapabilityError to fall back does not swallow it."""

    def __init__(self, capability: str) -> None:
        self.capability = capability
        super().__init__(f"this request needs the client's {capability} capability")


class ElicitationTimeout(PeerError, TimeoutError):
    """Nobody answered within `seconds`; the server stopped waiting."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"no answer to the elicitation within {seconds:g} s")


class ClientGone(PeerError, ConnectionError):
    """The client disconnected while a question was waiting for its answer."""


class ClientRefused(PeerError, RuntimeError):
    """The client answered a pushed request (a question, sampling, roots) with a JSON-RPC error
    instead of a result: `code` is the error's code, `detail` its message as one bounded line."""

    def __init__(self, code: int, detail: str) -> None:
        self._code, self.detail = code, detail
        super().__init__(f"the client answered with error {code}: {detail}")

    @property
    def code(self) -> int:  # a property, so it still wins over MCPError's `code` when carried (sdk.carry)
        return self._code


class ServerOutputError(PeerError, ConnectionError):
    """A stdio server wrote something that is not the protocol: invalid UTF-8, or a line longer
    than `limit` bytes (None for the former). The connection ends at once and every call waiting
    on it fails with this error; `detail` says what was wrong and where."""

    def __init__(self, detail: str, *, limit: int | None = None) -> None:
        self.detail, self.limit = detail, limit
        super().__init__(f"the server broke the protocol: {detail}")


class AuthorizationFailed(PeerError, PermissionError):
    """The MCP server at `server` (its URL) does not let the client in: signing in with OAuth did
    not complete, or it answered HTTP `status` (401 or 403; None when no such answer was the cause).
    `reason` is an `AuthProblem`; `detail` is the authorization server's error code, the challenge's
    scheme or what failed, in words (never a token or a code)."""

    def __init__(self, server: str, reason: str, detail: str = "", *, status: int | None = None) -> None:
        self.server, self.reason, self.detail = server, AuthProblem(reason), detail
        self.status = status
        if status is None:
            text = f"signing in to {server} did not complete ({reason})" + (f": {detail}" if detail else "")
        else:
            answer = f"HTTP {status}" + (f", {detail} challenge" if detail else "")
            text = (
                f"{server} requires authorization ({answer}) and no credentials were sent"
                if self.reason is AuthProblem.REQUIRED
                else f"{server} refused the credentials sent ({answer})"
            )
        super().__init__(text)


class UpstreamLost(PeerError, ConnectionError):
    """The gateway's upstream server `server` (its key in the config) went away during a request:
    its process exited (`exit_status`, negative for the signal that ended it; None when not known),
    its connection closed, or its HTTP transport found it gone (`why`, one line). The gateway
    reconnects it at the next request."""

    def __init__(self, server: str, why: str, exit_status: int | None = None) -> None:
        self.server, self.why, self.exit_status = server, why, exit_status
        super().__init__(f"the upstream server {server!r} was lost ({why})")


class NotInstalled(UsageError, RuntimeError):
    """The server lacks what was asked of it: the mcp-elicit middleware (`install(server)`) on a
    2026-07-28 request, or hand-off settings for `handoff`/`require`. `what` names the missing part
    ("middleware", "handoffs"); installing twice is reported with "installed_twice"."""

    def __init__(self, what: str, detail: str = "") -> None:
        self.what = what
        super().__init__(detail or f"mcp-elicit needs {what} on this server")


class OutOfOrder(UsageError, RuntimeError):
    """The caller used the client kit out of order: `what` was used before `needs` (a client
    outside its `async with`, URL mode enabled on a connected client, a `UrlMode` never installed)."""

    def __init__(self, what: str, needs: str) -> None:
        self.what, self.needs = what, needs
        super().__init__(f"{what}: {needs} first")


class InvalidArgument(UsageError, ValueError, TypeError):
    """An argument is outside what the function accepts (a wrong value or a wrong type): `name` is
    the argument, `problem` why."""

    def __init__(self, name: str, problem: str) -> None:
        self.name, self.problem = name, problem
        super().__init__(f"{name}: {problem}")


class UnknownRevision(UsageError, ValueError):
    """`revision` is not a protocol revision this project speaks (`known` lists those it does)."""

    def __init__(self, revision: str, known: tuple[str, ...]) -> None:
        self.revision, self.known = revision, known
        super().__init__(f"unknown protocol revision {revision!r}; expected one of {known}")


class UnknownField(UsageError, KeyError):
    """A form has no field called `name`."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)


class WrongResponseType(PeerError, ValueError):
    """A 2026-07-28 `inputResponses` entry under `key` is not a result of the kind its request
    (`expected`: "elicitation/create", "sampling/createMessage", "roots/list") asks for."""

    def __init__(self, key: str, expected: str) -> None:
        self.key, self.expected = key, expected
        super().__init__(f"inputResponses[{key!r}] is not a result for {expected}")


class InvalidRequestState(PeerError, ValueError):
    """A 2026-07-28 `requestState` is not one this server minted for this call, has expired, or was
    used before (M3). Answered with -32602 and `{"reason": "invalid_request_state"}`."""

    def __init__(self) -> None:
        super().__init__("invalid or expired requestState")


class SecretInForm(UsageError, ValueError):
    """A form would ask for a secret (spec F5): `fields` maps each offending field to its reason
    codes. Secrets belong in URL mode; `ask(..., allow_secret_fields=True)` is the audited override."""

    def __init__(self, fields: dict[str, tuple[str, ...]]) -> None:
        self.fields = fields
        super().__init__("form fields that ask for secrets (use URL mode): " + ", ".join(sorted(fields)))


class ConfigError(UsageError, ValueError):
    """The configuration (policy TOML) is wrong at `key` (a dotted path such as "servers[2].form").

    `path` is the file it came from ("" when parsed from text); `problem` says what is wrong;
    `reason` is a ConfigProblem where one applies (None otherwise).
    """

    def __init__(self, key: str, problem: str, path: str = "", *, reason: str | None = None) -> None:
        self.key, self.problem, self.path = key, problem, path
        self.reason = None if reason is None else ConfigProblem(reason)
        where = f"{path}: " if path else ""
        super().__init__(f"{where}{key or '<config>'}: {problem}")


class _SinkError(AuditError, OSError):
    """An audit sink or store failed. `sink` names it ("sqlite", "postgres", "jsonl", "memory"),
    `target` where it keeps its records (a path or a table) and `detail` what went wrong (the
    underlying error, also in `__cause__`). The two leaves differ only in what could not be done."""

    _failed: ClassVar[str]  # "write" or "read"

    def __init__(self, sink: str, target: str, detail: str) -> None:
        self.sink, self.target, self.detail = sink, target, detail
        super().__init__(f"audit sink {sink} ({target}) could not {self._failed}: {detail}")


class AuditWriteError(_SinkError):
    """An audit sink could not store a record (`sink`, `target`, `detail`); callers fail closed."""

    _failed = "write"


class OutcomeNotRecorded(AuditError, RuntimeError):
    """An outcome observer (the client's audit trail) could not record an answer, so it is not sent.

    The client pipeline turns an accept into `action` ("decline" or "cancel") with `reason` (a
    stable code such as "audit_write_failed"); the underlying error is in `__cause__`.
    """

    def __init__(self, action: str, reason: str, detail: str = "") -> None:
        self.action, self.reason, self.detail = action, reason, detail
        super().__init__(f"outcome not recorded ({reason}); the answer becomes {action}: {detail}")


class AuditReadError(_SinkError):
    """An audit store could not be opened or read (missing file, unknown table, server down)."""

    _failed = "read"


class IdentityRequired(HandoffError, PermissionError):
    """A URL hand-off must be bound to a person (U9), and this request names none: no MCP
    authorization and no development identity configured. `where` is "mcp" or "page"."""

    def __init__(self, where: str = "mcp") -> None:
        self.where = where
        super().__init__(f"no identity to bind the hand-off to ({where} side)")


class HandoffNotCompleted(HandoffError, PermissionError):
    """`require()` could not go on: the out-of-band step ended with `action` ("decline" or
    "cancel") instead of being completed. `handoff_id` names the hand-off (never a secret);
    `kind` is its flow's kind ("api_key", "oauth", a custom flow's own; "" when unknown), so the
    refusal can say what the step was: an API key page is not a sign-in."""

    def __init__(self, action: str, handoff_id: str, kind: str = "") -> None:
        self.action, self.handoff_id, self.kind = action, handoff_id, kind
        super().__init__(f"the out-of-band step was not completed ({action})")


class TooManyHandoffs(HandoffError, RuntimeError):
    """The user already has `limit` hand-offs open; finish or let one expire first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"too many open hand-offs for this user (limit {limit})")


class UrlHandoffStopped(HandoffError, RuntimeError):
    """A request the server answered with a URL step (-32042, or a pushed page the person was
    waiting on) could not go on: `reason` is a StopReason (see its values), `rounds` counts the
    -32042 answers handled, `elicitation_id` names the step when known."""

    def __init__(self, reason: str, rounds: int = 0, elicitation_id: str | None = None) -> None:
        self.reason = StopReason(reason)
        self.rounds = rounds
        self.elicitation_id = elicitation_id
        after = f" after {rounds} rounds" if rounds else ""  # rounds: the 2026-07-28 era's retries
        super().__init__(f"the URL step did not complete ({reason}){after}")


class VaultError(HandoffError, ValueError):
    """A vault row for `provider` cannot be used: `reason` is a VaultProblem (see its values).
    The value itself never appears in the error."""

    def __init__(self, provider: str, reason: str) -> None:
        self.provider = provider
        self.reason = VaultProblem(reason)
        super().__init__(f"vault row for provider {provider!r} cannot be used ({reason})")


class QueryRefused(DataError, PermissionError):
    """The guarded data server will not run a query. `reason` is a category of
    `mcp_elicit.apps.data.guard` ("not_read_only", "not_parsed", "no_estimate", "no_catalog",
    "cannot_ask", "unknown_column", ...); `detail` says why in words."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason, self.detail = reason, detail
        super().__init__(f"query refused ({reason})" + (f": {detail}" if detail else ""))


class DataEngineError(DataError, OSError):
    """A data engine (`engine`: "duckdb", "postgres", "trino") failed: it could not be reached, or
    it rejected or could not plan a statement. `detail` carries the engine's own message."""

    def __init__(self, engine: str, detail: str) -> None:
        self.engine, self.detail = engine, detail
        super().__init__(f"{engine}: {detail}")

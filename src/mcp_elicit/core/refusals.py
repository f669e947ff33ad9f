"""What every mcp-elicit error looks like on the wire, decided in one place.

A server-side refusal (the client lacks a mode, a form asks for a secret, answers keep failing,
nobody answered) has to reach the person at the other end as one readable line, not as "Error
executing tool X" and a traceback in the server's log. `refusal_of` maps each class of the error
tree (`mcp_elicit.errors`) to a `Refusal`:

- `protocol`: True when the error is a JSON-RPC error by the specification's rules (-32021 for a
  missing capability on 2026-07-28, -32602 for a bad requestState); False when, on `tools/call`,
  it becomes a tool error result (`isError: true`) whose text is `text`. Requests that have no
  error result (`prompts/get`, `resources/read`) always get the JSON-RPC error `code`.
- `reason`: a stable code for programs, also put in the JSON-RPC error's `data`.
- `ordinary`: an outcome that happens in normal use (the person did not answer, the client left or
  answered a question with an error); it is logged as one line, never with a traceback.
- `reply`: False when nobody is left to answer (the client disconnected).

The text names what is running: `method` ("tools/call", "prompts/get", "resources/read") makes it
"This tool…", "This prompt…" or "This resource…"; any other or none gives neutral wording ("This
request…", "The server…").

Every class in the tree has an entry; a test checks that none is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, cast

from mcp_elicit import errors as e
from mcp_elicit.core.wire_codes import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
)

__all__ = ["Refusal", "Running", "refusal_of"]


@dataclass(frozen=True, slots=True)
class Refusal:
    code: int
    reason: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    protocol: bool = False
    ordinary: bool = False
    reply: bool = True
    exact: bool = False  # `data` is the whole of the error's data, as the specification defines it

    def error_data(self) -> dict[str, Any]:
        """The JSON-RPC error's `data`: the reason code plus the evidence, or, for an error the
        specification defines (-32021), exactly the data it defines."""
        if self.exact:
            return dict(self.data)
        return {"reason": self.reason, **self.data}


@dataclass(frozen=True, slots=True)
class Running:
    """What a refusal's text calls the handler that was running: `this` ("This tool") and `the`
    ("The tool"), or neutral wording when it is not known."""

    this: str = "This request"
    the: str = "The server"


_RUNNING: Final[Mapping[str | None, Running]] = MappingProxyType(
    {
        "tools/call": Running("This tool", "The tool"),
        "prompts/get": Running("This prompt", "The prompt"),
        "resources/read": Running("This resource", "The resource"),
    }
)
_NEUTRAL: Final = Running()

Build = Callable[[BaseException, bool, Running], Refusal]


def _capability(exc: BaseException, modern: bool, running: Running) -> Refusal:
    if isinstance(exc, e.CapabilityError) and not exc.channel:  # the server's transport cannot push
        return Refusal(
            INTERNAL_ERROR,
            "no_back_channel",
            f"{running.the} cannot ask the client anything over this connection: the server's transport "
            "cannot carry a question to it (JSON responses, or stateless HTTP); nothing was done.",
        )
    if isinstance(exc, e.CapabilityRequired):
        name = exc.capability
    else:
        mode = getattr(exc, "mode", "form")
        name = mode if mode in ("sampling", "roots") else f"elicitation.{mode}"
    head, _, sub = name.partition(".")
    required: dict[str, Any] = {head: {sub: {}} if sub else {}}
    text = f"{running.this} needs the client's {name} capability, which this client did not declare."
    if isinstance(exc, e.CapabilityRequired):  # 2026-07-28 names the error (C2)
        return Refusal(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            "missing_capability",
            text,
            {"requiredCapabilities": required},
            protocol=True,
            exact=True,
        )
    return Refusal(INVALID_PARAMS, "missing_capability", text, {"requiredCapabilities": required})


def _answers(exc: BaseException, modern: bool, running: Running) -> Refusal:
    exc = cast(e.AnswerError, exc)
    fields = sorted({p.field for p in exc.problems if p.field})
    codes = sorted({p.code for p in exc.problems})
    if "too_many_questions" in codes:
        return Refusal(
            INTERNAL_ERROR, "too_many_questions", f"{running.the} asked more questions than one call allows."
        )
    where = f" (fields: {', '.join(fields)})" if fields else ""
    return Refusal(
        INVALID_PARAMS,
        "invalid_answers",
        f"The answers did not satisfy the form{where}; nothing was done.",
        {"fields": fields, "codes": codes},
    )


def _arguments(exc: BaseException, modern: bool, running: Running) -> Refusal:
    """A tool error naming each argument at fault, for the model to call again correctly."""
    exc = cast(e.ToolArgumentsError, exc)
    # Only a tool takes arguments; elsewhere (never raised there) the name alone, quoted.
    subject = f"The {exc.tool} tool" if running is _RUNNING["tools/call"] else f"'{exc.tool}'"
    said = [_argument_sentence(subject, p) for p in exc.problems]
    return Refusal(
        INVALID_PARAMS,
        "invalid_arguments",
        " ".join(said) or f"{subject}: the arguments are not valid.",
        {"tool": exc.tool, "arguments": [[p.field, str(p.code)] for p in exc.problems]},
    )


def _argument_sentence(subject: str, p: e.FieldProblem) -> str:
    why = f" ({p.detail})" if p.detail else ""
    if not p.field:
        return f"{subject}: the arguments are not valid{why}."
    if p.code == e.ArgumentProblem.MISSING:
        return f"{subject} needs the argument '{p.field}'."
    if p.code == e.ArgumentProblem.UNEXPECTED:
        return f"{subject} takes no argument '{p.field}'."
    kind = "has the wrong type" if p.code == e.ArgumentProblem.WRONG_TYPE else "is not valid"
    return f"{subject}: the argument '{p.field}' {kind}{why}."


def _secret(exc: BaseException, modern: bool, running: Running) -> Refusal:
    exc = cast(e.SecretInForm, exc)
    fields = sorted(exc.fields)
    return Refusal(
        INTERNAL_ERROR,
        "secret_in_form",
        f"The server refused to ask for secrets in a form (fields: {', '.join(fields)}); "
        "secrets need a URL hand-off.",
        {"fields": fields},
    )


# What a hand-off's page was for, by its flow's kind (`server/flows.py`): only an OAuth flow is a
# sign-in; an API key page is not one, and a custom flow or an unknown kind is a web page step.
_HANDOFF_STEPS: Final[Mapping[str, str]] = MappingProxyType(
    {"oauth": "The sign-in on the server's web page", "api_key": "The API key page"}
)
_HANDOFF_STEP: Final = "The step on the server's web page"


def _handoff(exc: BaseException, modern: bool, running: Running) -> Refusal:
    exc = cast(e.HandoffNotCompleted, exc)
    did = "declined" if exc.action == "decline" else "cancelled"
    step = _HANDOFF_STEPS.get(exc.kind, _HANDOFF_STEP)
    return Refusal(
        INTERNAL_ERROR,
        f"handoff_{did}",
        f"{step} was {did}; nothing was done.",
        {"action": exc.action, **({"kind": exc.kind} if exc.kind else {})},
        ordinary=True,
    )


def _refusal(
    code: int,
    reason: str,
    text: str,
    data: Mapping[str, str] = MappingProxyType({}),
    *,
    protocol: bool = False,
    ordinary: bool = False,
    reply: bool = True,
) -> Build:
    """The builder of a refusal whose `text` may show the error's attributes (``{exc.seconds:g}``)
    and what was running (``{running.the}``), and whose `data` maps each key to the attribute it
    carries."""

    def build(exc: BaseException, modern: bool, running: Running) -> Refusal:
        evidence = {key: getattr(exc, attribute) for key, attribute in data.items()}
        shown = text.format(exc=exc, running=running)
        return Refusal(code, reason, shown, evidence, protocol=protocol, ordinary=ordinary, reply=reply)

    return build


def _config(exc: BaseException, modern: bool, running: Running) -> Refusal:
    exc = cast(e.ConfigError, exc)
    return Refusal(
        INTERNAL_ERROR,
        "server_misconfigured",
        f"The server is not set up for this ({exc.key or 'configuration'}: {exc.problem}).",
        {"key": exc.key},
    )


def _upstream_lost(exc: BaseException, modern: bool, running: Running) -> Refusal:
    exc = cast(e.UpstreamLost, exc)
    text = f"The upstream server '{exc.server}' was lost during the request ({exc.why}); "
    # its process's exit status when known (a stdio upstream's), as the words say it
    known = {} if exc.exit_status is None else {"exit_status": exc.exit_status}
    text += "it is reconnected at the next request."
    return Refusal(INTERNAL_ERROR, "upstream_lost", text, {"server": exc.server, **known}, ordinary=True)


def _not_installed(exc: BaseException, modern: bool, running: Running) -> Refusal:
    # Without hand-off settings the server still asks forms: say what it is not set up for.
    # The text names the call that is missing: the author reads it in the tool's error as well.
    what = cast(e.NotInstalled, exc).what
    if what == "handoffs":
        text = (
            "The server is not set up to send people to web pages "
            "(it needs mcp_elicit.install(server, ElicitSettings(handoffs=...)))."
        )
    else:
        text = "The server is not set up to ask questions (it needs mcp_elicit.install(server))."
    return Refusal(INTERNAL_ERROR, "not_installed", text, {"missing": what})


def _client_refused(exc: BaseException, modern: bool, running: Running) -> Refusal:
    exc = cast(e.ClientRefused, exc)
    said = exc.detail or f"error {exc.code}"  # the detail is already one cleaned, bounded line
    return Refusal(
        INTERNAL_ERROR,
        "client_refused",
        f"The client could not take the question (it answered: {said}); nothing was done.",
        {"code": exc.code},
        ordinary=True,
    )


_MAP: dict[type[BaseException], Build] = {
    e.CapabilityError: _capability,
    e.CapabilityRequired: _capability,
    e.AnswerError: _answers,
    e.ToolArgumentsError: _arguments,
    e.SecretInForm: _secret,
    e.ElicitationTimeout: _refusal(
        INTERNAL_ERROR,
        "timeout",
        "No answer came within {exc.seconds:g} s; nothing was done.",
        {"seconds": "seconds"},
        ordinary=True,
    ),
    e.HandoffNotCompleted: _handoff,
    e.ConfigError: _config,
    e.ClientGone: _refusal(
        INTERNAL_ERROR, "client_gone", "The client disconnected.", ordinary=True, reply=False
    ),
    e.ClientRefused: _client_refused,
    e.ServerOutputError: _refusal(INTERNAL_ERROR, "server_broke_protocol", "The server broke the protocol."),
    e.AuthorizationFailed: _refusal(
        INTERNAL_ERROR, "authorization_failed", "Signing in to the server did not complete."
    ),
    e.UpstreamLost: _upstream_lost,
    e.WrongResponseType: _refusal(
        INVALID_PARAMS,
        "wrong_response_type",
        "An answer is not of the kind its request asked for.",
        {"key": "key", "expected": "expected"},
        protocol=True,
    ),
    e.InvalidRequestState: _refusal(
        INVALID_PARAMS, "invalid_request_state", "Invalid or expired requestState.", protocol=True
    ),
    e.SchemaError: lambda exc, modern, running: Refusal(
        INVALID_PARAMS,
        "invalid_schema",
        "The requested form is not one the specification allows.",
        {"problems": [[p.field, p.keyword, p.problem] for p in exc.problems]}
        if isinstance(exc, e.SchemaError)
        else {},
    ),
    e.UnsupportedInRevision: _refusal(
        INTERNAL_ERROR,
        "unsupported_in_revision",
        "This question cannot be asked in protocol revision {exc.revision} ({exc.construct}).",
        {"revision": "revision", "field": "field"},
    ),
    e.FormDefinitionError: _refusal(
        INTERNAL_ERROR, "form_definition", "{running.the}'s form cannot be asked."
    ),
    e.InvalidArgument: _refusal(INTERNAL_ERROR, "invalid_argument", "{running.the} used mcp-elicit wrongly."),
    e.UnknownRevision: _refusal(
        INTERNAL_ERROR, "unknown_revision", "The protocol revision is not supported."
    ),
    e.UnknownField: _refusal(INTERNAL_ERROR, "invalid_argument", "{running.the} used mcp-elicit wrongly."),
    e.OutOfOrder: _refusal(INTERNAL_ERROR, "out_of_order", "The client kit was used out of order."),
    e.NotInstalled: _not_installed,
    e.AuditWriteError: _refusal(
        INTERNAL_ERROR, "audit_write_failed", "The consent record could not be written; nothing was done."
    ),
    e.AuditReadError: _refusal(INTERNAL_ERROR, "audit_read_failed", "The consent trail could not be read."),
    e.OutcomeNotRecorded: _refusal(
        INTERNAL_ERROR, "outcome_not_recorded", "The answer could not be recorded, so it was not sent."
    ),
    e.IdentityRequired: _refusal(
        INTERNAL_ERROR, "identity_required", "This step needs a signed-in user, and the request names none."
    ),
    e.TooManyHandoffs: _refusal(
        INTERNAL_ERROR,
        "too_many_handoffs",
        "Too many web page steps are open for this user; finish one or let one expire first.",
        {"limit": "limit"},
    ),
    e.UrlHandoffStopped: _refusal(INTERNAL_ERROR, "url_step_stopped", "The browser step did not complete."),
    e.VaultError: _refusal(INTERNAL_ERROR, "vault_unreadable", "A stored credential could not be read."),
}
_MAP[e.QueryRefused] = _refusal(
    INVALID_PARAMS, "query_refused", "The query was not run ({exc.reason}).", {"category": "reason"}
)
_MAP[e.DataEngineError] = _refusal(
    INTERNAL_ERROR, "engine_failed", "The data engine could not run the query."
)
_FAMILY_FALLBACK = _refusal(INTERNAL_ERROR, "error", "The request could not be completed.")


def refusal_of(exc: BaseException, *, modern: bool, method: str | None = None) -> Refusal:
    """How `exc` reaches the other side on a request of the 2026-07-28 era (`modern`) or an older
    one, worded for the handler of `method` that was running (neutral when None or another)."""
    running = _RUNNING.get(method, _NEUTRAL)
    for cls in type(exc).__mro__:
        build = _MAP.get(cls)
        if build is not None:
            return build(exc, modern, running)
    return _FAMILY_FALLBACK(exc, modern, running)


def mapped_classes() -> frozenset[type[BaseException]]:
    """The classes with an entry of their own (the test that every class is mapped reads this)."""
    return frozenset(_MAP)

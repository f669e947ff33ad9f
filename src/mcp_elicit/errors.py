"""Every exception mcp-elicit raises, in one tree.

Local errors mean the caller built something wrong and are raised at definition time;
remote errors mean a peer sent something wrong and carry the evidence (which field,
which keyword) so the adapter can answer with the right JSON-RPC error. Each class also
subclasses the builtin a caller would already catch.

    ElicitError
    ├── FormDefinitionError (TypeError)          a Python type cannot become a spec-valid form
    │   └── UnsupportedInRevision                the form needs a construct this revision lacks
    ├── SchemaError (ValueError)                 an incoming requestedSchema deviates from the spec
    ├── AnswerError (ValueError)                 content does not satisfy the form
    ├── CapabilityError (RuntimeError)           the client did not declare the mode a question needs
    ├── ElicitationTimeout (TimeoutError)        nobody answered within the per-call timeout
    ├── ClientGone (ConnectionError)             the client disconnected while a question was open
    ├── ServerOutputError (ConnectionError)      a server wrote bytes that are not the protocol (bad UTF-8)
    ├── NotInstalled (RuntimeError)              ask() used on a server without the mcp-elicit middleware
    ├── SecretInForm (ValueError)                a form asks for a secret: use URL mode (F5)
    ├── ConfigError (ValueError)                 the policy/config TOML has a bad key or value
    ├── AuditWriteError (OSError)                an audit sink could not store a record (fail closed)
    ├── AuditReadError (OSError)                 an audit store could not be opened or read
    ├── OutcomeNotRecorded (RuntimeError)        an observer could not record an answer: it is not sent
    ├── IdentityRequired (PermissionError)       a URL hand-off needs a user and the request names none
    ├── HandoffNotCompleted (PermissionError)    the person did not finish a required out-of-band step
    ├── TooManyHandoffs (RuntimeError)           a user has too many hand-offs open at once
    ├── UrlHandoffStopped (RuntimeError)         a request needing a URL step (-32042) could not go on
    └── VaultError (ValueError)                  a vault row does not decrypt for this user and provider
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AnswerError",
    "AuditReadError",
    "AuditWriteError",
    "CapabilityError",
    "ClientGone",
    "ConfigError",
    "ElicitError",
    "ElicitationTimeout",
    "FieldProblem",
    "FormDefinitionError",
    "HandoffNotCompleted",
    "IdentityRequired",
    "NotInstalled",
    "OutcomeNotRecorded",
    "SchemaError",
    "SchemaProblem",
    "SecretInForm",
    "ServerOutputError",
    "TooManyHandoffs",
    "UnsupportedInRevision",
    "UrlHandoffStopped",
    "VaultError",
]


class ElicitError(Exception):
    """Base of every mcp-elicit error."""


class FormDefinitionError(ElicitError, TypeError):
    """A Python type cannot be turned into a spec-valid form.

    `field` names the offending field ("" for the form as a whole) and `construct`
    names what the spec does not allow there (for example "pattern", "nested model").
    """

    def __init__(self, field: str, construct: str, detail: str = "") -> None:
        self.field = field
        self.construct = construct
        self.detail = detail
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


class SchemaError(ElicitError, ValueError):
    """An incoming requestedSchema is not one the spec allows; `problems` lists every deviation."""

    def __init__(self, problems: tuple[SchemaProblem, ...]) -> None:
        self.problems = problems
        summary = "; ".join(f"{p.field or '<form>'}.{p.keyword}: {p.problem}" for p in problems[:5])
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"requestedSchema is not spec-valid: {summary}{more}")


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One field of an answer that does not satisfy the form; `code` is stable, `detail` is prose."""

    field: str
    code: str
    detail: str = ""


class AnswerError(ElicitError, ValueError):
    """Content does not satisfy the form; `problems` lists each bad field."""

    def __init__(self, problems: tuple[FieldProblem, ...]) -> None:
        self.problems = problems
        super().__init__(
            "answer does not satisfy the form: " + ", ".join(f"{p.field}: {p.code}" for p in problems)
        )

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(p.field for p in self.problems)


class CapabilityError(ElicitError, RuntimeError):
    """The client did not declare the elicitation mode (`mode`: "form" or "url") a question needs."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        super().__init__(f"the client did not declare the {mode} elicitation capability")


class ElicitationTimeout(ElicitError, TimeoutError):
    """Nobody answered within `seconds`; the server stopped waiting."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"no answer to the elicitation within {seconds:g} s")


class ClientGone(ElicitError, ConnectionError):
    """The client disconnected while a question was waiting for its answer."""


class ServerOutputError(ElicitError, ConnectionError):
    """A server wrote something that is not the protocol (a line of invalid UTF-8 on stdio).

    The connection is ended at once and every call waiting on it fails with this error; `detail`
    says what was wrong and where.
    """

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(f"the server broke the protocol: {detail}")


class NotInstalled(ElicitError, RuntimeError):
    """ask() ran on a 2026-07-28 request of a server that does not have the mcp-elicit middleware."""


class SecretInForm(ElicitError, ValueError):
    """A form would ask for a secret (spec F5): `fields` maps each offending field to its reason codes.

    Secrets belong in URL mode; `ask(..., allow_secret_fields=True)` is the audited override.
    """

    def __init__(self, fields: dict[str, tuple[str, ...]]) -> None:
        self.fields = fields
        super().__init__("form fields that ask for secrets (use URL mode): " + ", ".join(sorted(fields)))


class ConfigError(ElicitError, ValueError):
    """The configuration (policy TOML) is wrong at `key` (a dotted path such as "servers[2].form").

    `path` is the file it came from ("" when parsed from text); `problem` says what is wrong.
    """

    def __init__(self, key: str, problem: str, path: str = "") -> None:
        self.key = key
        self.problem = problem
        self.path = path
        where = f"{path}: " if path else ""
        super().__init__(f"{where}{key or '<config>'}: {problem}")


class AuditWriteError(ElicitError, OSError):
    """An audit sink could not store a record; callers fail closed and decline the elicitation.

    `sink` names the sink ("sqlite", "postgres", "jsonl", "memory"), `target` where it writes (a
    path or a table) and `detail` what went wrong (the underlying error, also in `__cause__`).
    """

    def __init__(self, sink: str, target: str, detail: str) -> None:
        self.sink = sink
        self.target = target
        self.detail = detail
        super().__init__(f"audit sink {sink} ({target}) could not write: {detail}")


class OutcomeNotRecorded(ElicitError, RuntimeError):
    """An outcome observer (the client's audit trail) could not record an answer, so it is not sent.

    The client pipeline turns an accept into `action` ("decline" or "cancel") with `reason` (a
    stable code such as "audit_write_failed"); the underlying error is in `__cause__`.
    """

    def __init__(self, action: str, reason: str, detail: str = "") -> None:
        self.action = action
        self.reason = reason
        self.detail = detail
        super().__init__(f"outcome not recorded ({reason}); the answer becomes {action}: {detail}")


class AuditReadError(ElicitError, OSError):
    """An audit store could not be opened or read (missing file, unknown table, server down).

    Same fields as AuditWriteError: `sink`, `target` and `detail`.
    """

    def __init__(self, sink: str, target: str, detail: str) -> None:
        self.sink = sink
        self.target = target
        self.detail = detail
        super().__init__(f"audit sink {sink} ({target}) could not read: {detail}")


class IdentityRequired(ElicitError, PermissionError):
    """A URL hand-off must be bound to a person (U9), and this request names none: no MCP
    authorization and no development identity configured. `where` is "mcp" or "page"."""

    def __init__(self, where: str = "mcp") -> None:
        self.where = where
        super().__init__(f"no identity to bind the hand-off to ({where} side)")


class HandoffNotCompleted(ElicitError, PermissionError):
    """`require()` could not go on: the out-of-band step ended with `action` ("decline" or
    "cancel") instead of being completed. `handoff_id` names the hand-off (never a secret)."""

    def __init__(self, action: str, handoff_id: str) -> None:
        self.action = action
        self.handoff_id = handoff_id
        super().__init__(f"the out-of-band step was not completed ({action})")


class TooManyHandoffs(ElicitError, RuntimeError):
    """The user already has `limit` hand-offs open; finish or let one expire first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"too many open hand-offs for this user (limit {limit})")


class UrlHandoffStopped(ElicitError, RuntimeError):
    """A request the server answered with a URL step (-32042, or a pushed page the person was
    waiting on) could not go on. `reason`: "declined" or "cancelled" (the person, on the consent or
    the waiting screen), "refused" (the client refused the listed request), "timeout" (no
    completion in time), "rounds_exceeded" (the server kept answering -32042), "repeated" (it
    asked again for a page already completed) or "invalid" (a malformed -32042). `rounds` counts
    the -32042 answers handled; `elicitation_id` names the step when known."""

    def __init__(self, reason: str, rounds: int = 0, elicitation_id: str | None = None) -> None:
        self.reason = reason
        self.rounds = rounds
        self.elicitation_id = elicitation_id
        super().__init__(f"the URL step did not complete ({reason}) after {rounds} round(s)")


class VaultError(ElicitError, ValueError):
    """A vault row for `provider` did not decrypt: `reason` is "unknown_key" (its key left the
    key ring), "tampered" (wrong user or provider, edited, or copied from another row) or
    "malformed". The value itself never appears in the error."""

    def __init__(self, provider: str, reason: str) -> None:
        self.provider = provider
        self.reason = reason
        super().__init__(f"vault row for provider {provider!r} does not decrypt ({reason})")

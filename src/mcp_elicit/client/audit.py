"""The client's consent audit trail: one record per elicitation, through any audit sink (C4, U9).

`AuditTrail` is a pipeline observer. It hears of every outcome, refusals included (by the mode
check and the schema gate, the secret guard, the policy, a rate limit, a timeout, no terminal),
turns it into a `core.consent.ConsentEvent` (`consent_event`) and appends it to the sink through
the sink's writer thread (audit/writer.py: group commit; sinks are synchronous). It runs before
the answer is sent, so the trail never misses an answer the server got.

Fail closed: when the sink cannot write, the observer raises `OutcomeNotRecorded` and the
pipeline turns an accept into ``decline`` (``on_write_error="decline"``, the default) or
``cancel``; ``"proceed"`` logs the failure and lets the answer go. A decline or cancel stays what
it was: it gives the server nothing.

What a record holds: the server as the pipeline saw it (declared name and version, cleaned, and
where it runs), the client's name and version, the protocol revision, the mode (``none`` when the
question was decided without showing anything to anyone, `UNSHOWN_DECIDERS`, with the mode asked
for in ``details.requested_mode``), the raw message
(its digest at the default level) and schema (field names and types; the secret guard's verdict
marks the sensitive ones), the request the question served (method and target; the client does
not see the JSON-RPC id the SDK gave that request, so `call.request_id` is null), the URL's host,
registrable domain and verdict when the URL check left a `UrlVerdict` in
``e.url_verdict``, the action, who decided and why, the latency, and at the
``request_response`` level the answer values of non-sensitive fields.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from mcp_elicit.audit.base import AuditSink
from mcp_elicit.audit.writer import writer_for
from mcp_elicit.client.model import Elicitation, Outcome, Reply
from mcp_elicit.client.names import cleaned_requester
from mcp_elicit.client.url_flow import URL_RECHECK_REASON
from mcp_elicit.config import DEFAULT_ON_WRITE_ERROR, OnWriteError
from mcp_elicit.core.consent import DECIDERS, CallRef, ClientIdentity, ConsentEvent, ServerIdentity
from mcp_elicit.core.sensitive import FormVerdict
from mcp_elicit.errors import AuditWriteError, ConfigError, OutcomeNotRecorded

__all__ = ["UNSHOWN_DECIDERS", "AuditTrail", "consent_event"]

logger = logging.getLogger(__name__)

_ON_WRITE_ERROR: Final = get_args(OnWriteError)

# Deciders that answer without anything being shown to a person: their records say mode "none",
# as the server kit's own such decisions do, and keep the mode asked for in
# details.requested_mode. The others keep the request's mode: `person`, `script` and `timeout`
# were shown the question, and an `error` may come after it was (a UI that failed, a trail that
# could not store the answer).
UNSHOWN_DECIDERS: Final = frozenset({"policy", "rate_limit", "secret_guard", "gate", "no_terminal"})


def _decider(decided_by: str) -> Any:
    """The pipeline's `decided_by` as a consent `DecidedBy`; an unknown one is an error."""
    return decided_by if decided_by in DECIDERS else "error"


def _part(verdict: Any, name: str) -> str | None:
    """A field of a URL verdict, read from an object or a mapping; None when absent."""
    value = verdict.get(name) if isinstance(verdict, Mapping) else getattr(verdict, name, None)
    return value if isinstance(value, str) else None


def consent_event(
    e: Elicitation,
    outcome: Outcome,
    *,
    client: ClientIdentity | None = None,
    person: str = "",
    details: Mapping[str, Any] | None = None,
) -> ConsentEvent:
    """The consent event for one finished elicitation (pure: reads `e` and `outcome` only);
    `details` are facts the application adds to the record (never what a person typed)."""
    params: Mapping[str, Any] = e.params if isinstance(e.params, Mapping) else {}
    message = params.get("message")
    schema = params.get("requestedSchema")
    raw_url = params.get("url")
    decision = e.decision
    content = decision.content if isinstance(decision, Reply) and decision.action == "accept" else None
    form_verdict = e.form_verdict
    url_verdict = e.url_verdict
    # cleaned here too: a question refused before `Identify` ran (by the gate) holds the raw name
    server = cleaned_requester(outcome.server)
    purpose = outcome.purpose
    call = None
    if purpose.method is not None or purpose.target is not None:
        call = CallRef(method=purpose.method or "", request_id=None, name=purpose.target or "")
    requested: Literal["form", "url"] = "url" if outcome.mode == "url" else "form"  # F4: no mode is form
    decided_by = _decider(outcome.decided_by)
    unshown = decided_by in UNSHOWN_DECIDERS
    return ConsentEvent(
        time=outcome.time,
        side="client",
        mode="none" if unshown else requested,
        action=outcome.action,
        decided_by=decided_by,
        server=ServerIdentity(name=server.name, version=server.version or "", where=server.where),
        client=client or ClientIdentity(),
        protocol_revision=outcome.protocol,
        person=person,
        message=message if isinstance(message, str) else "",
        requested_schema=schema if isinstance(schema, Mapping) else None,
        url=e.url if e.url is not None else (raw_url if isinstance(raw_url, str) else None),
        url_host=_part(url_verdict, "host"),
        url_domain=_part(url_verdict, "registrable_domain"),
        url_verdict=_part(url_verdict, "verdict"),
        reason=outcome.reason,
        latency_ms=outcome.latency_ms,
        call=call,
        content=content,
        form_verdict=form_verdict if isinstance(form_verdict, FormVerdict) else None,
        details={**(details or {}), **({"requested_mode": requested} if unshown else {})} or None,
    )


class AuditTrail:
    """A pipeline observer that stores one consent record per elicitation in `sink`.

    Add it last (`pipeline.observers.append(trail)`), so the record shows the answer that was
    sent. `client` names this application in every record; `person` who answers ("" if unknown);
    `details` facts added to every record (the gateway: which `mcpServers` entry asked).
    """

    name = "audit"

    def __init__(
        self,
        sink: AuditSink,
        *,
        client: ClientIdentity | None = None,
        person: str = "",
        on_write_error: OnWriteError = DEFAULT_ON_WRITE_ERROR,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        if on_write_error not in _ON_WRITE_ERROR:
            raise ConfigError(
                "on_write_error",
                f"on_write_error must be one of {', '.join(_ON_WRITE_ERROR)}, not {on_write_error!r}",
            )
        self.sink = sink
        self.client = client or ClientIdentity()
        self.person = person
        self.on_write_error: OnWriteError = on_write_error
        self.details = dict(details) if details else None  # added to every record (the gateway's upstream)

    async def __call__(self, e: Elicitation, outcome: Outcome) -> None:
        if outcome.action == "accept" and outcome.reason == URL_RECHECK_REASON:
            return  # an automatic re-check of a page already consented to: one hand-off, one record
        event = consent_event(e, outcome, client=self.client, person=self.person, details=self.details)
        try:
            await writer_for(self.sink).append(event)
        except Exception as exc:  # AuditWriteError, or a sink that broke in another way
            if self.on_write_error == "proceed":
                logger.error(
                    "the audit sink could not store a consent record; proceeding as configured: %s",
                    exc,
                    exc_info=not isinstance(exc, AuditWriteError),  # a traceback only for a broken sink
                )
                return
            raise OutcomeNotRecorded(self.on_write_error, "audit_write_failed", str(exc)) from exc

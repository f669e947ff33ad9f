"""One consent record per question the server kit asked, refused or gave up on (server side).

The record is built by the pure `core.consent.make_record` and stored by any `AuditSink`
(SQLite, JSON lines, PostgreSQL, memory). Sinks are synchronous: appends go
through the sink's one writer thread, which commits concurrent ones together (audit/writer.py).
When a sink cannot write, the tool gets `AuditWriteError` instead of the answer (fail closed),
unless `ElicitSettings.audit_fail_closed` is False, in which case the failure is logged.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Mapping
from typing import Any, Final

from mcp_elicit.audit.writer import writer_for
from mcp_elicit.core.consent import CallRef, ClientIdentity, ConsentEvent, ServerIdentity
from mcp_elicit.core.sensitive import FormVerdict, classify_schema
from mcp_elicit.errors import AuditWriteError
from mcp_elicit.server import sdk
from mcp_elicit.server.rounds import ElicitSettings

__all__ = ["IDENTITY_CACHE_SIZE", "VERDICT_CACHE_SIZE", "record"]

# Wire schemas whose secret-guard verdict is remembered for their records. `ask` hands the same
# schema object for every question of a form (it builds each form's wire schema once), so a
# record need not classify the form again; the cache holds the object, so an id is never reused.
VERDICT_CACHE_SIZE = 512
_verdicts: dict[int, tuple[Mapping[str, Any], FormVerdict]] = {}


def _verdict(schema: Mapping[str, Any] | None) -> FormVerdict | None:
    if schema is None:
        return None
    hit = _verdicts.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    verdict = classify_schema(schema)
    if len(_verdicts) >= VERDICT_CACHE_SIZE:
        _verdicts.clear()
    _verdicts[id(schema)] = (schema, verdict)
    return verdict


logger = logging.getLogger("mcp_elicit.server")


def _identities(ctx: Any) -> tuple[ServerIdentity, ClientIdentity, CallRef | None, str, str]:
    """(server, client, call, person, protocol revision) of the request behind `ctx`, worked out
    once per request: the questions of one tool call share its context object."""
    last = _last_request[0]
    if last is not None and last[0]() is ctx:
        return last[1]
    server, client, call, protocol = sdk.identities(ctx)
    ref = CallRef(method=call[0], request_id=call[1], name=call[2]) if call is not None else None
    parties = _parties.get((server, client))
    if parties is None:  # the same objects for a session's records: their texts are remembered
        if len(_parties) >= IDENTITY_CACHE_SIZE:
            _parties.clear()
        parties = _parties[(server, client)] = (ServerIdentity(*server), ClientIdentity(*client))
    found = (parties[0], parties[1], ref, sdk.access_subject(), protocol)
    with contextlib.suppress(TypeError):  # a context that takes no weak reference: each time
        _last_request[0] = (weakref.ref(ctx), found)
    return found


# The last request context seen and its identities. Held weakly, so a finished request is not
# kept alive by it; one tuple, replaced whole, so a thread never sees half of an update.
_last_request: list[
    tuple[weakref.ref[Any], tuple[ServerIdentity, ClientIdentity, CallRef | None, str, str]] | None
] = [None]

# (server, client) identity objects per (name, version) pairs; bounded like the verdicts.
IDENTITY_CACHE_SIZE: Final = 512
_parties: dict[tuple[tuple[str, str], tuple[str, str]], tuple[ServerIdentity, ClientIdentity]] = {}


async def record(
    ctx: Any,
    settings: ElicitSettings,
    action: str,
    decided_by: str,
    message: str,
    *,
    requested_schema: Mapping[str, Any] | None = None,
    content: Mapping[str, Any] | None = None,
    reason: str = "",
    latency_ms: float = 0.0,
    mode: str = "form",
    details: Mapping[str, Any] | None = None,
) -> None:
    """Record what came of one question: its `action`, who decided it and the question's
    `message`; `requested_schema` for a form (None for a hand-off or a refused query). `mode` is
    "form" or "url" for a question put to the person, "none" when nothing was shown (a decision
    made without asking, a form stopped before it was sent)."""
    sink = settings.audit
    if sink is None:
        return
    server, client, call, person, protocol = _identities(ctx)
    event = ConsentEvent(
        time=settings.clock(),
        side="server",
        mode=mode,  # type: ignore[arg-type]
        action=action,  # type: ignore[arg-type]
        decided_by=decided_by,  # type: ignore[arg-type]
        server=server,
        client=client,
        protocol_revision=protocol,
        person=person,
        message=message,
        requested_schema=requested_schema,
        reason=reason,
        latency_ms=latency_ms,
        call=call,
        content=content,
        details=details,
        form_verdict=_verdict(requested_schema) if mode != "url" else None,
    )
    try:
        await writer_for(sink).append(event)
    except AuditWriteError:
        if settings.audit_fail_closed:
            raise
        logger.exception("audit sink could not store a consent record; continuing (audit_fail_closed=False)")

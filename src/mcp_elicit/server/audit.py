"""One consent record per question the server kit asked, refused or gave up on (server side).

The record is built by the pure `core.consent.make_record` and stored by any `AuditSink`
(SQLite, JSON lines, PostgreSQL, memory). Sinks are synchronous: appends go
through the sink's one writer thread, which commits concurrent ones together (audit/writer.py).
When a sink cannot write, the tool gets `AuditWriteError` instead of the answer (fail closed),
unless `ElicitSettings.audit_fail_closed` is False, in which case the failure is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context

from mcp_elicit.audit.writer import writer_for
from mcp_elicit.core.consent import CallRef, ClientIdentity, ConsentEvent, ServerIdentity
from mcp_elicit.core.sensitive import FormVerdict, classify_schema
from mcp_elicit.errors import AuditWriteError
from mcp_elicit.server.rounds import ElicitSettings

__all__ = ["VERDICT_CACHE_SIZE", "record"]

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


def _identities(ctx: Context[Any, Any]) -> tuple[ServerIdentity, ClientIdentity, CallRef | None, str]:
    server = ServerIdentity()
    client = ClientIdentity()
    call: CallRef | None = None
    person = ""
    try:
        mcp_server = ctx.mcp_server
        server = ServerIdentity(name=mcp_server.name, version=getattr(mcp_server, "version", "") or "")
        rc = ctx.request_context
        params = rc.session.client_params
        if params is not None:
            client = ClientIdentity(name=params.client_info.name, version=params.client_info.version)
        target = (rc.params or {}).get("name") or (rc.params or {}).get("uri") or ""
        call = CallRef(method=rc.method, request_id=rc.request_id, name=str(target))
    except (ValueError, AttributeError):  # outside a request (a direct call in tests)
        pass
    token = get_access_token()
    if token is not None:
        person = str(getattr(token, "subject", None) or getattr(token, "client_id", "") or "")
    return server, client, call, person


async def record(
    ctx: Context[Any, Any],
    settings: ElicitSettings,
    *,
    action: str,
    decided_by: str,
    message: str,
    requested_schema: Mapping[str, Any] | None,
    content: Mapping[str, Any] | None = None,
    reason: str = "",
    latency_ms: float = 0.0,
    mode: str = "form",
) -> None:
    sink = settings.audit
    if sink is None:
        return
    server, client, call, person = _identities(ctx)
    event = ConsentEvent(
        time=settings.clock(),
        side="server",
        mode=mode,  # type: ignore[arg-type]
        action=action,  # type: ignore[arg-type]
        decided_by=decided_by,  # type: ignore[arg-type]
        server=server,
        client=client,
        protocol_revision=ctx.protocol_version or "",
        person=person,
        message=message,
        requested_schema=requested_schema,
        reason=reason,
        latency_ms=latency_ms,
        call=call,
        content=content,
        form_verdict=_verdict(requested_schema) if mode == "form" else None,
    )
    try:
        await writer_for(sink).append(event)
    except AuditWriteError:
        if settings.audit_fail_closed:
            raise
        logger.exception("audit sink could not store a consent record; continuing (audit_fail_closed=False)")

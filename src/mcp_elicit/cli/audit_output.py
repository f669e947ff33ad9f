"""What the `mcp-elicit audit` commands print: records and CSV rows made from a trail's text.

A trail holds text servers chose (names, versions, tools, reasons); the readers show it inert.
"""

from __future__ import annotations

import typing as _typing

__all__ = ["CSV_COLUMNS", "csv_row"]

CSV_COLUMNS = (
    "seq",
    "id",
    "time",
    "side",
    "protocol",
    "server",
    "server_version",
    "server_where",
    "client",
    "client_version",
    "person",
    "mode",
    "method",
    "request_id",
    "call_name",
    "fields",
    "url_host",
    "url_domain",
    "url_verdict",
    "action",
    "decided_by",
    "reason",
    "latency_ms",
    "message_sha256",
    "prev_hash",
    "hash",
)


def csv_row(r: dict[str, _typing.Any]) -> list[_typing.Any]:
    server, client = r.get("server") or {}, r.get("client") or {}
    call, url = r.get("call") or {}, r.get("url") or {}
    fields = ";".join(f"{f.get('name')}:{f.get('type')}" for f in r.get("fields") or [])
    return [
        r.get("seq"),
        r.get("id"),
        r.get("time"),
        r.get("side"),
        r.get("protocol"),
        server.get("name"),
        server.get("version"),
        server.get("where"),
        client.get("name"),
        client.get("version"),
        r.get("person"),
        r.get("mode"),
        call.get("method"),
        call.get("request_id"),
        call.get("name"),
        fields,
        url.get("host"),
        url.get("domain"),
        url.get("verdict"),
        r.get("action"),
        r.get("decided_by"),
        r.get("reason"),
        r.get("latency_ms"),
        r.get("message_sha256"),
        r.get("prev_hash"),
        r.get("hash"),
    ]

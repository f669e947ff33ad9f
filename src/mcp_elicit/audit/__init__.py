"""Audit sinks: where consent records are stored (SQLite by default, PostgreSQL, JSON Lines).

`MemoryAuditSink` for tests lives in mcp_elicit.testing. The PostgreSQL sink is imported on first
use so that psycopg loads only when it is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_elicit.audit.base import AuditSink
from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.audit.sqlite import SqliteAuditSink

if TYPE_CHECKING:
    from mcp_elicit.audit.postgres import PostgresAuditSink

__all__ = ["AuditSink", "JsonlAuditSink", "PostgresAuditSink", "SqliteAuditSink"]


def __getattr__(name: str) -> Any:
    if name == "PostgresAuditSink":
        from mcp_elicit.audit.postgres import PostgresAuditSink

        return PostgresAuditSink
    raise AttributeError(name)

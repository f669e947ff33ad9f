"""Sink fixtures: every sink kind, each on fresh storage (a temp file, a fresh PostgreSQL table)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_elicit.core.consent import CallRef, ConsentEvent, ServerIdentity

POSTGRES_ENV = "MCP_ELICIT_TEST_POSTGRES"
POSTGRES_DEFAULT = "postgresql://postgres@127.0.0.1:5432/test"


def postgres_url() -> str | None:
    """The test database: $MCP_ELICIT_TEST_POSTGRES, else the default if a server answers there."""
    url = os.environ.get(POSTGRES_ENV)
    if url:
        return url  # named explicitly: if it is down, the tests fail rather than skip
    import psycopg

    try:
        psycopg.connect(POSTGRES_DEFAULT, connect_timeout=2).close()
    except psycopg.Error:
        return None
    return POSTGRES_DEFAULT


_POSTGRES = postgres_url()
needs_postgres = pytest.mark.skipif(
    _POSTGRES is None,
    reason=f"no PostgreSQL: {POSTGRES_ENV} is unset and nothing answers at {POSTGRES_DEFAULT}",
)


@pytest.fixture
def pg_url() -> str:
    if _POSTGRES is None:
        pytest.skip(f"no PostgreSQL: {POSTGRES_ENV} is unset and nothing answers at {POSTGRES_DEFAULT}")
    return _POSTGRES


@pytest.fixture
def pg_table(pg_url: str) -> Iterator[str]:
    """A unique table name, dropped after the test."""
    import psycopg
    from psycopg import sql

    table = f"audit_test_{uuid.uuid4().hex[:12]}"
    yield table
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {t}").format(t=sql.Identifier(table)))


def make_event(i: int = 0, **changes: Any) -> ConsentEvent:
    fields: dict[str, Any] = {
        "time": 1_800_000_000.0 + i,
        "side": "client",
        "mode": "form",
        "action": "accept",
        "decided_by": "person",
        "server": ServerIdentity("deployer", "1.0", "uvx deployer"),
        "message": f"question {i}",
        "requested_schema": {"type": "object", "properties": {"target": {"type": "string"}}},
        "content": {"target": "prod"},
        "call": CallRef("tools/call", i, "deploy"),
    }
    fields.update(changes)
    return ConsentEvent(**fields)


SINK_KINDS = [
    "memory",
    "sqlite",
    "jsonl",
    pytest.param("postgres", marks=[pytest.mark.postgres, needs_postgres]),
]


@pytest.fixture(params=SINK_KINDS)
def sink_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A function that opens (another handle on) the same fresh store of one kind."""
    kind = request.param
    opened: list[Any] = []
    table = f"audit_test_{uuid.uuid4().hex[:12]}"

    def open_sink(level: str = "metadata") -> Any:
        if kind == "memory":
            from mcp_elicit.testing import MemoryAuditSink

            sink: Any = opened[0] if opened else MemoryAuditSink(level=level)  # type: ignore[arg-type]
            sink.level = level
        elif kind == "sqlite":
            from mcp_elicit.audit.sqlite import SqliteAuditSink

            sink = SqliteAuditSink(tmp_path / "audit.sqlite3", level=level)  # type: ignore[arg-type]
        elif kind == "jsonl":
            from mcp_elicit.audit.jsonl import JsonlAuditSink

            sink = JsonlAuditSink(tmp_path / "audit.jsonl", level=level)  # type: ignore[arg-type]
        else:
            from mcp_elicit.audit.postgres import PostgresAuditSink

            assert _POSTGRES is not None
            sink = PostgresAuditSink(_POSTGRES, table=table, level=level)  # type: ignore[arg-type]
        opened.append(sink)
        return sink

    open_sink.kind = kind  # type: ignore[attr-defined]
    yield open_sink
    for sink in opened:
        sink.close()
    if kind == "postgres":
        from mcp_elicit.audit.postgres import PostgresAuditSink

        assert _POSTGRES is not None
        cleanup = PostgresAuditSink(_POSTGRES, table=table, create=False)
        cleanup.drop()
        cleanup.close()

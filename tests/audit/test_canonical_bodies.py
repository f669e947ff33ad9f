"""A stored body must be exactly the canonical text of what was hashed, on every sink.

The attack: rewrite a body into JSON that parses to the hashed values for one reader but not for
another, e.g. a duplicated key put in front (``{"action":"decline", ...}``): a first-wins reader
sees ``decline`` while the hash, computed over the last-wins parse, still matches.
"""

from __future__ import annotations

import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.audit.sqlite import TABLE, SqliteAuditSink
from mcp_elicit.core.chain import ChainVerifier

from .conftest import make_event, needs_postgres


def duplicated_key(body: str) -> str:
    return '{"action":"decline",' + body[1:]


def found(sink: Any) -> list[tuple[int, int | None, str]]:
    return [(b.index, b.seq, b.kind) for b in sink.verify().breaks]


def test_sqlite_a_body_with_a_duplicated_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append_many([make_event(i) for i in range(3)])
    conn = sqlite3.connect(path)
    (body,) = conn.execute(f"SELECT body FROM {TABLE} WHERE seq = 2").fetchone()
    conn.execute(f"UPDATE {TABLE} SET body = ? WHERE seq = 2", (duplicated_key(body),))
    conn.commit()
    conn.close()
    with SqliteAuditSink(path, readonly=True) as sink:
        assert found(sink) == [(1, 2, "non_canonical")]


def test_jsonl_a_line_with_a_duplicated_key_or_extra_spaces_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with JsonlAuditSink(path) as sink:
        sink.append_many([make_event(i) for i in range(3)])
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] = duplicated_key(lines[0])
    lines[2] = lines[2].replace(",", ", ", 1)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with JsonlAuditSink(path) as sink:
        assert found(sink) == [(0, 1, "non_canonical"), (2, 3, "non_canonical")]


@pytest.fixture
def pg_sink(pg_url: str) -> Iterator[Any]:
    from mcp_elicit.audit.postgres import PostgresAuditSink

    sink = PostgresAuditSink(pg_url, table=f"audit_test_{uuid.uuid4().hex[:12]}")
    yield sink
    sink.drop()
    sink.close()


@pytest.mark.postgres
@needs_postgres
def test_postgres_a_body_with_a_duplicated_key_is_refused(pg_sink: Any, pg_url: str) -> None:
    import psycopg
    from psycopg import sql

    pg_sink.append_many([make_event(i) for i in range(3)])
    table = sql.Identifier(pg_sink.table)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute(sql.SQL("SELECT body FROM {t} WHERE seq = 3").format(t=table)).fetchone()
        assert row is not None
        conn.execute(
            sql.SQL("UPDATE {t} SET body = %s WHERE seq = 3").format(t=table), (duplicated_key(row[0]),)
        )
    assert found(pg_sink) == [(2, 3, "non_canonical")]


@given(st.sampled_from(["action", "seq", "id", "person", "time"]), st.text(max_size=8))
def test_any_key_given_twice_is_non_canonical(key: str, value: str) -> None:
    with tempfile.TemporaryDirectory() as folder, SqliteAuditSink(Path(folder) / "trail.db") as sink:
        (record,) = sink.append_many([make_event(0)])
    from mcp_elicit.core.consent import canonical_json

    body = canonical_json(record).decode("utf-8")
    verifier = ChainVerifier()
    verifier.feed_text('{"' + key + '":' + canonical_json(value).decode("utf-8") + "," + body[1:])
    assert [b.kind for b in verifier.finish().breaks] == ["non_canonical"]

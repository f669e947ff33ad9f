"""The PostgreSQL sink against the machine's real server: tamper evidence via SQL, shared writers."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from mcp_elicit.audit.base import row_of
from mcp_elicit.core.consent import record_hash
from mcp_elicit.errors import AuditReadError, AuditWriteError

from .conftest import make_event

pytestmark = pytest.mark.postgres

psycopg = pytest.importorskip("psycopg")
from psycopg import sql  # noqa: E402

from mcp_elicit.audit.postgres import PostgresAuditSink  # noqa: E402


@pytest.fixture
def sink(pg_url: str, pg_table: str) -> Any:
    s = PostgresAuditSink(pg_url, table=pg_table)
    s.append_many([make_event(i) for i in range(5)])
    yield s
    s.close()


def raw(pg_url: str, statement: str, table: str, *params: Any) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL(statement).format(t=sql.Identifier(table)), params)


def found(s: PostgresAuditSink, expected_head: str | None = None) -> list[tuple[int, int | None, str]]:
    return [(b.index, b.seq, b.kind) for b in s.verify(expected_head).breaks]


def test_an_intact_table_verifies(sink: PostgresAuditSink) -> None:
    assert found(sink) == []


def test_a_body_edited_with_sql_is_a_hash_mismatch(
    sink: PostgresAuditSink, pg_url: str, pg_table: str
) -> None:
    raw(pg_url, "UPDATE {t} SET body = replace(body, '\"person\"', '\"script\"') WHERE seq = 2", pg_table)
    assert found(sink) == [(1, 2, "hash_mismatch")]


def test_an_edited_column_is_a_column_mismatch(sink: PostgresAuditSink, pg_url: str, pg_table: str) -> None:
    raw(pg_url, "UPDATE {t} SET server = 'someone-else' WHERE seq = 4", pg_table)
    assert found(sink) == [(3, 4, "column_mismatch")]


def test_a_deleted_row_is_reported_after_the_gap(sink: PostgresAuditSink, pg_url: str, pg_table: str) -> None:
    raw(pg_url, "DELETE FROM {t} WHERE seq = 2", pg_table)
    assert found(sink) == [(1, 3, "deleted")]


def test_a_forged_row_is_a_broken_link(sink: PostgresAuditSink, pg_url: str, pg_table: str) -> None:
    last = list(sink.iter_records())[-1]
    forged = dict(last, seq=6, id="forged", prev_hash="e" * 64)
    forged["hash"] = record_hash(forged)
    raw(pg_url, "INSERT INTO {t} VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", pg_table, *row_of(forged))
    assert found(sink) == [(5, 6, "broken_link")]


def test_a_cut_tail_is_caught_with_the_anchored_head(
    sink: PostgresAuditSink, pg_url: str, pg_table: str
) -> None:
    head = sink.verify().head_hash
    raw(pg_url, "DELETE FROM {t} WHERE seq = 5", pg_table)
    assert found(sink) == []
    assert found(sink, head) == [(4, 4, "head_mismatch")]


def test_writers_on_separate_connections_never_fork_the_chain(pg_url: str, pg_table: str) -> None:
    handles = [PostgresAuditSink(pg_url, table=pg_table) for _ in range(4)]
    errors: list[BaseException] = []

    def write(s: PostgresAuditSink, worker: int) -> None:
        try:
            for i in range(15):
                s.append(make_event(worker * 100 + i))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(h, n)) for n, h in enumerate(handles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    report = handles[0].verify()
    assert report.ok
    assert report.count == 60
    for h in handles:
        h.close()


def test_a_failed_batch_writes_nothing(sink: PostgresAuditSink) -> None:
    with pytest.raises(AuditWriteError) as info:
        sink.append_many([make_event(10, record_id="same"), make_event(11, record_id="same")])
    assert info.value.sink == "postgres"
    assert sink.verify().count == 5
    assert sink.append(make_event(12))["seq"] == 6


def test_an_unreachable_server_fails_closed_at_open() -> None:
    with pytest.raises(AuditWriteError) as info:
        PostgresAuditSink("postgresql://postgres@127.0.0.1:1/test")
    assert info.value.sink == "postgres"


def test_reading_a_missing_table_is_a_read_error(pg_url: str, pg_table: str) -> None:
    s = PostgresAuditSink(pg_url, table=pg_table, create=False)
    with pytest.raises(AuditReadError) as info:
        list(s.iter_records())
    assert info.value.target == pg_table
    assert "\n" not in str(info.value)  # the server's message, not psycopg's statement and caret lines
    s.close()


@pytest.mark.parametrize("table", ["drop table x", "a;b", "1abc", "x" * 64, ""])
def test_a_table_name_must_be_a_plain_identifier(table: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - a caller bug, no evidence fields
        PostgresAuditSink("postgresql://127.0.0.1:1/x", table=table)


def test_a_search_path_the_conninfo_sets_is_where_the_trail_is_written_and_verified(
    pg_url: str, pg_table: str
) -> None:
    schema = f"audit_schema_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {s}").format(s=sql.Identifier(schema)))
    in_schema = psycopg.conninfo.make_conninfo(pg_url, options=f"-c search_path={schema}")
    try:
        with PostgresAuditSink(in_schema, table=pg_table) as s:
            s.append_many([make_event(i) for i in range(2)])
        with psycopg.connect(pg_url, autocommit=True) as conn:
            where = conn.execute(
                "SELECT table_schema FROM information_schema.tables WHERE table_name = %s", (pg_table,)
            ).fetchall()
            assert where == [(schema,)]
            conn.execute(
                sql.SQL("UPDATE {s}.{t} SET action = 'decline' WHERE seq = 2").format(
                    s=sql.Identifier(schema), t=sql.Identifier(pg_table)
                )
            )
        with PostgresAuditSink(in_schema, table=pg_table, create=False) as s:
            assert found(s) == [(1, 2, "column_mismatch")]
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {s} CASCADE").format(s=sql.Identifier(schema)))

"""DuckDB's late materialization: a LIMIT (with or without OFFSET, or over an ORDER BY) found by row
ids over a narrow scan, then the rows fetched by a second scan of the same table. The estimate
follows what DuckDB reads, checked against its own profile of the run."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from mcp_elicit.apps.data import open_engine
from mcp_elicit.apps.data.assess import assess
from mcp_elicit.apps.data.catalog import DataConfig
from mcp_elicit.apps.data.server import confirmation_message

SHAPES = (
    "SELECT * FROM events LIMIT 10 OFFSET 20",
    "SELECT * FROM events LIMIT 100",
    "SELECT * FROM events LIMIT 100 OFFSET 122870",  # the page straddles two row groups
    "SELECT * FROM events LIMIT 10 OFFSET 500000",
    "SELECT * FROM events LIMIT 20000 OFFSET 120000",
    "SELECT * FROM events WHERE kind = 'view' LIMIT 10 OFFSET 20",
    "SELECT * FROM events ORDER BY id % 500000 LIMIT 6",  # row ids in three row groups far apart
    "SELECT * FROM events ORDER BY customer_id LIMIT 3",
    "SELECT * FROM events ORDER BY id % 500000 LIMIT 3 OFFSET 3",
    "SELECT name FROM customers ORDER BY id LIMIT 3",
)


def _profiled(sample_db: Path, sql: str) -> tuple[int, str]:
    """The rows DuckDB scanned running `sql`, and its plan's text."""
    with duckdb.connect(str(sample_db), read_only=True, config={"enable_external_access": False}) as conn:
        plan = conn.execute(f"EXPLAIN {sql}").fetchall()[0][1]
        conn.execute("PRAGMA enable_profiling = 'no_output'")
        conn.execute(sql).fetchall()
        profile = json.loads(conn.get_profiling_information(format="json"))
    return int(profile["query"]["total_rows_scanned"]), str(plan)


def _estimated_and_scanned(path: Path, shapes: tuple[str, ...]) -> list[tuple[str, float, int, str]]:
    """(sql, the guard's estimated total, rows DuckDB scanned, its plan's text) for each shape."""
    engine = open_engine("duckdb", str(path))
    try:
        estimates = {sql: engine.estimate(sql).total for sql in shapes}
    finally:
        engine.close()
    return [(sql, total, *_profiled(path, sql)) for sql, total in estimates.items()]


def test_a_late_materialized_duckdb_query_is_estimated_at_no_fewer_rows_than_it_scans(
    sample_db: Path,
) -> None:
    for sql, total, scanned, plan in _estimated_and_scanned(sample_db, SHAPES):
        if "LIMIT" in sql and "ORDER" not in sql and "WHERE" not in sql:
            assert "rowid = rowid" in plan, sql  # the shape under test: a join on row ids
        assert total >= scanned, sql


def test_a_cheap_page_of_a_large_duckdb_table_runs_without_asking(sample_db: Path) -> None:
    engine = open_engine("duckdb", str(sample_db))
    try:
        for sql in ("SELECT * FROM events LIMIT 10 OFFSET 20", "SELECT * FROM events LIMIT 100"):
            seen = assess(engine, DataConfig(), sql, can_ask=True)
            assert seen.estimate is not None
            assert seen.estimate.total < 300_000, sql  # two row groups at most, not 1,200,000
            assert seen.estimate.processed <= seen.estimate.total, sql
            assert seen.decision.kind == "run", sql
        far = engine.estimate("SELECT * FROM events ORDER BY id % 500000 LIMIT 6")
        assert far.total > 1_200_000  # the sort reads it all, and the fetch three row groups more
    finally:
        engine.close()


def test_a_table_read_twice_by_a_late_materialization_join_is_shown_once_at_most_its_rows(
    sample_db: Path,
) -> None:
    engine = open_engine("duckdb", str(sample_db))
    try:
        sql = "SELECT name FROM customers ORDER BY id LIMIT 3"
        seen = assess(engine, DataConfig(), sql, can_ask=True)
    finally:
        engine.close()
    assert seen.estimate is not None
    assert seen.estimate.largest == ("main.customers", 1000)
    assert seen.estimate.total >= 2000  # both reads count in the total
    message = confirmation_message(sql, seen.estimate, seen.thresholds.total, seen.decision)
    assert "main.customers, 1,000" in message


def test_a_page_of_a_table_with_deletes_not_yet_checkpointed_is_estimated_at_no_fewer_rows_than_it_scans(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deleted.duckdb"
    with duckdb.connect(str(path)) as conn:  # row ids with gaps: the deletes stay in the WAL
        conn.execute(
            "CREATE TABLE t AS SELECT range AS id, range % 7 AS a, 'x' || range AS b FROM range(400000)"
        )
        conn.execute("CHECKPOINT")
        conn.execute("PRAGMA disable_checkpoint_on_shutdown")
        conn.execute("SET checkpoint_threshold = '10GB'")
        conn.execute("DELETE FROM t WHERE id % 1000 <> 0")
    assert path.with_name("deleted.duckdb.wal").exists()
    shapes = ("SELECT * FROM t LIMIT 60 OFFSET 5", "SELECT * FROM t LIMIT 300 OFFSET 100")
    for sql, total, scanned, plan in _estimated_and_scanned(path, shapes):
        assert "rowid = rowid" in plan, sql
        assert total >= scanned, sql

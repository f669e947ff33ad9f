"""PostgreSQL index scans with a Filter, on the real server: the rows such a scan reads are those
its index condition finds, not the fewer that pass the filter after they are read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_elicit.apps.data import open_engine
from mcp_elicit.apps.data.assess import assess
from mcp_elicit.apps.data.catalog import config_from_mapping
from tests.apps.data.conftest import scratch_schema

# 100,000 readings, 100 sensors; a limit of 5,000 rows read.
READINGS = 100_000
CONFIG = config_from_mapping({"thresholds": {"postgres": 5_000}})


def _fill_readings(conn: Any, schema: str) -> None:
    conn.execute(f"CREATE TABLE {schema}.readings (id int PRIMARY KEY, sensor int, value float8)")
    conn.execute(
        f"INSERT INTO {schema}.readings SELECT g, g % 100, g / 7.0 FROM generate_series(1, {READINGS}) g"
    )
    conn.execute(f"CREATE TABLE {schema}.sensors (id int PRIMARY KEY, site text)")
    conn.execute(f"INSERT INTO {schema}.sensors SELECT g, 'site ' || g FROM generate_series(0, 99) g")
    conn.execute(f"CREATE INDEX ON {schema}.readings (sensor)")
    conn.execute(f"ANALYZE {schema}.readings")
    conn.execute(f"ANALYZE {schema}.sensors")


@pytest.fixture(scope="module")
def readings_dsn() -> Iterator[str]:
    with scratch_schema("mcp_elicit_index", _fill_readings) as (dsn, _):
        yield dsn


def _scans(dsn: str, sql: str) -> list[dict[str, Any]]:
    """Every node of the plan PostgreSQL makes for `sql` that reads `readings`."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        plan = conn.execute(f"EXPLAIN (FORMAT JSON) {sql}").fetchone()
    assert plan is not None
    tree = json.loads(plan[0]) if isinstance(plan[0], str) else plan[0]
    nodes, stack = [], [p["Plan"] for p in tree]
    while stack:
        node = stack.pop()
        stack.extend(node.get("Plans") or [])
        if node.get("Relation Name") == "readings":
            nodes.append(node)
    return nodes


def test_an_index_scan_with_a_filter_counts_the_rows_its_index_condition_finds(readings_dsn: str) -> None:
    query = "SELECT id FROM readings WHERE id < 8000 AND sensor = 3"
    (scan,) = _scans(readings_dsn, query)
    assert scan["Node Type"] in ("Index Scan", "Bitmap Heap Scan")  # the shape under test
    assert "Filter" in scan
    assert scan["Plan Rows"] < 1_000  # the planner's rows are those that pass: about 80
    engine = open_engine("postgres", readings_dsn)
    try:
        seen = assess(engine, CONFIG, query, can_ask=True)
    finally:
        engine.close()
    assert seen.estimate is not None
    (table,) = seen.estimate.tables
    assert seen.estimate.tables[table] >= 7_000  # the index finds ~8,000 rows, each read
    assert seen.decision.kind == "ask"


def test_an_index_lookup_with_a_filter_still_runs_unasked(readings_dsn: str) -> None:
    engine = open_engine("postgres", readings_dsn)
    try:
        seen = assess(engine, CONFIG, "SELECT value FROM readings WHERE id = 42 AND sensor = 3", can_ask=True)
    finally:
        engine.close()
    assert seen.estimate is not None
    assert seen.estimate.total <= 1
    assert seen.decision.kind == "run"


def test_an_index_scan_under_a_join_counts_more_than_the_rows_that_pass_its_filter(readings_dsn: str) -> None:
    # the inner scan's index condition names the outer row (`r.sensor = s.id`), so it cannot be
    # planned alone: its rows over the filter's share of the table count instead
    query = "SELECT r.id FROM sensors s JOIN readings r ON r.sensor = s.id WHERE s.id < 3 AND r.value < 100"
    engine = open_engine("postgres", readings_dsn)
    try:
        seen = assess(engine, CONFIG, query, can_ask=True)
    finally:
        engine.close()
    (scan,) = _scans(readings_dsn, query)
    assert scan["Node Type"] in ("Index Scan", "Bitmap Heap Scan")  # the shape under test
    assert "Filter" in scan
    assert scan["Plan Rows"] < 100  # per sensor: the ~7 of its 1,000 readings that pass
    assert seen.estimate is not None
    (table,) = [name for name in seen.estimate.tables if name.endswith(".readings")]
    # two sensors, 1,000 readings each found by the index and read
    assert 1_800 <= seen.estimate.tables[table] <= READINGS

"""A sampled query reads what its sample reads, not the rows the sample keeps: on the real DuckDB
file (which estimates a sampled scan at 0 rows) and the real PostgreSQL (a Bernoulli sample)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_elicit.apps.data import open_engine
from mcp_elicit.apps.data.assess import assess
from mcp_elicit.apps.data.catalog import DataConfig
from tests.apps.data.conftest import PG_EVENTS, Target

SAMPLE_EVENTS = 1_200_000  # rows of the sample database's `events`


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM events USING SAMPLE 100 ROWS",  # a reservoir: reads every row
        "SELECT * FROM events USING SAMPLE 10% (bernoulli)",
        "SELECT max(id) FROM events USING SAMPLE 90%",  # a system sample: whole vectors
        "SELECT kind FROM events TABLESAMPLE reservoir(50%)",
    ],
)
def test_a_duckdb_sample_counts_the_table_it_reads(sample_db: Path, sql: str) -> None:
    import duckdb

    engine = open_engine("duckdb", str(sample_db))
    try:
        seen = assess(engine, DataConfig(), sql, can_ask=True)
    finally:
        engine.close()
    # the engine's own settings: DuckDB refuses a second connection to a file open with others
    with duckdb.connect(str(sample_db), read_only=True, config={"enable_external_access": False}) as conn:
        plan = json.loads(conn.execute(f"EXPLAIN (FORMAT JSON) {sql}").fetchall()[0][1])
    assert "'Estimated Cardinality': '0'" in str(plan)  # DuckDB's own estimate: nothing
    assert seen.estimate is not None
    assert seen.estimate.tables["main.events"] >= SAMPLE_EVENTS
    assert seen.decision.kind == "ask"


def test_a_join_of_duckdb_samples_counts_the_pairs_it_compares(sample_db: Path) -> None:
    engine = open_engine("duckdb", str(sample_db))
    try:
        seen = assess(
            engine,
            DataConfig(),
            "SELECT count(*) FROM orders a TABLESAMPLE 99%, orders b TABLESAMPLE 99%",
            can_ask=True,
        )
        small = assess(engine, DataConfig(), "SELECT country FROM customers USING SAMPLE 10%", can_ask=True)
    finally:
        engine.close()
    assert seen.estimate is not None
    assert seen.estimate.processed >= 20_000_000  # 5,000 x 5,000 pairs, not 0
    assert seen.decision.kind == "ask"
    assert small.decision.kind == "run"  # a sample of a small table still runs unasked


def test_a_postgres_bernoulli_sample_counts_the_whole_relation(target: Target) -> None:
    if target.engine != "postgres":
        pytest.skip("PostgreSQL's sample scan")
    engine = open_engine(target.engine, target.dsn)
    try:
        sampled = assess(
            engine, target.config, "SELECT count(*) FROM events TABLESAMPLE BERNOULLI (10)", can_ask=True
        )
        system = engine.estimate("SELECT count(*) FROM events TABLESAMPLE SYSTEM (10)")
    finally:
        engine.close()
    assert sampled.estimate is not None
    assert sampled.estimate.tables[f"{target.schema}.events"] >= PG_EVENTS  # every page is read
    assert sampled.decision.kind == "ask"  # over the tests' PostgreSQL limit of 10,000
    assert system.tables[f"{target.schema}.events"] < PG_EVENTS  # a system sample reads its pages only

"""Each engine's own estimate and catalog, on the real DuckDB file and the real PostgreSQL."""

from __future__ import annotations

import pytest

from mcp_elicit.apps.data import open_engine
from mcp_elicit.apps.data.duckdb import plan_estimate
from mcp_elicit.apps.data.trino import TrinoEngine
from mcp_elicit.errors import ConfigError, DataEngineError
from tests.apps.data.conftest import Target


def test_a_join_reports_each_table_the_engine_plans_to_read(target: Target) -> None:
    engine = open_engine(target.engine, target.dsn)
    try:
        estimate = engine.estimate(
            "SELECT c.country, count(*) FROM events e JOIN customers c ON c.id = e.customer_id GROUP BY 1"
        )
        events, customers = f"{target.schema}.events", f"{target.schema}.customers"
        assert set(estimate.tables) == {events, customers}
        assert estimate.largest is not None
        assert estimate.largest[0] == events
        assert estimate.total == estimate.tables[events] + estimate.tables[customers]
    finally:
        engine.close()


def test_column_comments_come_back_with_the_tables(target: Target) -> None:
    engine = open_engine(target.engine, target.dsn)
    try:
        tables = {t.qualified: t for t in engine.tables()}
        customers = tables[f"{target.schema}.customers"]
        comments = {c.name: c.comment for c in customers.columns}
        assert comments["email"] == "pii: contact address"
        assert comments["segment"] == "non-pii: marketing segment"
    finally:
        engine.close()


def test_an_engine_that_cannot_plan_says_so(target: Target) -> None:
    engine = open_engine(target.engine, target.dsn)
    try:
        with pytest.raises(DataEngineError) as caught:
            engine.estimate("SELECT * FROM no_such_table")
        assert caught.value.engine == target.engine
    finally:
        engine.close()


def test_duckdb_quoted_catalog_names_are_read() -> None:
    plan = [
        {
            "name": "SEQ_SCAN",
            "children": [],
            "extra_info": {"Table": '"sample".main.t', "Estimated Cardinality": "5"},
        }
    ]
    assert dict(plan_estimate(plan).tables) == {"main.t": 5.0}


def test_bad_engine_choices_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        open_engine("oracle")
    with pytest.raises(ConfigError):
        open_engine("postgres", None)
    with pytest.raises(DataEngineError):
        TrinoEngine("postgresql://localhost/db")

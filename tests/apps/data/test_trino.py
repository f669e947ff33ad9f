"""The Trino adapter's estimate, against the output Trino documents for EXPLAIN (TYPE IO, FORMAT JSON).

Source of the fixture: Trino's documentation, "EXPLAIN" > "EXPLAIN (TYPE IO)"
(https://trino.io/docs/current/sql/explain.html; docs/src/main/sphinx/sql/explain.md in
trinodb/trino). The page prints the JSON with unquoted keys; the server sends real JSON, so the
fixture is the same document with its keys quoted and nothing else changed. The "NaN" strings are
how Trino reports an unknown estimate (the same page's top-level `estimate`).

A live contract test runs when MCP_ELICIT_TEST_TRINO names a server
(trino://user@host:port/catalog/schema).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcp_elicit.apps.data.trino import TrinoEngine, as_create_view, io_estimate
from mcp_elicit.errors import DataEngineError, QueryRefused

DOCS_EXAMPLE = Path(__file__).parent / "fixtures" / "trino_explain_io_docs.json"
TRINO_ENV = "MCP_ELICIT_TEST_TRINO"


def docs_plan() -> dict[str, Any]:
    plan = json.loads(DOCS_EXAMPLE.read_text())
    assert isinstance(plan, dict)
    return plan


def test_the_documented_io_plan_gives_each_input_tables_row_estimate() -> None:
    estimate = io_estimate(docs_plan())
    assert dict(estimate.tables) == {"tpch.test_orders": 2.0}
    assert estimate.total == 2.0
    assert estimate.largest == ("tpch.test_orders", 2.0)


def test_the_plan_is_read_from_its_json_text_too() -> None:
    assert io_estimate(DOCS_EXAMPLE.read_text()).total == 2.0


def test_several_inputs_report_the_largest_and_the_total() -> None:
    plan = docs_plan()
    other = copy.deepcopy(plan["inputTableColumnInfos"][0])
    other["table"]["schemaTable"] = {"schema": "tpch", "table": "lineitem"}
    other["estimate"]["outputRowCount"] = 6_001_215.0
    plan["inputTableColumnInfos"].append(other)
    estimate = io_estimate(plan)
    assert estimate.largest == ("tpch.lineitem", 6_001_215.0)
    assert estimate.total == 6_001_217.0


def test_an_unknown_nan_estimate_is_no_estimate_not_zero() -> None:
    plan = docs_plan()
    plan["inputTableColumnInfos"][0]["estimate"]["outputRowCount"] = "NaN"
    with pytest.raises(DataEngineError) as caught:
        io_estimate(plan)
    assert caught.value.engine == "trino"


@pytest.mark.parametrize("broken", ["not json", "{}", '{"inputTableColumnInfos": [{"table": {}}]}'])
def test_malformed_output_is_an_engine_error(broken: str) -> None:
    with pytest.raises(DataEngineError):
        io_estimate(broken)


@pytest.mark.skipif(not os.environ.get(TRINO_ENV), reason=f"{TRINO_ENV} is not set (no Trino server here)")
def test_a_live_trino_plans_lists_and_runs_read_only() -> None:
    engine = TrinoEngine(os.environ[TRINO_ENV])
    try:
        tables = engine.tables()
        assert tables
        first = tables[0]
        estimate = engine.estimate(f'SELECT * FROM "{first.schema}"."{first.name}"')
        assert first.qualified in estimate.tables
        result = engine.run(f'SELECT * FROM "{first.schema}"."{first.name}"', 1)
        assert len(result.rows) <= 1
    finally:
        engine.close()


class _CatalogOnly(TrinoEngine):
    """The Trino engine over a stand-in for a Trino server (none can run here): its
    `information_schema` rows as Trino lays them out (a view's columns are listed like a table's,
    with no comments; `views.view_definition` is the view's query alone) and an IO plan shaped as
    Trino documents it, listing the base tables a query reads."""

    def __init__(self, views: dict[str, str]) -> None:
        self.catalog, self.default_schema = "hive", "shop"
        self._views = views

    def _fetch(self, sql: str, params: tuple[Any, ...] | None = None) -> list[Any]:
        if sql == self.columns_sql:
            rows = [
                ("shop", "customers", "id", "integer", ""),
                ("shop", "customers", "email", "varchar", "pii: contact address"),
                ("shop", "customers", "segment", "varchar", ""),
            ]
            for view, text in self._views.items():
                names = [c.strip().split()[-1] for c in text.split(" FROM ")[0][len("SELECT ") :].split(",")]
                rows += [("shop", view, name, "varchar", "") for name in names]
            return rows
        if sql == self.views_sql:
            return [("shop", view, text) for view, text in self._views.items()]
        assert sql.startswith(self.explain)
        plan = docs_plan()
        plan["inputTableColumnInfos"][0]["table"]["schemaTable"] = {"schema": "shop", "table": "customers"}
        return [(json.dumps(plan),)]


def test_a_trino_view_carries_the_tags_of_every_column_it_reads() -> None:
    from mcp_elicit.apps.data.assess import assess
    from mcp_elicit.apps.data.catalog import DataConfig

    engine = _CatalogOnly(
        {
            "contacts": "SELECT id, email AS address FROM customers",
            "contact_ids": "SELECT id FROM contacts WHERE address LIKE 'a%'",  # a view of a view
            "segments": "SELECT segment FROM customers",
            "elsewhere": "SELECT ssn FROM other.staff",  # outside the served schema: not followed
        }
    )
    names = {t.name for t in engine.tables()}
    assert "elsewhere" not in names  # a view the guard cannot follow is not served
    for name in ("contacts", "contact_ids"):
        decision = assess(engine, DataConfig(), f"SELECT * FROM {name}", can_ask=True).decision
        assert decision.kind == "ask", name
        assert decision.pii, name
    assert assess(engine, DataConfig(), "SELECT * FROM segments", can_ask=True).decision.kind == "run"
    with pytest.raises(QueryRefused):
        assess(engine, DataConfig(), "SELECT * FROM elsewhere", can_ask=True)


def test_a_full_create_view_text_is_taken_as_it_is() -> None:
    text = "CREATE VIEW shop.v AS SELECT 1 AS one"
    assert as_create_view("shop", "v", text) == text
    assert as_create_view("s", 'we"ird', "SELECT 1") == 'CREATE VIEW "s"."we""ird" AS SELECT 1'


def test_the_query_output_estimate_is_what_the_plan_processes_and_unknown_adds_nothing() -> None:
    plan = docs_plan()
    assert io_estimate(plan).processed == 0.0  # the documented top-level estimate is "NaN"
    plan["estimate"]["outputRowCount"] = 4_000_000.0
    estimate = io_estimate(plan)
    assert (estimate.total, estimate.processed, estimate.multiplied) == (2.0, 4_000_000.0, True)

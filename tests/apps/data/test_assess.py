"""The guard's look at a query: the catalog snapshot is reused within its TTL and refreshed at once
when a query names a table it does not know yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_elicit.apps.data.assess import CatalogCache, assess
from mcp_elicit.apps.data.catalog import DataConfig
from mcp_elicit.apps.data.duckdb import DuckDBEngine
from mcp_elicit.errors import QueryRefused
from mcp_elicit.testing import ManualClock
from tests.apps.data.stories import CountingEngine


class GrowingCatalog(CountingEngine):
    """The sample engine, whose catalog shows only `customers` until `grow()` (a table appearing)."""

    reads: int = 0
    grown: bool = False

    def tables(self) -> Any:
        self.reads += 1
        tables = self.inner.tables()
        return tables if self.grown else tuple(t for t in tables if t.name == "customers")


@pytest.fixture
def engine(sample_db: Path) -> GrowingCatalog:
    return GrowingCatalog(DuckDBEngine(str(sample_db)))


def test_the_catalog_is_read_once_per_ttl(engine: GrowingCatalog) -> None:
    clock = ManualClock(100.0)
    cache = CatalogCache(engine, 30.0, clock)
    for _ in range(3):
        assess(engine, DataConfig(), "SELECT id FROM customers", can_ask=True, catalog=cache)
    assert engine.reads == 1
    clock.advance(31)
    assess(engine, DataConfig(), "SELECT id FROM customers", can_ask=True, catalog=cache)
    assert engine.reads == 2


def test_an_unknown_table_refreshes_the_snapshot_before_refusing(engine: GrowingCatalog) -> None:
    cache = CatalogCache(engine, 30.0, ManualClock(0.0))
    assess(engine, DataConfig(), "SELECT id FROM customers", can_ask=True, catalog=cache)
    with pytest.raises(QueryRefused) as caught:
        assess(engine, DataConfig(), "SELECT kind FROM events", can_ask=True, catalog=cache)
    assert caught.value.reason == "unknown_column"
    engine.grown = True
    seen = assess(engine, DataConfig(), "SELECT kind FROM events", can_ask=True, catalog=cache)
    assert seen.decision.kind == "ask"  # 1.2 million rows: over the default threshold
    assert engine.reads == 3


def test_a_function_made_after_the_snapshot_is_seen_before_the_query_is_planned(
    postgres_dsn: tuple[str, str],
) -> None:
    import psycopg

    from mcp_elicit.apps.data import open_engine

    dsn, schema = postgres_dsn
    engine = CountingEngine(open_engine("postgres", dsn))
    cache = CatalogCache(engine, 30.0, ManualClock(0.0))
    sql = "SELECT reverse(id) FROM customers"  # no built-in reverse takes an integer
    try:
        assert (
            assess(engine, DataConfig(), sql, can_ask=True, catalog=cache).decision.category == "no_estimate"
        )
        with psycopg.connect(dsn.split("?")[0], autocommit=True) as conn:
            conn.execute(
                f"CREATE FUNCTION {schema}.reverse(integer) RETURNS text LANGUAGE sql"
                f" AS $$SELECT email FROM {schema}.customers WHERE id = $1$$"
            )
        planned = len(engine.planned)
        with pytest.raises(QueryRefused) as refused:  # the snapshot is 0 s old: within its 30 s
            assess(engine, DataConfig(), sql, can_ask=True, catalog=cache)
        assert refused.value.reason == "opaque_source"
        assert len(engine.planned) == planned
    finally:
        engine.close()
        with psycopg.connect(dsn.split("?")[0], autocommit=True) as conn:
            conn.execute(f"DROP FUNCTION IF EXISTS {schema}.reverse(integer)")

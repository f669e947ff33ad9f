"""Trino through the official `trino` client; estimates from ``EXPLAIN (TYPE IO, FORMAT JSON)``.

The IO plan lists every input table with its own estimate (``inputTableColumnInfos[].estimate.
outputRowCount``); unknown estimates are the string "NaN", which counts as no estimate (the guard
then fails closed by default). The layout is the one in Trino's documentation, "EXPLAIN (TYPE
IO)" (docs/src/main/sphinx/sql/explain.md in trinodb/trino), which tests/apps/data/test_trino.py
checks against. Trino's access control is the read-only barrier at the engine: give the server
a user that may only read.

Views: `information_schema.columns` lists a view's columns like a table's, without the comments
of the columns it reads, so each view's lineage is worked out from its query text
(`information_schema.views.view_definition`) as for DuckDB (`with_view_reads`); a view the guard
cannot follow (a table outside the served schema, a name it cannot resolve, SQL it cannot parse)
is left out of the catalog, and a query naming it is refused.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any
from urllib.parse import urlsplit

from mcp_elicit.apps.data.engine import CatalogEngine, QueryResult, TableInfo, with_view_reads
from mcp_elicit.apps.data.guard import Estimate
from mcp_elicit.errors import DataEngineError

__all__ = ["TrinoEngine", "as_create_view", "io_estimate"]


def as_create_view(schema: str, view: str, text: str) -> str:
    """A `CREATE VIEW` text for a view's definition: Trino's `view_definition` is the query alone."""
    if text.lstrip()[:6].upper() == "CREATE":
        return text
    name = ".".join('"' + part.replace('"', '""') + '"' for part in (schema, view))
    return f"CREATE VIEW {name} AS {text}"


def _rows(estimate: Any) -> float | None:
    value = estimate.get("outputRowCount") if isinstance(estimate, dict) else None
    try:
        rows = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return rows if math.isfinite(rows) and rows >= 0 else None


def io_estimate(plan: Any) -> Estimate:
    """Per-table rows from an IO plan (a dict, or its JSON text), and the query's output rows as
    the rows processed; DataEngineError when any input table has no usable estimate, since a
    partial sum would understate the cost."""
    if isinstance(plan, str):
        try:
            plan = json.loads(plan)
        except ValueError as exc:
            raise DataEngineError("trino", f"EXPLAIN (TYPE IO) output is not JSON: {exc}") from None
    inputs = plan.get("inputTableColumnInfos") if isinstance(plan, dict) else None
    if not isinstance(inputs, list):
        raise DataEngineError("trino", "EXPLAIN (TYPE IO) output has no inputTableColumnInfos")
    tables: dict[str, float] = {}
    for item in inputs:
        table = item.get("table") if isinstance(item, dict) else None
        names = table.get("schemaTable") if isinstance(table, dict) else None
        if not isinstance(names, dict):
            raise DataEngineError("trino", "an input table without schemaTable")
        key = f"{names.get('schema')}.{names.get('table')}"
        rows = _rows(item.get("estimate"))
        if rows is None:
            raise DataEngineError("trino", f"no row estimate for {key}")
        tables[key] = tables.get(key, 0.0) + rows
    # The query's own output (top-level `estimate`): the IO plan says nothing of the steps between,
    # so a join shows only when its rows reach the output; unknown ("NaN") adds nothing.
    return Estimate.of(tables, processed=_rows(plan.get("estimate")) or 0.0)


class TrinoEngine(CatalogEngine):
    """`dsn` is ``trino://user@host:port/catalog/schema`` (``https://`` style ports work too)."""

    name = "trino"
    dialect = "trino"
    columns_sql = (
        "SELECT table_schema, table_name, column_name, data_type, coalesce(comment, '') "
        "FROM information_schema.columns WHERE table_schema = ? ORDER BY table_name, ordinal_position"
    )
    explain = "EXPLAIN (TYPE IO, FORMAT JSON)"
    views_sql = (
        "SELECT table_schema, table_name, view_definition "
        "FROM information_schema.views WHERE table_schema = ?"
    )

    def __init__(self, dsn: str) -> None:
        import trino.dbapi

        parts = urlsplit(dsn)
        path = [p for p in parts.path.split("/") if p]
        if parts.scheme not in ("trino", "http", "https") or not parts.hostname or len(path) != 2:
            raise DataEngineError("trino", "DSN must look like trino://user@host:8080/catalog/schema")
        self.catalog, self.default_schema = path
        self._conn = trino.dbapi.connect(  # type: ignore[no-untyped-call]
            host=parts.hostname,
            port=parts.port or 8080,
            user=parts.username or "mcp-elicit",
            catalog=self.catalog,
            schema=self.default_schema,
            http_scheme="https" if parts.scheme == "https" else "http",
        )
        self._lock = threading.Lock()

    def tables(self) -> tuple[TableInfo, ...]:
        """The served schema's tables and views, each view with the columns it reads."""
        tables = super().tables()
        views = [
            (schema, view, as_create_view(schema, view, str(text or "")))
            for schema, view, text in self._fetch(self.views_sql, (self.default_schema,))
        ]
        return with_view_reads(tables, views, self.dialect) if views else tables

    def _read_plan(self, plan: Any) -> Estimate:
        return io_estimate(plan)

    def run(self, sql: str, max_rows: int) -> QueryResult:
        with self._lock:
            try:
                cur = self._conn.cursor()
                cur.execute(sql)
                rows = cur.fetchmany(max_rows + 1)
                names = tuple(d[0] for d in cur.description or ())
                cur.cancel()
            except Exception as exc:  # the client raises its own and requests' errors
                raise DataEngineError("trino", str(exc)) from None
        return QueryResult.cut(names, rows, max_rows)

    def output_names(self, sql: str) -> tuple[str, ...]:
        """By asking for none of its rows: the planner names the columns, nothing is read."""
        wrapped = f"SELECT * FROM ({sql}) AS described LIMIT 0"  # noqa: S608 - a checked read
        return self.run(wrapped, 0).columns

    def _fetch(self, sql: str, params: tuple[Any, ...] | None = None) -> list[Any]:
        with self._lock:
            try:
                cur = self._conn.cursor()
                cur.execute(sql, params)
                return list(cur.fetchall())
            except Exception as exc:
                raise DataEngineError("trino", str(exc)) from None

    def close(self) -> None:
        self._conn.close()

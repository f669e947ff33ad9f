"""What the guard needs from a SQL engine: its tables (with column comments), a cost estimate
from the engine's own planner, and a read-only way to run a query. Engines are synchronous;
the server calls them on a worker thread."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Protocol

from mcp_elicit.apps.data.guard import Estimate
from mcp_elicit.errors import DataEngineError

__all__ = [
    "DEFAULT_MAX_ROWS",
    "CatalogEngine",
    "ColumnInfo",
    "Engine",
    "QueryResult",
    "TableInfo",
    "tables_from_columns",
]

# Rows a query returns to the client at most; the rest is cut and the result says so.
DEFAULT_MAX_ROWS: Final = 1_000


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    name: str
    type: str
    comment: str = ""


@dataclass(frozen=True, slots=True)
class TableInfo:
    schema: str
    name: str
    columns: tuple[ColumnInfo, ...]
    # A view's lineage: (qualified table, column, comment) of every column it reads, through other
    # views too. Each of its own columns carries their tags, as no engine says which feeds which.
    reads: tuple[tuple[str, str, str], ...] = ()

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool

    @classmethod
    def cut(cls, columns: tuple[str, ...], rows: Sequence[Sequence[Any]], max_rows: int) -> QueryResult:
        """The result of a query run with `max_rows + 1` rows fetched: one more means it was cut."""
        return cls(columns, tuple(tuple(r) for r in rows[:max_rows]), len(rows) > max_rows)


class Engine(Protocol):
    name: str  # "duckdb", "postgres", "trino": also the key of its threshold in the config
    dialect: str  # sqlglot's name for the SQL dialect
    default_schema: str

    def tables(self) -> tuple[TableInfo, ...]: ...

    def estimate(self, sql: str) -> Estimate:
        """Rows per table from the engine's planner; DataEngineError when it cannot plan."""
        ...

    def run(self, sql: str, max_rows: int) -> QueryResult: ...

    def close(self) -> None: ...


def tables_from_columns(rows: Iterable[tuple[str, str, str, str, str]]) -> tuple[TableInfo, ...]:
    """Tables from `information_schema.columns`-style rows (schema, table, column, type, comment),
    in the order the rows come."""
    found: dict[tuple[str, str], list[ColumnInfo]] = {}
    for schema, table, column, kind, comment in rows:
        found.setdefault((schema, table), []).append(ColumnInfo(column, kind, comment))
    return tuple(TableInfo(s, t, tuple(cols)) for (s, t), cols in found.items())


class CatalogEngine:
    """What the PostgreSQL and Trino engines share: the served schema's tables from
    information_schema (`columns_sql`, whose one parameter is the schema, giving rows for
    `tables_from_columns`) and the estimate from the planner's JSON plan (`explain` before the
    query, the plan read by `_read_plan`). An engine supplies those and `_fetch`."""

    name: str
    default_schema: str
    columns_sql: ClassVar[str]
    explain: ClassVar[str]

    def _fetch(self, sql: str, params: tuple[Any, ...] | None = None) -> list[Any]:
        raise NotImplementedError

    def _read_plan(self, plan: Any) -> Estimate:
        raise NotImplementedError

    def tables(self) -> tuple[TableInfo, ...]:
        return tables_from_columns(self._fetch(self.columns_sql, (self.default_schema,)))

    def estimate(self, sql: str) -> Estimate:
        rows = self._fetch(f"{self.explain} {sql}")
        if not rows:
            raise DataEngineError(self.name, "EXPLAIN returned nothing")
        return self._read_plan(rows[0][0])

"""What the guard needs from a SQL engine: its tables (with column comments), a cost estimate
from the engine's own planner, and a read-only way to run a query. Engines are synchronous;
the server calls them on a worker thread."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from mcp_elicit.apps.data.guard import Estimate

__all__ = ["DEFAULT_MAX_ROWS", "ColumnInfo", "Engine", "QueryResult", "TableInfo", "tables_from_columns"]

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

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True, slots=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool


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

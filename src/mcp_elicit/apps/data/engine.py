"""What the guard needs from a SQL engine: its tables (with column comments), a cost estimate
from the engine's own planner, and a read-only way to run a query. Engines are synchronous;
the server calls them on a worker thread."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Final, Protocol

from mcp_elicit.apps.data.guard import Estimate
from mcp_elicit.apps.data.sql import compiled_schema, read_columns, refuse_database_functions, view_query
from mcp_elicit.errors import DataEngineError, QueryRefused

__all__ = [
    "DEFAULT_MAX_ROWS",
    "CatalogEngine",
    "ColumnInfo",
    "Engine",
    "QueryResult",
    "TableInfo",
    "tables_from_columns",
    "with_view_reads",
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
    # The tables it inherits from, qualified (a partition's parents, nearest first): each of its
    # columns carries the catalog's tags of the same column there (comments come with `comment`).
    parents: tuple[str, ...] = ()

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

    def functions(self, names: Collection[str] | None = None) -> frozenset[str]:
        """Names (case-folded) of the functions defined in the database itself (not built in, not
        an extension's) that a call by bare name reaches, among `names` (case-folded; None: all),
        read from the database at each call: a query calling one is refused, as its body may
        read any table."""
        ...

    def hidden_functions(self, sql: str) -> tuple[tuple[str, str], ...]:
        """The database's own objects that `sql` may reach without calling a function by name and
        that run a function the guard cannot see into (PostgreSQL: an operator, a cast, a domain's
        CHECK, an operator class), each as (what it is, the function it runs), read from the
        database at each call: a query reaching one is refused like a call of that function."""
        ...

    def estimate(self, sql: str) -> Estimate:
        """Rows per table from the engine's planner; DataEngineError when it cannot plan."""
        ...

    def run(self, sql: str, max_rows: int) -> QueryResult: ...

    def output_names(self, sql: str) -> tuple[str, ...]:
        """The names of the columns `sql` returns, as the engine gives them, from describing it
        without running it: a masked run returns them under the plain run's names."""
        ...

    def close(self) -> None: ...


def tables_from_columns(rows: Iterable[tuple[str, str, str, str, str]]) -> tuple[TableInfo, ...]:
    """Tables from `information_schema.columns`-style rows (schema, table, column, type, comment),
    in the order the rows come."""
    found: dict[tuple[str, str], list[ColumnInfo]] = {}
    for schema, table, column, kind, comment in rows:
        found.setdefault((schema, table), []).append(ColumnInfo(column, kind, comment))
    return tuple(TableInfo(s, t, tuple(cols)) for (s, t), cols in found.items())


def with_view_reads(
    tables: tuple[TableInfo, ...],
    views: Iterable[tuple[str, str, str]],
    dialect: str,
    functions: frozenset[str] = frozenset(),
) -> tuple[TableInfo, ...]:
    """`tables` with each view's lineage (`TableInfo.reads`) worked out from its definition
    (schema, view, `CREATE VIEW` text), through views of views. A view the guard cannot follow
    (a table function, an unknown table, a call to one of the database's own `functions`, SQL it
    cannot parse) is left out of the catalog, so a
    query naming it is refused rather than run with its tags unknown."""
    schema = compiled_schema(
        {
            s: {t.name: {c.name: c.type for c in t.columns} for t in tables if t.schema == s}
            for s in {t.schema for t in tables}
        },
        dialect,
    )
    direct: dict[str, set[tuple[str, str]]] = {}
    for view_schema, view, text in views:
        try:
            body = view_query(text, dialect)
            refuse_database_functions(body, functions)
            direct[f"{view_schema}.{view}"] = read_columns(body, schema, view_schema)
        except QueryRefused:
            direct[f"{view_schema}.{view}"] = {("", "")}  # cannot be followed: dropped below

    def lineage(view: str, seen: frozenset[str]) -> set[tuple[str, str]] | None:
        out: set[tuple[str, str]] = set()
        for table, column in direct[view]:
            if not table or table in seen:
                return None
            out.add((table, column))
            if table in direct:
                inner = lineage(table, seen | {view})
                if inner is None:
                    return None
                out |= inner
        return out

    comments = {(t.qualified, c.name): c.comment for t in tables for c in t.columns}
    kept: list[TableInfo] = []
    for table in tables:
        if table.qualified not in direct:
            kept.append(table)
            continue
        reads = lineage(table.qualified, frozenset())
        if reads is not None:
            kept.append(
                replace(table, reads=tuple((t, c, comments.get((t, c), "")) for t, c in sorted(reads)))
            )
    return tuple(kept)


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

    def functions(self, names: Collection[str] | None = None) -> frozenset[str]:
        return frozenset()

    def hidden_functions(self, sql: str) -> tuple[tuple[str, str], ...]:
        return ()

    def estimate(self, sql: str) -> Estimate:
        rows = self._fetch(f"{self.explain} {sql}")
        if not rows:
            raise DataEngineError(self.name, "EXPLAIN returned nothing")
        return self._read_plan(rows[0][0])

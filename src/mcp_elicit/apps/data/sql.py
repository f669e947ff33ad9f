"""SQL facts with sqlglot: is it one read statement, which base columns it reads, and a masked copy.

No engine is involved: the schema (schema -> table -> column -> type) comes in as a mapping,
so these functions are as pure as the parser.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope
from sqlglot.schema import MappingSchema

from mcp_elicit.errors import QueryRefused

__all__ = ["MAX_SQL_CHARS", "ParsedQuery", "compiled_schema", "masked_sql", "parse_read_only", "read_columns"]

# Longest SQL text the guard parses; longer queries are refused before the parser sees them, so a
# huge text cannot pin the server (a hand-written analytical query is a few kilobytes).
MAX_SQL_CHARS: Final = 100_000

Schema = Mapping[str, Mapping[str, Mapping[str, str]]]  # schema -> table -> column -> type

# Nodes that write, lock, change settings or run something the parser did not understand.
_FORBIDDEN: tuple[type[exp.Expression], ...] = tuple(
    cls
    for name in (
        "Insert",
        "Update",
        "Delete",
        "Merge",
        "Create",
        "Drop",
        "Alter",
        "AlterTable",
        "Command",
        "Copy",
        "Set",
        "Pragma",
        "TruncateTable",
        "Into",
        "Lock",
        "Use",
        "Transaction",
        "Commit",
        "Rollback",
        "LoadData",
        "Grant",
    )
    if isinstance(cls := getattr(exp, name, None), type)
)

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to Command" warnings


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str
    dialect: str
    tree: exp.Expression


def parse_read_only(sql: str, dialect: str) -> ParsedQuery:
    """The query's tree when `sql` is exactly one read statement; QueryRefused otherwise."""
    if len(sql) > MAX_SQL_CHARS:
        raise QueryRefused("not_parsed", f"longer than {MAX_SQL_CHARS} characters")
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as exc:
        raise QueryRefused("not_parsed", str(exc).splitlines()[0] if str(exc) else "syntax error") from None
    if len(statements) != 1:
        raise QueryRefused("not_read_only", f"{len(statements)} statements; exactly one SELECT is allowed")
    tree = statements[0]
    if not isinstance(tree, exp.Select | exp.SetOperation | exp.Subquery):
        raise QueryRefused("not_read_only", f"a {tree.key.upper()} statement; only SELECT queries run")
    bad = next((n for n in tree.walk() if isinstance(n, _FORBIDDEN)), None)
    if bad is not None:
        raise QueryRefused("not_read_only", f"contains {bad.key.upper()}; only reads run")
    return ParsedQuery(sql, dialect, tree)


def compiled_schema(schema: Schema, dialect: str) -> MappingSchema:
    """The schema in sqlglot's own form: build it once per catalog snapshot, not per query."""
    return MappingSchema(
        {s: {t: dict(c) for t, c in tables.items()} for s, tables in schema.items()}, dialect=dialect
    )


def _qualified(query: ParsedQuery, schema: Schema | MappingSchema, default_schema: str) -> exp.Expression:
    if not isinstance(schema, MappingSchema):
        schema = compiled_schema(schema, query.dialect)
    try:
        return qualify(
            query.tree.copy(),
            schema=schema,
            db=default_schema,
            dialect=query.dialect,
            validate_qualify_columns=True,
            quote_identifiers=False,
        )
    except (OptimizeError, SqlglotError) as exc:
        raise QueryRefused("unknown_column", str(exc).splitlines()[0]) from None


def _base_columns(tree: exp.Expression) -> Iterable[tuple[exp.Column, str]]:
    """Every column reference that reads a real table, with that table's qualified name."""
    for scope in traverse_scope(tree):
        for column in scope.columns:
            source = scope.sources.get(column.table)
            if isinstance(source, exp.Table):
                yield column, f"{source.db}.{source.name}" if source.db else source.name


def read_columns(
    query: ParsedQuery, schema: Schema | MappingSchema, default_schema: str
) -> set[tuple[str, str]]:
    """(qualified table, column) for every base column the query reads anywhere: projection,
    filters, joins, grouping, ``*`` expanded, through CTEs and subqueries."""
    tree = _qualified(query, schema, default_schema)
    return {(table, column.name) for column, table in _base_columns(tree)}


def _in_predicate(node: exp.Expression) -> bool:
    """True inside a WHERE/HAVING/JOIN condition: such a subquery's values never reach the output."""
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Where | exp.Having | exp.Join | exp.Qualify):
            return True
        parent = parent.parent
    return False


def _in_projection(column: exp.Column) -> bool:
    """True when `column` is part of its nearest SELECT's output list (not its filters or order)."""
    node: exp.Expr = column
    while node.parent is not None and not isinstance(node.parent, exp.Select):
        node = node.parent
    return node.parent is not None and node.arg_key == "expressions" and not _in_predicate(node.parent)


def masked_sql(
    query: ParsedQuery, schema: Schema | MappingSchema, default_schema: str, masked: set[tuple[str, str]]
) -> str:
    """`query` rewritten so every output value computed from a `masked` column is NULL.

    Each SELECT list that feeds the output (the top, CTEs, derived tables, set operations, scalar
    subqueries) has its references to masked base columns replaced with NULL; the filters, joins
    and grouping on the base tables still see the real values inside the engine, only those
    values never leave it. (A filter in an outer query on a CTE's masked output sees NULL.)
    """
    tree = _qualified(query, schema, default_schema)
    for column, table in list(_base_columns(tree)):
        if (table, column.name) in masked and _in_projection(column):
            column.replace(exp.Null())
    return tree.sql(dialect=query.dialect)

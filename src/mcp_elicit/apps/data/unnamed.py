"""Columns a query reads without naming them, in ways the guard's column resolution (sqlglot's
`qualify`) does not follow: refused before anything else looks at the query, as the guard could
not say which columns, personal data among them, the query reads."""

from __future__ import annotations

from typing import Final

from sqlglot import exp

from mcp_elicit.errors import QueryRefused

__all__ = ["refuse_unnamed_columns"]

# Predicates that, applied to a bare `*` in a select list, pick the columns whose names match
# (DuckDB: `* LIKE '%mail'`, `* GLOB`, `* SIMILAR TO`; `* ILIKE` is one `qualify` expands).
_PATTERNS: Final = (exp.Like, exp.SimilarTo, exp.Glob, exp.RegexpLike)


def refuse_unnamed_columns(tree: exp.Expr, dialect: str) -> None:
    """QueryRefused ("unknown_column") for a column named by its position (DuckDB's `#3`, the
    third column of what FROM reads) or columns picked by a pattern of their names."""
    positional = tree.find(exp.PositionalColumn)
    if positional is not None:
        raise QueryRefused(
            "unknown_column",
            f"refers to a column by its position ({positional.sql(dialect)}), which the guard does not"
            " follow to the column it reads; name the column",
        )
    if any(isinstance(star.parent, _PATTERNS) and star.arg_key == "this" for star in tree.find_all(exp.Star)):
        raise QueryRefused(
            "unknown_column", "picks columns by a pattern of their names (* LIKE …); name the columns"
        )

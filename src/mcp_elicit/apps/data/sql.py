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
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from mcp_elicit.apps.data.functions import (
    ALLOWED_FUNCTIONS,
    GRAMMAR,
    SERIES_AS_VALUE,
    SERIES_FUNCTIONS,
    called_names,
    function_calls,
    parsed_as_grammar,
    whole_number_arguments,
    written_name,
)
from mcp_elicit.apps.data.unnamed import refuse_unnamed_columns
from mcp_elicit.errors import QueryRefused

__all__ = [
    "MAX_SQL_CHARS",
    "ParsedQuery",
    "compiled_schema",
    "masked_sql",
    "parse_read_only",
    "read_columns",
    "refuse_hidden_functions",
    "view_query",
]

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

# Functions that change the server's state from inside a SELECT, which a read-only transaction
# does not stop: settings, other sessions (or the guard's own connection), locks held past the
# statement, the server's configuration and logs.
_STATEFUL_FUNCTIONS: Final = frozenset(
    {
        "set_config",
        "pg_terminate_backend",
        "pg_cancel_backend",
        "pg_reload_conf",
        "pg_rotate_logfile",
        "pg_advisory_lock",
        "pg_advisory_lock_shared",
        "pg_try_advisory_lock",
        "pg_try_advisory_lock_shared",
        "pg_notify",
    }
)

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to Command" warnings


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str
    dialect: str
    tree: exp.Expression


def parse_read_only(sql: str, dialect: str) -> ParsedQuery:
    """The query's tree when `sql` is exactly one read statement whose sources the guard can see
    (`_refuse_opaque`); QueryRefused otherwise."""
    if len(sql) > MAX_SQL_CHARS:
        raise QueryRefused("not_parsed", f"longer than {MAX_SQL_CHARS} characters")
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as exc:
        raise QueryRefused("not_parsed", str(exc).splitlines()[0] if str(exc) else "syntax error") from None
    except RecursionError:  # each bracket costs the parser a few frames of Python's stack
        raise QueryRefused("not_parsed", "nested too deeply for the parser; use fewer brackets") from None
    except (IndexError, KeyError, TypeError, ValueError, AttributeError) as exc:  # the parser's own slip
        raise QueryRefused("not_parsed", f"the parser could not read it ({type(exc).__name__})") from None
    if not statements:
        raise QueryRefused("not_parsed", "no statement (the text is empty or only comments)")
    if len(statements) != 1:
        raise QueryRefused("not_read_only", f"{len(statements)} statements; exactly one SELECT is allowed")
    tree = statements[0]
    if not isinstance(tree, exp.Select | exp.SetOperation | exp.Subquery):
        kind = _statement_word(tree, sql, dialect)
        article = "an" if kind[:1] in "AEIOU" else "a"
        raise QueryRefused("not_read_only", f"{article} {kind} statement; only SELECT queries run")
    bad = next((n for n in tree.walk() if isinstance(n, _FORBIDDEN)), None)
    if bad is not None:
        raise QueryRefused("not_read_only", f"contains {bad.key.upper()}; only reads run")
    refuse_unnamed_columns(tree, dialect)
    _refuse_opaque(tree, sql, dialect)  # before the engine plans it: a table function may read a file to plan
    return ParsedQuery(sql, dialect, tree)


def view_query(text: str, dialect: str) -> ParsedQuery:
    """The query inside a `CREATE VIEW ... AS SELECT` text, checked as `parse_read_only` checks a
    query; QueryRefused when it is not one."""
    try:
        create = sqlglot.parse_one(text, read=dialect)
    except SqlglotError:
        raise QueryRefused("not_parsed", "a view definition the parser cannot read") from None
    body = create.expression if isinstance(create, exp.Create) else None
    if not isinstance(body, exp.Expression):
        raise QueryRefused("not_parsed", "not a CREATE VIEW ... AS SELECT")
    return parse_read_only(body.sql(dialect=dialect), dialect)


def compiled_schema(schema: Schema, dialect: str) -> MappingSchema:
    """The schema in sqlglot's own form: build it once per catalog snapshot, not per query.

    PostgreSQL's catalog holds names exactly as they are (an unquoted name was folded to lower
    case when it was made), so they are taken as they are, not folded again: `"MixedCase"` stays
    a table a query can name."""
    return MappingSchema(
        {s: {t: dict(c) for t, c in tables.items()} for s, tables in schema.items()},
        dialect=dialect,
        normalize=dialect != "postgres",
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


def recursion_refused(where: str = "") -> QueryRefused:
    """The refusal of a recursive WITH (`where` it is, when not in the query's own text): both
    planners guess its rows, so its cost is unknown."""
    return QueryRefused(
        "opaque_source",
        f"uses a recursive WITH{where}, whose rows the engine cannot count before it runs (it guesses"
        " them, and the recursion may not end), so its cost is unknown; write the query without recursion",
    )


def _statement_word(tree: exp.Expr, text: str, dialect: str) -> str:
    """The statement's name for a refusal: its first word as written (`EXPLAIN`, `LISTEN`,
    `CHECKPOINT`, which the parser keeps as a bare command or reads as an expression), or the
    parser's name for it when the text starts with a WITH or a bracket (`WITH … INSERT`)."""
    word = str(tree.this) if isinstance(tree, exp.Command) else ""
    if not word:
        tokens = sqlglot.tokenize(text, read=dialect)
        word = tokens[0].text if tokens else ""
    word = word.split()[0].upper() if word.split() else ""
    return word if word.isalpha() and word != "WITH" else tree.key.upper()


def _refuse_opaque(tree: exp.Expression, text: str, dialect: str) -> None:
    """QueryRefused ("opaque_source") when the query reads through something the guard cannot see
    into: a table function in FROM (`query_table('t')`, `read_csv(...)`), or a function that is not
    on the engine's allow-list of built-ins (`functions.ALLOWED_FUNCTIONS`: it may run a query or
    read a table, file, setting or session), or one named with a schema; and ("not_read_only") a
    function that changes the server's state (`_STATEFUL_FUNCTIONS`, for its own reason); and a
    recursive WITH, whose rows both planners guess (it may make millions, or never end)."""
    if any(with_.args.get("recursive") for with_ in tree.find_all(exp.With)):
        raise recursion_refused()
    series = SERIES_FUNCTIONS.get(dialect, frozenset())
    for table in tree.find_all(exp.Table):
        if _is_series(table.this, text, series):
            continue
        if not isinstance(table.this, exp.Identifier):
            source = table.this if isinstance(table.this, exp.Expression) else table.copy()
            if isinstance(source, exp.Table):  # ROWS FROM (…): the whole source, without its alias
                source.set("alias", None)
            name = source.sql(dialect)
            raise QueryRefused(
                "opaque_source",
                f"reads from {name[:80]}, a table function the guard cannot see into;"
                " name the tables instead",
            )
    allowed = ALLOWED_FUNCTIONS.get(dialect, frozenset())
    as_value = SERIES_AS_VALUE.get(dialect, frozenset())
    for func in tree.find_all(exp.Func):
        written = written_name(func, text) or ""
        if written in series and not isinstance(func.parent, exp.Table):
            if written not in as_value:
                raise QueryRefused(
                    "opaque_source",
                    f"calls {written}() as a value, a list the engine builds whole while it plans the"
                    " query; call it in the FROM clause instead, as a table of numbers",
                )
            if not whole_number_arguments(func):
                raise _series_refused(written)
    for call in function_calls(tree, text):
        if call.name in _STATEFUL_FUNCTIONS:
            raise QueryRefused(
                "not_read_only", f"calls {call.name}(), which changes the server's state; only reads run"
            )
        if call.schema and not (dialect == "postgres" and call.schema == "pg_catalog"):
            raise QueryRefused(
                "opaque_source",
                f"calls {call.label}(), a function named with its schema (or called as a method), which"
                " the guard cannot see into; call the built-in function by its bare name",
            )
        if call.name not in allowed:
            raise _not_allowed(call.label)
    # Calls the parser reads with a parser of its own keep no place for their name: by the words.
    unplaced = sorted(called_names(text, dialect) & parsed_as_grammar(dialect) - allowed - GRAMMAR)
    if unplaced:
        raise _not_allowed(unplaced[0])


def _is_series(source: object, text: str, series: frozenset[str]) -> bool:
    """True for a series function in FROM (`generate_series(1, 10)`) whose arguments are whole-number
    literals; QueryRefused for one with any other argument, whose rows the planner guesses."""
    if not isinstance(source, exp.Func):
        return False
    name = written_name(source, text)
    if name is None or name not in series:
        return False
    if not whole_number_arguments(source):
        raise _series_refused(name)
    return True


def _series_refused(name: str) -> QueryRefused:
    return QueryRefused(
        "opaque_source",
        f"calls {name}() with arguments other than whole numbers written in the query, so the"
        " engine cannot count its rows before it runs; write them as numbers",
    )


def _not_allowed(label: str) -> QueryRefused:
    return QueryRefused(
        "opaque_source",
        f"calls {label}(), which is not one of the built-in functions the guard knows to compute"
        " only from their arguments, so it may read what the guard cannot see (a table, file,"
        " setting or session); use a listed function, or name the tables instead",
    )


def refuse_database_functions(query: ParsedQuery, defined: frozenset[str]) -> None:
    """QueryRefused ("opaque_source") when the query calls a function defined in the database
    (`defined`: the engine's own, user-written ones that a call by bare name reaches, case-folded):
    its body may read any table, which the guard cannot see. Names are taken as written and match
    case-folded, so a near namesake is refused too."""
    if not defined:
        return
    found = sorted(called_names(query.text, query.dialect) & defined)
    if found:
        raise QueryRefused(
            "opaque_source",
            f"calls {found[0]}(), a function defined in the database whose body the guard cannot see"
            " into; name the tables instead",
        )


def refuse_hidden_functions(hidden: Iterable[tuple[str, str]]) -> None:
    """QueryRefused ("opaque_source") when the query reaches one of the database's own operators,
    casts, domains or operator classes (`hidden`: what it is, the function it runs) whose function
    the guard cannot see into: as if the query called that function by name."""
    for what, function in hidden:
        raise QueryRefused(
            "opaque_source",
            f"uses the {what} the database defines, which runs {function}(), a function the guard"
            " cannot see into (it may read a table, file, setting or session); write the query"
            " without it",
        )


def _base_columns(
    tree: exp.Expression, schema: MappingSchema | None = None
) -> Iterable[tuple[exp.Expression, str, str]]:
    """(reference, qualified table, column) for every column reference that reads a real table,
    by the column's name in the table (`customers AS t(a, b)` renames its first columns). A
    whole-row reference (`SELECT c FROM customers c`, `to_json(c)`, `row_to_json(c.*)`, `c` in a
    HAVING) reads every column of its table: with `schema`, one triple per column, all with that
    reference."""
    for scope in traverse_scope(tree):
        for column in scope.columns:
            source = scope.sources.get(column.table)
            if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
                yield column, _table_name(source), _real_name(source, column.name, schema)
        if schema is None:
            continue
        for row, alias in _whole_rows(scope):
            found = _source(scope, alias)
            if isinstance(found, exp.Table) and isinstance(
                found.this, exp.Identifier
            ):  # (a CTE's or subquery's rows: their own scopes count)
                for name in schema.column_names(found):
                    yield row, _table_name(found), name


def _whole_rows(scope: Scope) -> Iterable[tuple[exp.Expression, str]]:
    """(reference, source name) for each whole-row reference in `scope`: sqlglot's TableColumn,
    `c.*` inside an expression (a projection's own `c.*` was expanded by qualify), and a bare
    name left unqualified that names a source (qualify leaves one in HAVING as a column). A `*`
    that qualify could not expand (it leaves one when an alias list reuses a column's name) reads
    every source of its SELECT."""
    if isinstance(scope.expression, exp.Select):
        for star in scope.expression.expressions:
            if isinstance(star, exp.Star):
                yield from ((star, name) for name in scope.sources)
    for row in scope.find_all(exp.TableColumn):
        yield row, row.name
    for column in scope.find_all(exp.Column):
        if isinstance(column.this, exp.Star) and column.table:
            yield column, column.table
        elif not column.table and _source(scope, column.name) is not None:
            yield column, column.name


def _source(scope: Scope | None, name: str) -> exp.Expression | Scope | None:
    """The source `name` names in `scope` or, for a correlated subquery, in a scope around it."""
    while scope is not None:
        if name in scope.sources:
            source: exp.Expression | Scope = scope.sources[name]
            return source
        scope = scope.parent
    return None


def _check_whole_rows_placed(
    query: ParsedQuery, schema: MappingSchema, default_schema: str, read: set[tuple[str, str]]
) -> None:
    """QueryRefused ("opaque_source") when the text names a table's whole row (a bare alias, or
    `alias.*`) and the qualified tree does not read every column of that table: qualify placed the
    reference elsewhere (it can, inside a LATERAL), so the guard cannot tell what it reads."""
    tree = normalize_identifiers(query.tree.copy(), dialect=query.dialect)
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    aliases = {t.alias_or_name: t for t in tree.find_all(exp.Table) if not (t.name in ctes and not t.db)}
    for column in tree.find_all(exp.Column):
        alias = column.table if isinstance(column.this, exp.Star) else "" if column.table else column.name
        table = aliases.get(alias) if alias else None
        if table is None:
            continue
        qualified = exp.table_(table.name, db=table.db or default_schema)
        name = _table_name(qualified)
        if not all((name, c) in read for c in schema.column_names(qualified)):
            raise QueryRefused(
                "opaque_source",
                f"refers to the whole row of {name} where the guard cannot follow it;"
                " name its columns instead",
            )


def _real_name(source: exp.Table, name: str, schema: MappingSchema | None) -> str:
    """The table's own name for `name`: a column alias list (`customers AS t(a, b)`) renames the
    table's first columns in order."""
    alias = source.args.get("alias")
    renamed = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    if schema is None or name not in renamed:
        return name
    names = schema.column_names(source)
    index = renamed.index(name)
    return names[index] if index < len(names) else name


def _table_name(source: exp.Table) -> str:
    return f"{source.db}.{source.name}" if source.db else source.name


def _check_known(tree: exp.Expression, schema: MappingSchema, read: set[tuple[str, str]]) -> None:
    """QueryRefused ("unknown_column") for a table outside the catalog (another schema, a system
    view) or a column the table does not have: the guard cannot know their tags, so it fails closed."""
    known: dict[str, list[str]] = {}
    for scope in traverse_scope(tree):
        for source in scope.sources.values():
            if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
                names = schema.column_names(source)
                if not names:
                    raise QueryRefused(
                        "unknown_column",
                        f"reads {_table_name(source)}, a table the catalog does not know"
                        " (only the served schema's tables can be read)",
                    )
                known[_table_name(source)] = names
    for table, column in sorted(read):
        if column not in known.get(table, ()):
            raise QueryRefused("unknown_column", f"reads {table}.{column}, a column the catalog lacks")


def read_columns(
    query: ParsedQuery, schema: Schema | MappingSchema, default_schema: str
) -> set[tuple[str, str]]:
    """(qualified table, column) for every base column the query reads anywhere: projection,
    filters, joins, grouping, ``*`` expanded, through CTEs and subqueries."""
    compiled = schema if isinstance(schema, MappingSchema) else compiled_schema(schema, query.dialect)
    tree = _qualified(query, compiled, default_schema)
    read = {(table, name) for _, table, name in _base_columns(tree, compiled)}
    _check_known(tree, compiled, read)
    _check_whole_rows_placed(query, compiled, default_schema, read)
    return read


def _in_predicate(node: exp.Expression) -> bool:
    """True inside a WHERE/HAVING/QUALIFY or a join's ON/USING: such a subquery's values never
    reach the output. The relation a JOIN brings in (a derived table, a LATERAL) is not one: its
    output list feeds the query's."""
    child: exp.Expr = node
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Where | exp.Having | exp.Qualify):
            return True
        if isinstance(parent, exp.Join) and child.arg_key in ("on", "using", "match_condition"):
            return True
        child, parent = parent, parent.parent
    return False


def _in_projection(column: exp.Expression) -> bool:
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
    values never leave it. (A filter in an outer query on a CTE's masked output sees NULL.) A
    whole-row reference to a table with a masked column is NULL as a whole.
    """
    compiled = schema if isinstance(schema, MappingSchema) else compiled_schema(schema, query.dialect)
    tree = _qualified(query, compiled, default_schema)
    hidden: dict[int, list[tuple[exp.Expression, str, str]]] = {}
    for column, table, name in _base_columns(tree, compiled):
        if (table, name) in masked:
            hidden.setdefault(id(column), []).append((column, table, name))
    for [(column, table, name), *others] in hidden.values():
        if _in_projection(column):  # a whole-row reference with a masked column in it goes whole
            whole_row = bool(others) or not isinstance(column, exp.Column)
            column.replace(exp.Null() if whole_row else _typed_null(compiled, table, name))
    return tree.sql(dialect=query.dialect)


def _typed_null(schema: MappingSchema, table: str, name: str) -> exp.Expression:
    """NULL of the masked column's own type, so what is computed from it still plans
    (`array_agg(email)`, `lag(email)` fail on PostgreSQL with a bare NULL); unknown: a bare NULL."""
    db, _, bare = table.rpartition(".")
    kind = schema.get_column_type(exp.table_(bare, db=db or None, quoted=True), name)
    if kind.is_type(exp.DataType.Type.UNKNOWN):
        return exp.Null()
    return exp.cast(exp.Null(), kind)

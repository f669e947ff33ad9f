"""PostgreSQL: every session read-only, estimates from ``EXPLAIN (FORMAT JSON)`` plan rows.

The session sets ``default_transaction_read_only`` and each statement runs in a transaction that
is rolled back, with a statement timeout, so nothing the parser let through can write.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import replace
from typing import Any, Final

import psycopg
from psycopg import pq, sql

from mcp_elicit.apps.data.engine import CatalogEngine, QueryResult, TableInfo
from mcp_elicit.apps.data.functions import ALLOWED_FUNCTIONS, operators_and_words
from mcp_elicit.apps.data.guard import Estimate
from mcp_elicit.apps.data.postgres_plan import (
    IndexFound,
    IndexProbe,
    filtered_index_scans,
    filtered_scans,
    plan_estimate,
)
from mcp_elicit.errors import DataEngineError

__all__ = ["STATEMENT_TIMEOUT_MS", "PostgresEngine", "plan_estimate"]

# Longest a planned or guarded statement may run on PostgreSQL before the server stops it.
STATEMENT_TIMEOUT_MS: Final = 30_000
_CONNECT_TIMEOUT_SECONDS: Final = 10

# Every column each view (or materialized view) of a schema reads, from the dependencies PostgreSQL
# records for its rewrite rule, through views of views; a whole-row reference depends on the table
# as a whole (column 0), so it reads every column. A column of a partition or an inheriting table
# reads as that column of every table above it too (their comments and catalog tags apply).
# pg_depend is readable by any role.
_VIEW_READS_SQL: Final = """
WITH RECURSIVE anc(rel, ancestor) AS (
  SELECT inhrelid, inhparent FROM pg_inherits
  UNION SELECT anc.rel, i.inhparent FROM anc JOIN pg_inherits i ON i.inhrelid = anc.ancestor
), deps(view_oid, ref_oid, ref_att) AS (
  SELECT v.oid, d.refobjid, d.refobjsubid
  FROM pg_class v JOIN pg_rewrite r ON r.ev_class = v.oid
  JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
   AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> v.oid
  WHERE v.relkind IN ('v', 'm') AND v.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = %s)
  UNION
  SELECT deps.view_oid, d.refobjid, d.refobjsubid
  FROM deps JOIN pg_rewrite r ON r.ev_class = deps.ref_oid
  JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
   AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> deps.ref_oid
)
SELECT DISTINCT v.relname, bn.nspname, b.relname, a.attname, coalesce(col_description(b.oid, a.attnum), '')
FROM deps JOIN pg_class v ON v.oid = deps.view_oid
JOIN (SELECT ref_oid AS rel, ref_oid AS source FROM deps UNION SELECT rel, ancestor FROM anc) up
 ON up.rel = deps.ref_oid
JOIN pg_attribute r ON r.attrelid = deps.ref_oid AND r.attnum > 0 AND NOT r.attisdropped
 AND (deps.ref_att = 0 OR r.attnum = deps.ref_att)
JOIN pg_class b ON b.oid = up.source JOIN pg_namespace bn ON bn.oid = b.relnamespace
JOIN pg_attribute a ON a.attrelid = b.oid AND a.attname = r.attname AND NOT a.attisdropped
ORDER BY 1, 2, 3, 4
"""
# The tables each table of a schema inherits from (a partition's parents), nearest first.
_PARENTS_SQL: Final = """
WITH RECURSIVE anc(rel, ancestor, depth) AS (
  SELECT inhrelid, inhparent, 1 FROM pg_inherits
  UNION SELECT anc.rel, i.inhparent, anc.depth + 1 FROM anc JOIN pg_inherits i ON i.inhrelid = anc.ancestor
)
SELECT c.relname, pn.nspname, p.relname FROM anc
JOIN pg_class c ON c.oid = anc.rel JOIN pg_class p ON p.oid = anc.ancestor
JOIN pg_namespace pn ON pn.oid = p.relnamespace
WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = %s)
ORDER BY 1, anc.depth, 2, 3
"""

# A function written in the database (outside the system schemas, not an extension's) that a call
# by bare name can reach: its body may read any table, so the guard cannot see what a query calling
# it reads. Reached means in a schema on the session's search path (pg_catalog first, unless the
# path places it later) and not hidden by a function of the same name and the very same argument
# types earlier on the path, which PostgreSQL always picks instead (one with defaults or VARIADIC
# is never taken as hidden). One outside the path is reached only by a call naming its schema,
# which the guard refuses anyway; so a user's `util.lower(text)` leaves the built-in `lower` alone.
_FUNCTIONS_SQL: Final = """
WITH path AS (
  SELECT n.oid, s.pos FROM unnest(current_schemas(true)) WITH ORDINALITY AS s(name, pos)
  JOIN pg_namespace n ON n.nspname = s.name
)
SELECT DISTINCT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN path ON path.oid = p.pronamespace
WHERE n.nspname <> 'information_schema' AND n.nspname !~ '^pg_' AND NOT EXISTS
 (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_proc'::regclass AND e.objid = p.oid AND e.deptype = 'e')
 AND NOT (p.pronargdefaults = 0 AND p.provariadic = 0 AND EXISTS
  (SELECT 1 FROM pg_proc q JOIN path qp ON qp.oid = q.pronamespace
   WHERE q.proname = p.proname AND q.proargtypes = p.proargtypes AND qp.pos < path.pos))
 AND (%(names)s::text[] IS NULL OR lower(p.proname) = ANY(%(names)s::text[]))
"""
# Whether any function outside the system schemas bears one of the names: the common answer, no,
# costs one scan of pg_proc; only a yes needs `_FUNCTIONS_SQL` to tell whether a call reaches it.
_NAMESAKES_SQL: Final = """
SELECT 1 FROM pg_proc p WHERE lower(p.proname) = ANY(%(names)s::text[])
 AND p.pronamespace NOT IN
  (SELECT oid FROM pg_namespace WHERE nspname ~ '^pg_' OR nspname = 'information_schema')
LIMIT 1
"""
# The schema's views that call such a function, themselves or through the views they read.
_OPAQUE_VIEWS_SQL: Final = """
WITH RECURSIVE deps(view_oid, ref_oid) AS (
  SELECT v.oid, v.oid FROM pg_class v
  WHERE v.relkind IN ('v', 'm') AND v.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = %s)
  UNION
  SELECT deps.view_oid, d.refobjid
  FROM deps JOIN pg_rewrite r ON r.ev_class = deps.ref_oid
  JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
   AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> deps.ref_oid
)
SELECT DISTINCT v.relname FROM deps JOIN pg_class v ON v.oid = deps.view_oid
JOIN pg_rewrite r ON r.ev_class = deps.ref_oid
JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
 AND d.refclassid = 'pg_proc'::regclass
JOIN pg_proc p ON p.oid = d.refobjid JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname <> 'information_schema' AND n.nspname !~ '^pg_' AND NOT EXISTS
 (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_proc'::regclass AND e.objid = p.oid AND e.deptype = 'e')
"""

# The database's own operators, casts, domains and operator classes (made after initdb, not by an
# extension) that run a function which is not a built-in computing from its arguments (one on the
# allow-list, or behind a built-in operator, cast or operator class), and that the query may reach
# without calling that function by name: an operator written in one of its runs of operator
# characters (`a <+> b`, `OPERATOR(s.<+>)`), or in an operator class of a type it handles (ORDER BY,
# DISTINCT, a join); a cast from or to a type it handles (of the database's own; one between two
# built-in types applies silently anywhere); a domain it handles whose CHECK calls one. A type is
# handled when the query names it or a relation with a column of it, or of a type made from it.
# A superset: a name or a type too many refuses a query it did not need to, never the reverse.
_HIDDEN_SQL: Final = """
WITH RECURSIVE
made AS (  -- made in the database (after initdb), not by an extension
  SELECT m.classid, m.objid FROM (
    SELECT 'pg_operator'::regclass AS classid, oid AS objid FROM pg_operator WHERE oid >= 16384
    UNION ALL SELECT 'pg_cast'::regclass, oid FROM pg_cast WHERE oid >= 16384
    UNION ALL SELECT 'pg_type'::regclass, oid FROM pg_type WHERE oid >= 16384 AND typtype = 'd'
    UNION ALL SELECT 'pg_amproc'::regclass, a.oid FROM pg_amproc a WHERE a.oid >= 16384 AND NOT EXISTS
     (SELECT 1 FROM pg_depend e WHERE e.classid = 'pg_opfamily'::regclass AND e.objid = a.amprocfamily
      AND e.deptype = 'e')
  ) m WHERE NOT EXISTS
   (SELECT 1 FROM pg_depend e WHERE e.classid = m.classid AND e.objid = m.objid AND e.deptype = 'e')
),
used(oid) AS (  -- the functions behind them, and those their CHECK constraints call
  SELECT o.oprcode FROM pg_operator o
   JOIN made ON made.classid = 'pg_operator'::regclass AND made.objid = o.oid
  UNION SELECT c.castfunc FROM pg_cast c
   JOIN made ON made.classid = 'pg_cast'::regclass AND made.objid = c.oid
  UNION SELECT a.amproc FROM pg_amproc a
   JOIN made ON made.classid = 'pg_amproc'::regclass AND made.objid = a.oid
  UNION SELECT d.refobjid FROM pg_depend d JOIN pg_constraint c ON d.classid = 'pg_constraint'::regclass
   AND d.objid = c.oid AND c.contypid <> 0 AND d.refclassid = 'pg_proc'::regclass
),
opaque_proc AS (  -- those that are not built-ins computing from their arguments
  SELECT p.oid FROM pg_proc p JOIN used ON used.oid = p.oid WHERE NOT (p.oid < 16384 AND (
   p.proname = ANY(%(allowed)s::text[])
   OR p.oid IN (SELECT oprcode FROM pg_operator WHERE oid < 16384)
   OR p.oid IN (SELECT castfunc FROM pg_cast WHERE oid < 16384)
   OR p.oid IN (SELECT amproc FROM pg_amproc WHERE oid < 16384)))
),
own_op AS (
  SELECT o.oid, o.oprname, o.oprleft, o.oprright, o.oprcode FROM pg_operator o
   JOIN made ON made.classid = 'pg_operator'::regclass AND made.objid = o.oid
  WHERE o.oprcode IN (SELECT oid FROM opaque_proc)
),
named_rel AS (SELECT c.oid, c.reltype FROM pg_class c WHERE lower(c.relname) = ANY(%(words)s::text[])),
in_play(oid) AS (  -- types named, a named relation's own and its columns', what they are made of
  SELECT t.oid FROM pg_type t WHERE lower(t.typname) = ANY(%(words)s::text[])
  UNION SELECT reltype FROM named_rel
  UNION SELECT a.atttypid FROM pg_attribute a JOIN named_rel r ON a.attrelid = r.oid WHERE a.attnum > 0
  UNION
  SELECT x.oid FROM in_play p JOIN pg_type t ON t.oid = p.oid
  CROSS JOIN LATERAL (SELECT t.typelem UNION ALL SELECT t.typbasetype
   UNION ALL SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0) x(oid)
  WHERE x.oid <> 0
),
opaque_domain(oid, fn) AS (  -- a CHECK calls one (or a base domain's does)
  SELECT t.oid, coalesce(p.oid, op.oprcode)::regproc::text FROM pg_type t
   JOIN made ON made.classid = 'pg_type'::regclass AND made.objid = t.oid
  JOIN pg_constraint c ON c.contypid = t.oid
  JOIN pg_depend d ON d.classid = 'pg_constraint'::regclass AND d.objid = c.oid
  LEFT JOIN opaque_proc p ON d.refclassid = 'pg_proc'::regclass AND p.oid = d.refobjid
  LEFT JOIN own_op op ON d.refclassid = 'pg_operator'::regclass AND op.oid = d.refobjid
  WHERE p.oid IS NOT NULL OR op.oid IS NOT NULL
  UNION SELECT t.oid, od.fn FROM opaque_domain od JOIN pg_type t ON t.typbasetype = od.oid
)
SELECT 'operator ' || o.oprname, o.oprcode::regproc::text FROM own_op o
 WHERE EXISTS (SELECT 1 FROM unnest(%(operators)s::text[]) r WHERE strpos(r, o.oprname) > 0)
  OR EXISTS (SELECT 1 FROM pg_amop a WHERE a.amopopr = o.oid)
   AND (o.oprleft IN (SELECT oid FROM in_play) OR o.oprright IN (SELECT oid FROM in_play))
UNION ALL
SELECT 'cast from ' || format_type(c.castsource, NULL) || ' to ' || format_type(c.casttarget, NULL),
 c.castfunc::regproc::text FROM pg_cast c
   JOIN made ON made.classid = 'pg_cast'::regclass AND made.objid = c.oid
 WHERE c.castfunc IN (SELECT oid FROM opaque_proc) AND (
  c.castsource >= 16384 AND c.castsource IN (SELECT oid FROM in_play)
  OR c.casttarget >= 16384 AND c.casttarget IN (SELECT oid FROM in_play)
  OR c.castsource < 16384 AND c.casttarget < 16384)
UNION ALL
SELECT 'domain ' || format_type(d.oid, NULL), d.fn FROM opaque_domain d
 WHERE d.oid IN (SELECT oid FROM in_play)
UNION ALL
SELECT 'operator class of ' || format_type(a.amproclefttype, NULL), a.amproc::regproc::text FROM pg_amproc a
   JOIN made ON made.classid = 'pg_amproc'::regclass AND made.objid = a.oid
 WHERE a.amproc IN (SELECT oid FROM opaque_proc)
  AND (a.amproclefttype IN (SELECT oid FROM in_play) OR a.amprocrighttype IN (SELECT oid FROM in_play))
LIMIT 5
"""
# Grammar that runs an operator looked up by name though the query writes no symbol for it: `CASE x
# WHEN`, `IN (…)`, `NULLIF`, `IS DISTINCT FROM`, `JOIN … USING`, `NATURAL JOIN` compare with `=`;
# `BETWEEN` with `>=` and `<=`; `LIKE` and `ILIKE` are `~~` and `~~*`; `SIMILAR TO` is `~`.
_IMPLIED_OPERATORS: Final[dict[str, tuple[str, ...]]] = {
    **dict.fromkeys(("case", "in", "nullif", "distinct", "using", "natural"), ("=",)),
    "between": (">=", "<=", ">", "<"),
    "like": ("~~", "!~~"),
    "ilike": ("~~*", "!~~*"),
    "similar": ("~", "!~"),
}
# Whether the database made any operator, cast, domain or operator-class function at all: the
# common answer, no, costs four index probes; only a yes needs `_HIDDEN_SQL`.
_ANY_MADE_SQL: Final = """
SELECT 1 FROM pg_operator WHERE oid >= 16384
UNION ALL SELECT 1 FROM pg_cast WHERE oid >= 16384
UNION ALL SELECT 1 FROM pg_type WHERE oid >= 16384 AND typtype = 'd'
UNION ALL SELECT 1 FROM pg_amproc WHERE oid >= 16384
LIMIT 1
"""


# SQLSTATE classes of a fault of the server's own: internal, system, configuration file, resources,
# operator intervention.
_SERVER_FAULTS: Final = frozenset({"XX", "58", "F0", "53", "57"})


def _error_text(exc: psycopg.Error) -> str:
    """The server's message, marked as an internal error when its SQLSTATE class says the fault is
    the server's, not the query's (internal, system, configuration file, resources, operator
    intervention): a refusal then withholds its words, which may name files or internals."""
    text = str(exc).strip()
    state = exc.sqlstate or ""
    return f"internal error (SQLSTATE {state}): {text}" if state[:2] in _SERVER_FAULTS else text


class PostgresEngine(CatalogEngine):
    name = "postgres"
    dialect = "postgres"
    # Each column's comment, and those of the same column in every table it inherits from: a
    # partition or an inheriting table has comments of its own (none, usually), and reading it
    # directly reads the parent's personal data. information_schema leaves materialized views
    # out, so their columns (those the role may read) come from pg_attribute; like a view's,
    # their tags are those of the columns they read (_VIEW_READS_SQL follows their rewrite rule).
    columns_sql = (
        "WITH RECURSIVE served(nsp) AS (SELECT %s::text), "
        "anc(rel, ancestor) AS (SELECT inhrelid, inhparent FROM pg_inherits "
        "UNION SELECT anc.rel, i.inhparent FROM anc JOIN pg_inherits i ON i.inhrelid = anc.ancestor), "
        "cols(table_schema, table_name, column_name, data_type, ordinal_position) AS ("
        "SELECT table_schema::text, table_name::text, column_name::text, data_type::text, "
        "ordinal_position::int FROM information_schema.columns, served WHERE table_schema = served.nsp "
        "UNION ALL SELECT n.nspname::text, m.relname::text, a.attname::text, "
        "format_type(a.atttypid, a.atttypmod), a.attnum::int "
        "FROM pg_class m JOIN pg_namespace n ON n.oid = m.relnamespace JOIN served ON n.nspname = served.nsp "
        "JOIN pg_attribute a ON a.attrelid = m.oid AND a.attnum > 0 AND NOT a.attisdropped "
        "WHERE m.relkind = 'm' AND has_column_privilege(m.oid, a.attnum, 'SELECT')) "
        "SELECT c.table_schema, c.table_name, c.column_name, c.data_type, "
        "concat_ws(' ', col_description(r.oid, c.ordinal_position), "
        "(SELECT string_agg(col_description(a.attrelid, a.attnum), ' ') FROM anc "
        "JOIN pg_attribute a ON a.attrelid = anc.ancestor AND a.attname = c.column_name "
        "WHERE anc.rel = r.oid)) "
        "FROM cols c JOIN pg_namespace n ON n.nspname = c.table_schema "
        "JOIN pg_class r ON r.relnamespace = n.oid AND r.relname = c.table_name "
        "ORDER BY c.table_name, c.ordinal_position"
    )
    explain = "EXPLAIN (FORMAT JSON, VERBOSE)"

    def __init__(self, dsn: str, schema: str | None = None) -> None:
        self._dsn = dsn
        self._closed = False
        self._conn = self._connect()
        self._lock = threading.Lock()
        # The schema served: the one given, else the session's (search_path in the DSN, else public).
        self.default_schema = schema or str(self._fetch("SELECT current_schema()")[0][0])

    def _connect(self) -> psycopg.Connection[Any]:
        guard = f"-c default_transaction_read_only=on -c statement_timeout={STATEMENT_TIMEOUT_MS}"
        try:
            given = psycopg.conninfo.conninfo_to_dict(self._dsn).get("options") or ""
            conn = psycopg.connect(
                self._dsn, connect_timeout=_CONNECT_TIMEOUT_SECONDS, options=f"{given} {guard}".strip()
            )
        except psycopg.Error as exc:
            raise DataEngineError("postgres", f"cannot connect: {exc}") from None
        conn.read_only = True
        return conn

    def _live(self) -> psycopg.Connection[Any]:
        """The connection, opened again when the last one was lost (a server restart, an
        administrator's pg_terminate_backend): one failed statement, not a dead server."""
        if self._conn.closed and not self._closed:
            self._conn = self._connect()
        return self._conn

    def tables(self) -> tuple[TableInfo, ...]:
        """The served schema's tables and views, each view with the columns it reads; a view that
        calls a function written in the database is left out (a query naming it is refused)."""
        reads: dict[str, list[tuple[str, str, str]]] = {}
        for view, schema, table, column, comment in self._fetch(_VIEW_READS_SQL, (self.default_schema,)):
            reads.setdefault(view, []).append((f"{schema}.{table}", column, comment))
        opaque = {str(r[0]) for r in self._fetch(_OPAQUE_VIEWS_SQL, (self.default_schema,))}
        parents: dict[str, list[str]] = {}
        for table, schema, parent in self._fetch(_PARENTS_SQL, (self.default_schema,)):
            above = parents.setdefault(table, [])
            if f"{schema}.{parent}" not in above:  # reached twice through multiple inheritance
                above.append(f"{schema}.{parent}")
        return tuple(
            replace(t, reads=tuple(reads.get(t.name, ())), parents=tuple(parents.get(t.name, ())))
            for t in super().tables()
            if t.name not in opaque
        )

    def functions(self, names: Collection[str] | None = None) -> frozenset[str]:
        """Every function, procedure and aggregate outside the system schemas that no extension
        installed and that a call by bare name reaches (`_FUNCTIONS_SQL`): written in the
        database, its body may read any table."""
        wanted = None if names is None else sorted(names)
        if wanted is not None and not self._fetch(_NAMESAKES_SQL, {"names": wanted}):
            return frozenset()
        return frozenset(str(r[0]).casefold() for r in self._fetch(_FUNCTIONS_SQL, {"names": wanted}))

    def hidden_functions(self, sql: str) -> tuple[tuple[str, str], ...]:
        """The database's own operators, casts, domains and operator classes the query may reach,
        each (what it is, the function it runs), when that function is not a built-in that
        computes from its arguments (`_HIDDEN_SQL`): a query reaching one is refused as one
        calling that function by name would be."""
        if not self._fetch(_ANY_MADE_SQL):
            return ()
        operators, words = operators_and_words(sql, self.dialect)
        operators |= {
            symbol for word in words & _IMPLIED_OPERATORS.keys() for symbol in _IMPLIED_OPERATORS[word]
        }
        params = {
            "allowed": sorted(ALLOWED_FUNCTIONS["postgres"]),
            "operators": sorted(operators),
            "words": sorted(words),
        }
        return tuple((str(what), str(fn)) for what, fn in self._fetch(_HIDDEN_SQL, params))

    def _read_plan(self, plan: Any) -> Estimate:
        """The plan's estimate; a Seq Scan with a Filter counts its whole relation, whose rows the
        planner estimates for a plain scan of it alone (one more EXPLAIN, only when there is one);
        an index scan with a Filter counts the rows its index condition finds (`_index_found`)."""
        scans = sorted(filtered_scans(plan))
        sizes: dict[str, float] = {}
        if scans:
            each = sql.SQL(" UNION ALL ").join(
                sql.SQL("SELECT 1 FROM ONLY {}").format(sql.Identifier(schema, relation))
                for schema, relation in scans
            )
            rows = self._fetch(
                sql.SQL("EXPLAIN (FORMAT JSON, VERBOSE) {}").format(each).as_string(self._conn)
            )
            found = plan_estimate(rows[0][0] if rows else None).tables
            sizes = {f"{s}.{r}": float(found.get(f"{s}.{r}", 0.0)) for s, r in scans}
        indexed = {probe: self._index_found(probe) for probe in filtered_index_scans(plan)}
        return plan_estimate(plan, sizes, indexed)

    def _index_found(self, probe: IndexProbe) -> IndexFound:
        """The planner's rows for an index scan's relation alone under its index condition, as the
        plan prints it (one more EXPLAIN each); when that condition cannot be planned alone (it
        names an outer row's column or a parameter), under its filter, and with no condition."""
        try:
            return IndexFound(self._rows_where(probe, probe.condition), None, 0.0)
        except DataEngineError:
            pass
        whole = self._rows_where(probe, None)
        try:
            passing: float | None = self._rows_where(probe, probe.filter)
        except DataEngineError:
            passing = None
        return IndexFound(None, passing, whole)

    def _rows_where(self, probe: IndexProbe, where: str | None) -> float:
        query = sql.SQL("EXPLAIN (FORMAT JSON) SELECT 1 FROM ONLY {} AS {}").format(
            sql.Identifier(probe.schema, probe.relation), sql.Identifier(probe.alias)
        )
        if where is not None:
            query = query + sql.SQL(" WHERE ") + sql.SQL(where)  # PostgreSQL's text of the query's own
        rows = self._fetch(query.as_string(self._conn))
        return plan_estimate(rows[0][0] if rows else None).total

    def run(self, sql: str, max_rows: int) -> QueryResult:
        with self._lock:
            try:
                conn = self._live()
                # A server-side cursor: only the rows returned cross the wire (a client-side one
                # receives the whole result first, gigabytes for a cross join within the timeout).
                with conn.transaction(force_rollback=True), conn.cursor(name="guarded") as cur:
                    cur.execute(sql)  # a checked read-only statement
                    names = tuple(d.name for d in cur.description or ())
                    rows = cur.fetchmany(max_rows + 1)
            except psycopg.Error as exc:
                raise DataEngineError("postgres", str(exc).strip()) from None
        return QueryResult.cut(names, rows, max_rows)

    def output_names(self, sql: str) -> tuple[str, ...]:
        """From the server's description of the statement, prepared (unnamed) and never run."""
        with self._lock:
            try:
                conn = self._live()
                prepared = conn.pgconn.prepare(b"", sql.encode(conn.info.encoding))
                if prepared.status != pq.ExecStatus.COMMAND_OK:
                    raise psycopg.Error((prepared.error_message or b"").decode(errors="replace"))
                described = conn.pgconn.describe_prepared(b"")
                fields = [described.fname(i) or b"" for i in range(described.nfields)]
            except psycopg.Error as exc:
                raise DataEngineError("postgres", str(exc).strip()) from None
        return tuple(f.decode(conn.info.encoding, errors="replace") for f in fields)

    def _fetch(self, sql: str, params: tuple[Any, ...] | dict[str, Any] | None = None) -> list[Any]:
        with self._lock:
            try:
                conn = self._live()
                with conn.transaction(force_rollback=True), conn.cursor() as cur:
                    cur.execute(sql, params)
                    return cur.fetchall()
            except psycopg.Error as exc:
                raise DataEngineError("postgres", _error_text(exc)) from None

    def close(self) -> None:
        self._closed = True
        self._conn.close()

"""DuckDB, the embedded default: a database file opened read-only, estimates from EXPLAIN.

The connection is opened with ``read_only=True`` and ``enable_external_access=false``, so even a
statement the parser let through cannot write the file or read other files from disk.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Mapping
from typing import Any, Final

import duckdb
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from mcp_elicit.apps.data.engine import ColumnInfo, QueryResult, TableInfo, with_view_reads
from mcp_elicit.apps.data.guard import Estimate
from mcp_elicit.errors import DataEngineError

__all__ = ["STATEMENT_TIMEOUT_SECONDS", "DuckDBEngine", "plan_estimate", "unsampled"]


# Joins that compare every pair of their inputs' rows: the work is the product of the two.
_PAIRWISE_JOINS: Final = frozenset({"CROSS_PRODUCT", "NESTED_LOOP_JOIN", "BLOCKWISE_NL_JOIN"})
# Operators that stop pulling rows once they have their count; and those that hand on each row as
# it comes, one out for one in, so a LIMIT above them stops the scan below them too.
_LIMITS: Final = frozenset({"STREAMING_LIMIT", "LIMIT"})
_ROW_FOR_ROW: Final = frozenset({"PROJECTION", "STREAMING_LIMIT", "LIMIT"})
# Operators that sample their input (a reservoir reads all of it; a Bernoulli sample each row):
# DuckDB estimates them, and the scans below them, at 0 rows.
_SAMPLES: Final = frozenset({"RESERVOIR_SAMPLE", "STREAMING_SAMPLE"})
# Longest a guarded query may run on DuckDB before the server interrupts it: as long as
# PostgreSQL's statement_timeout here (postgres.STATEMENT_TIMEOUT_MS); DuckDB has no such setting,
# and a query the planner misjudged would otherwise hold the one connection for ever.
STATEMENT_TIMEOUT_SECONDS: Final = 30.0
# Rows DuckDB reads at a time (its vector size): each thread scanning may have read one more
# vector when the LIMIT above it is met.
_VECTOR_ROWS: Final = 2048
# A late-materialization join: DuckDB finds a LIMIT's or TOP_N's rows by their row ids over a narrow
# scan, then fetches their other columns with a second scan of the same table that keeps only those
# row ids (a SEMI join on this condition), skipping every row group none of them falls in.
_ROWID_JOIN: Final = "rowid = rowid"
# Operators that hand on no more rows than they take from their one input.
_NO_MORE_OUT: Final = frozenset({"PROJECTION", "ORDER_BY", "FILTER", "STREAMING_LIMIT", "LIMIT", "TOP_N"})


def _cardinality(node: Any) -> float | None:
    info = node.get("extra_info") if isinstance(node, dict) else None
    rows = info.get("Estimated Cardinality") if isinstance(info, dict) else None
    if rows is None:
        return None
    try:
        return max(0.0, float(str(rows).lstrip("~")))
    except ValueError:
        raise DataEngineError("duckdb", f"unreadable estimate {rows!r} for {node.get('name')}") from None


def _whole_rows(text: Any) -> int | None:
    """A LIMIT's or OFFSET's row count as the plan writes it; None for anything else (a percentage,
    an expression computed while the query runs)."""
    text = str(text).strip()
    return int(text) if text.isdigit() else None


def _limit_cap(node: dict[str, Any], threads: int) -> float | None:
    """The rows a LIMIT lets the scan below it read, when it streams (`_LIMITS`): what it returns
    and skips, plus one vector per thread each may have read ahead when the limit was met."""
    info = node.get("extra_info")
    if node.get("name") not in _LIMITS or not isinstance(info, dict):
        return None
    limit, offset = _whole_rows(info.get("Limit")), _whole_rows(info.get("Offset", 0))
    if limit is None or offset is None:
        return None
    return float(limit + offset + _VECTOR_ROWS * max(1, threads))


def _single_path(node: Any) -> dict[str, Any] | None:
    """The first node below `node` (itself included) that is not a projection with one child."""
    while isinstance(node, dict) and node.get("name") == "PROJECTION":
        children = [c for c in node.get("children") or [] if isinstance(c, dict)]
        if len(children) != 1:
            return None
        node = children[0]
    return node if isinstance(node, dict) else None


def _table_key(info: Any) -> str:
    table = info.get("Table") if isinstance(info, dict) else None
    return ".".join(part.strip('"') for part in table.split(".")[-2:]) if isinstance(table, str) else ""


def _late_fetch(
    node: dict[str, Any], groups: Mapping[str, float], in_list: int
) -> tuple[int, int, float, float] | None:
    """For a late-materialization join (`_ROWID_JOIN`), ``(id of the fetching scan, id of the scan
    that found the row ids, the most rows the fetching scan reads, the row ids)``; None for any
    other node.

    The fetching scan reads only the row groups the row ids fall in (a group holds at most
    `groups[table]` rows). The row ids of a LIMIT straight over a scan that filters nothing are
    those of consecutive rows (from the OFFSET on, in the table's order): the groups they span hold
    them and at most one group's rows less one on either side. Other row ids (a TOP_N's, a LIMIT's
    over a filter) may fall anywhere: each in its own group, when DuckDB passes them to the scan as
    a list (at most `in_list` of them); more are passed as a range, which may span every group."""
    info, children = node.get("extra_info"), [c for c in node.get("children") or [] if isinstance(c, dict)]
    if node.get("name") != "HASH_JOIN" or not isinstance(info, dict) or len(children) != 2:
        return None
    if info.get("Join Type") != "SEMI" or info.get("Conditions") != _ROWID_JOIN:
        return None
    fetch, picker = _single_path(children[0]), _single_path(children[1])
    if fetch is None or picker is None or fetch.get("name") != "SEQ_SCAN":
        return None
    key = _table_key(fetch.get("extra_info"))
    size = groups.get(key)
    picked = picker.get("extra_info")
    if size is None or picker.get("name") not in {*_LIMITS, "TOP_N"} or not isinstance(picked, dict):
        return None
    count = _whole_rows(picked.get("Limit" if picker.get("name") in _LIMITS else "Top"))
    if count is None:
        return None
    below = [c for c in picker.get("children") or [] if isinstance(c, dict)]
    scan = _single_path(below[0]) if len(below) == 1 else None
    if scan is None or scan.get("name") != "SEQ_SCAN" or _table_key(scan.get("extra_info")) != key:
        return None
    scan_info = scan.get("extra_info")
    plain = isinstance(scan_info, dict) and not (scan_info.get("Filters") or scan_info.get("Sample Method"))
    if picker.get("name") in _LIMITS and plain:
        return id(fetch), id(scan), min(count * size, count + 2 * (size - 1)), float(count)
    if count <= in_list:
        return id(fetch), id(scan), count * size, float(count)
    return None


def _nodes(roots: list[Any]) -> list[dict[str, Any]]:
    """Every node of the plan, each before its children."""
    found: list[dict[str, Any]] = []
    stack = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.append(node)
            stack.extend(node.get("children") or [])
    return found


def _late_outputs(nodes: list[dict[str, Any]], joins: Mapping[int, float]) -> dict[int, float]:
    """The most rows a late-materialization join (`joins`: its row ids) hands on, and each node
    above it that hands on no more than it takes: DuckDB estimates them all at the table's rows."""
    out: dict[int, float] = {}
    for node in reversed(nodes):  # children first
        children = [c for c in node.get("children") or [] if isinstance(c, dict)]
        if id(node) in joins:
            out[id(node)] = joins[id(node)]
        elif node.get("name") in _NO_MORE_OUT and len(children) == 1 and id(children[0]) in out:
            out[id(node)] = out[id(children[0])]
    return out


def plan_estimate(
    plan: Any,
    threads: int = 1,
    sizes: Mapping[str, float] | None = None,
    groups: Mapping[str, float] | None = None,
    in_list: int = 0,
) -> Estimate:
    """Per-table rows from DuckDB's ``EXPLAIN (FORMAT JSON)`` plan: each scan's "Estimated
    Cardinality" under its "Table" (``catalog.schema.table``, kept as ``schema.table``); and the
    most rows one operator handles: its own estimate or, for a cross product or nested-loop join,
    the pairs it compares (the product of its two inputs' estimates).

    A LIMIT stops the scan that feeds it when only projections stand between them and the scan
    filters nothing (`_limit_cap`): that scan reads and hands on about what the LIMIT takes, not
    the table. Anything else between them (an ORDER BY, an aggregate, a join, a filter, which
    may drop every row it reads) leaves the scan's whole estimate counted.

    A scan with a filter reads its table, not only the rows that pass (its zone maps may skip some
    row groups, never more): it counts the table's stored row count (`sizes`, by
    ``schema.table``) when that is more; so does a sampled scan (DuckDB estimates it at 0 rows,
    though a system sample reads whole vectors and a sample above the scan reads all of it).

    A late-materialization join (`_late_fetch`) reads its table twice: the scan fetching the rows
    counts the row groups it reads (`groups`: the most rows a group of the table holds; `in_list`:
    DuckDB's ``dynamic_or_filter_threshold``). Both reads count in the total, but the table once
    under its name: their sum, at most the table's rows."""
    tables: dict[str, float] = {}
    read = processed = 0.0
    roots = list(plan) if isinstance(plan, list) else [plan]
    nodes = _nodes(roots)
    lates = {id(node): late for node in nodes if (late := _late_fetch(node, groups or {}, in_list))}
    fetches = {late[0]: late[2] for late in lates.values()}
    pairs = {late[1]: late[0] for late in lates.values()}  # the scan finding row ids -> the fetching one
    outputs = _late_outputs(nodes, {join: late[3] for join, late in lates.items()})
    scans: dict[int, tuple[str, float, float]] = {}  # key, rows read, the table's rows
    stack: list[tuple[Any, float | None, bool]] = [(node, None, False) for node in roots]
    while stack:
        node, cap, sampled = stack.pop()
        if not isinstance(node, dict):
            continue
        children = [c for c in node.get("children") or [] if isinstance(c, dict)]
        limit = _limit_cap(node, threads)
        below = limit if limit is not None else cap if node.get("name") in _ROW_FOR_ROW else None
        under_sample = sampled or node.get("name") in _SAMPLES
        stack.extend((c, below, under_sample) for c in children)
        rows = _cardinality(node)
        info = node.get("extra_info") or {}
        table = info.get("Table") if isinstance(info, dict) else None
        key = _table_key(info)
        whole = info.get("Filters") or info.get("Sample Method") or sampled
        stored = (sizes or {}).get(key, 0.0)
        if rows is not None and isinstance(table, str) and whole:
            rows = max(rows, stored)
        elif cap is not None and rows is not None and isinstance(table, str):
            rows = min(rows, cap)
        if rows is not None and id(node) in fetches:
            rows = min(max(rows, stored), fetches[id(node)])
        handled = rows or 0.0
        if cap is not None:
            handled = min(handled, cap)
        handled = min(handled, outputs.get(id(node), handled))
        if node.get("name") in _PAIRWISE_JOINS and len(children) == 2:
            handled = max(handled, (_cardinality(children[0]) or 0.0) * (_cardinality(children[1]) or 0.0))
        processed = max(processed, handled)
        if isinstance(table, str) and rows is not None:
            scans[id(node)] = (key, rows, max(stored, _cardinality(node) or 0.0))
    once = {fetch for finder, fetch in pairs.items() if finder in scans and fetch in scans}
    for scan, (key, rows, size) in scans.items():
        if scan in once:
            continue
        read += rows
        if scan in pairs and pairs[scan] in once:
            fetched = scans[pairs[scan]][1]
            read += fetched
            rows = min(rows + fetched, max(size, scans[pairs[scan]][2]))
        tables[key] = tables.get(key, 0.0) + rows
    return Estimate.of(tables, processed=processed, read=read)


def unsampled(sql: str) -> str:
    """The query without its samples (`USING SAMPLE`, `TABLESAMPLE`), for its estimate: DuckDB
    estimates a sampled scan, and every step above it, at 0 rows, though a reservoir or Bernoulli
    sample reads its whole input and a system sample whole vectors of it, so a join of samples
    would count no pairs. The text as given when there is none."""
    if "sample" not in sql.casefold():  # USING SAMPLE, TABLESAMPLE: no need to parse it again
        return sql
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (SqlglotError, RecursionError):  # parse_read_only refused what this cannot parse
        return sql
    if tree.find(exp.TableSample) is None:
        return sql
    for sample in list(tree.find_all(exp.TableSample)):
        sample.pop()
    return str(tree.sql("duckdb"))


class DuckDBEngine:
    name = "duckdb"
    dialect = "duckdb"
    default_schema = "main"

    def __init__(self, path: str, statement_timeout: float = STATEMENT_TIMEOUT_SECONDS) -> None:
        self._timeout = statement_timeout
        try:
            self._conn = duckdb.connect(path, read_only=True, config={"enable_external_access": False})
        except duckdb.Error as exc:
            raise DataEngineError("duckdb", f"cannot open {path}: {exc}") from None
        self._lock = threading.Lock()  # one DuckDB connection serves one statement at a time
        self._macros: frozenset[str] | None = None
        self._sizes: dict[str, float] | None = None
        self._groups: dict[str, float] = {}
        self._threads = int(self._fetch("SELECT current_setting('threads')")[0][0])
        # 0 where DuckDB has no such setting: row ids that may fall anywhere then count the table
        found = self._fetch("SELECT value FROM duckdb_settings() WHERE name = 'dynamic_or_filter_threshold'")
        self._in_list = int(found[0][0]) if found and str(found[0][0]).isdigit() else 0

    def tables(self) -> tuple[TableInfo, ...]:
        rows = self._fetch(
            "SELECT schema_name, table_name, column_name, data_type, coalesce(comment, '') "
            "FROM duckdb_columns() WHERE NOT internal AND database_name = current_database() "
            "ORDER BY schema_name, table_name, column_index"
        )
        found: dict[tuple[str, str], list[ColumnInfo]] = {}
        for schema, table, column, kind, comment in rows:
            found.setdefault((schema, table), []).append(ColumnInfo(column, kind, comment))
        tables = tuple(TableInfo(s, t, tuple(cols)) for (s, t), cols in found.items())
        views = self._fetch(
            "SELECT schema_name, view_name, sql FROM duckdb_views() "
            "WHERE NOT internal AND database_name = current_database()"
        )
        return with_view_reads(tables, views, self.dialect, self.functions()) if views else tables

    def functions(self, names: Collection[str] | None = None) -> frozenset[str]:
        """The database's own macros that a call by bare name reaches (those of the current schema,
        which DuckDB looks in before its built-ins), among `names`: their bodies may read any
        table. A macro in another schema is reached only by a call naming its schema, which the
        guard refuses. Read once: while this read-only connection is open no other process can
        open the file to write, so they cannot change (and listing them costs tens of ms)."""
        if self._macros is None:
            rows = self._fetch(
                "SELECT DISTINCT function_name FROM duckdb_functions() WHERE NOT internal"
                " AND database_name = current_database() AND schema_name = current_schema()"
            )
            self._macros = frozenset(str(r[0]).casefold() for r in rows)
        return self._macros if names is None else self._macros & frozenset(names)

    def hidden_functions(self, sql: str) -> tuple[tuple[str, str], ...]:
        """Nothing: a DuckDB database cannot define operators, casts or domain checks of its own."""
        return ()

    def estimate(self, sql: str) -> Estimate:
        """From the plan; for a query that samples, the larger of its own plan's estimate (a sampled
        scan counting its table) and that of the query without its samples (`unsampled`), whose
        joins and steps DuckDB estimates from the real rows, not from 0."""
        seen = self._plan_estimate(sql)
        whole = unsampled(sql)
        if whole == sql:
            return seen
        other = self._plan_estimate(whole)
        tables = {
            name: max(seen.tables.get(name, 0.0), other.tables.get(name, 0.0))
            for name in {*seen.tables, *other.tables}
        }
        return Estimate.of(tables, processed=max(seen.processed, other.processed))

    def _plan_estimate(self, sql: str) -> Estimate:
        rows = self._fetch(f"EXPLAIN (FORMAT JSON) {sql}")
        try:
            plan = json.loads(rows[0][1])
        except (IndexError, ValueError) as exc:
            raise DataEngineError("duckdb", f"unreadable EXPLAIN output: {exc}") from None
        groups = self._group_rows(plan) if _ROWID_JOIN in rows[0][1] else {}
        return plan_estimate(plan, self._threads, self._table_rows(), groups, self._in_list)

    def _group_rows(self, plan: Any) -> dict[str, float]:
        """The most rows a row group holds, for each table the plan scans (``schema.table``), read
        once per table from its storage; a table whose storage cannot be read is left out (its
        scans then count whole)."""
        stack, keys = [plan], set()
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                keys.add(_table_key(node.get("extra_info")))
                stack.extend(node.get("children") or [])
        for key in keys - {""} - set(self._groups):
            quoted = ".".join('"' + part.replace('"', '""') + '"' for part in key.split(".", 1))
            try:
                found = self._fetch(
                    "SELECT max(n) FROM (SELECT sum(count) AS n FROM pragma_storage_info(?)"
                    " WHERE column_path = '[0]' GROUP BY row_group_id)",
                    [quoted],
                )
            except DataEngineError:
                continue
            if found and found[0][0] is not None:
                self._groups[key] = float(found[0][0])
        return self._groups

    def _table_rows(self) -> dict[str, float]:
        """Each table's stored row count (``schema.table``), read once: while this read-only
        connection is open no other process can write the file."""
        if self._sizes is None:
            rows = self._fetch(
                "SELECT schema_name, table_name, estimated_size FROM duckdb_tables()"
                " WHERE database_name = current_database()"
            )
            self._sizes = {f"{schema}.{table}": float(size or 0) for schema, table, size in rows}
        return self._sizes

    def run(self, sql: str, max_rows: int) -> QueryResult:
        """The query's first rows; a query still running after the statement timeout is
        interrupted (DataEngineError)."""
        with self._lock:
            done = threading.Event()
            timer = threading.Timer(self._timeout, lambda: None if done.is_set() else self._conn.interrupt())
            timer.start()
            try:
                cursor = self._conn.execute(sql)
                names = tuple(d[0] for d in cursor.description or ())
                rows = cursor.fetchmany(max_rows + 1)
            except duckdb.InterruptException:
                raise DataEngineError("duckdb", f"stopped: still running after {self._timeout:g} s") from None
            except duckdb.Error as exc:
                raise DataEngineError("duckdb", str(exc)) from None
            finally:
                done.set()
                timer.cancel()
        return QueryResult.cut(names, rows, max_rows)

    def output_names(self, sql: str) -> tuple[str, ...]:
        """From ``DESCRIBE``, which binds the query without running it."""
        return tuple(str(r[0]) for r in self._fetch(f"DESCRIBE {sql}"))

    def _fetch(self, sql: str, params: list[Any] | None = None) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except duckdb.Error as exc:
                raise DataEngineError("duckdb", str(exc)) from None

    def close(self) -> None:
        self._conn.close()

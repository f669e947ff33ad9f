"""The guard's whole look at one query, before anything runs: parse, catalog, estimate, decide.

Synchronous (it talks to the engine), so the server runs it on one worker thread; the benchmark
calls it directly to measure what the guard costs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

from sqlglot.schema import MappingSchema

from mcp_elicit.apps.data.catalog import DataConfig
from mcp_elicit.apps.data.engine import Engine, TableInfo
from mcp_elicit.apps.data.functions import called_names
from mcp_elicit.apps.data.guard import Decision, Estimate, Thresholds, decide
from mcp_elicit.apps.data.sql import (
    ParsedQuery,
    Schema,
    compiled_schema,
    parse_read_only,
    read_columns,
    refuse_database_functions,
    refuse_hidden_functions,
)
from mcp_elicit.apps.data.wording import recorded_detail
from mcp_elicit.errors import DataEngineError, QueryRefused

__all__ = ["PLANNER_THREADS", "Assessment", "CatalogCache", "assess", "schema_of"]

logger = logging.getLogger("mcp_elicit.data")

# Threads that run engines' EXPLAIN beside the guard's own parsing (one per query in flight; more
# queries than this wait their turn rather than pile threads on the engine).
PLANNER_THREADS: Final = 4
_PLANNER = ThreadPoolExecutor(max_workers=PLANNER_THREADS, thread_name_prefix="mcp-elicit-plan")


@dataclass(frozen=True)
class Assessment:
    parsed: ParsedQuery
    tables: tuple[TableInfo, ...] | None  # None: the catalog could not be read
    estimate: Estimate | None  # None: the engine gave no estimate
    thresholds: Thresholds
    decision: Decision
    no_estimate_why: str = ""  # the engine's own words when it gave no estimate


def schema_of(tables: Iterable[TableInfo]) -> Schema:
    out: dict[str, dict[str, dict[str, str]]] = {}
    for table in tables:
        out.setdefault(table.schema, {})[table.name] = {c.name: c.type for c in table.columns}
    return out


class CatalogCache:
    """The engine's catalog, read at most once per `ttl` seconds (0: every time); thread-safe."""

    def __init__(self, engine: Engine, ttl: float, clock: Callable[[], float]) -> None:
        self.engine, self.ttl, self.clock = engine, ttl, clock
        self._lock = threading.Lock()
        self._snapshot: tuple[float, tuple[TableInfo, ...], MappingSchema] | None = None

    def get(self, *, fresh: bool = False) -> tuple[tuple[TableInfo, ...], MappingSchema] | None:
        """The tables and their compiled schema, or None when the catalog cannot be read."""
        with self._lock:
            now = self.clock()
            snap = self._snapshot
            if snap is not None and not fresh and 0 <= now - snap[0] < self.ttl:
                return snap[1], snap[2]
            try:
                tables = self.engine.tables()
            except DataEngineError as exc:
                logger.warning("catalog lookup failed: %s", exc)
                self._snapshot = None
                return None
            self._snapshot = (now, tables, compiled_schema(schema_of(tables), self.engine.dialect))
            return tables, self._snapshot[2]

    def functions(self, names: frozenset[str]) -> frozenset[str] | None:
        """Which of `names` are functions written in the database that a bare call reaches, read
        now rather than from the snapshot (one made a moment ago counts); None when they cannot
        be read. Only the query's own names are looked up, so this is one small catalog read."""
        if not names:
            return frozenset()
        try:
            return frozenset(f.casefold() for f in self.engine.functions(names))
        except DataEngineError as exc:
            logger.warning("function lookup failed: %s", exc)
            return None

    def hidden_functions(self, sql: str) -> tuple[tuple[str, str], ...] | None:
        """The database's own operators, casts, domains and operator classes `sql` may reach,
        with the function each runs (`Engine.hidden_functions`), read now; None when they
        cannot be read."""
        try:
            return self.engine.hidden_functions(sql)
        except DataEngineError as exc:
            logger.warning("operator and cast lookup failed: %s", exc)
            return None


def _estimate(engine: Engine, sql: str) -> tuple[Estimate | None, str]:
    """The engine's estimate, or None with the engine's error in words."""
    try:
        return engine.estimate(sql), ""
    except DataEngineError as exc:
        logger.info("no estimate: %s", recorded_detail(str(exc)))  # the engine may quote the query
        return None, str(exc)


def _read(
    parsed: ParsedQuery,
    catalog: CatalogCache,
    default_schema: str,
    snapshot: tuple[tuple[TableInfo, ...], MappingSchema] | None,
) -> tuple[tuple[TableInfo, ...] | None, set[tuple[str, str]]]:
    if snapshot is None:
        return None, set()
    try:
        return snapshot[0], read_columns(parsed, snapshot[1], default_schema)
    except QueryRefused:
        snapshot = catalog.get(fresh=True)  # a table made since the snapshot: look again once
        if snapshot is None:
            raise
        return snapshot[0], read_columns(parsed, snapshot[1], default_schema)


def assess(
    engine: Engine, config: DataConfig, sql: str, *, can_ask: bool, catalog: CatalogCache | None = None
) -> Assessment:
    """QueryRefused when `sql` is not one read statement or names an unknown column; otherwise
    the decision with the facts behind it.

    Once the text is known to be one read statement, the engine plans it on another thread while
    this one resolves the columns: the planner works outside the GIL, so the guard's own work
    mostly hides behind the EXPLAIN round trip."""
    parsed = parse_read_only(sql, engine.dialect)
    catalog = catalog or CatalogCache(engine, 0, lambda: 0.0)
    snapshot = catalog.get()
    # Before planning, which may run one; looked up now, not from the snapshot, which may predate it.
    defined = catalog.functions(called_names(parsed.text, parsed.dialect))
    hidden = catalog.hidden_functions(parsed.text) if defined is not None else None
    if defined is None or hidden is None:
        if config.fail_closed.catalog:
            raise QueryRefused(
                "no_catalog",
                "the catalog could not be read to check which functions the database defines, so the"
                " query is refused; try again later",
            )
        snapshot = None
    else:
        refuse_database_functions(parsed, defined)
        refuse_hidden_functions(hidden)
    planning = _PLANNER.submit(_estimate, engine, sql)
    try:
        tables, read = _read(parsed, catalog, engine.default_schema, snapshot)
    finally:
        estimate, no_estimate_why = planning.result()
    thresholds = config.thresholds(engine.name, engine.default_schema)
    decision = decide(
        estimate=estimate,
        thresholds=thresholds,
        pii=config.pii_columns(tables, read, engine.default_schema) if tables is not None else (),
        catalog_ok=tables is not None,
        can_ask=can_ask,
        fail_closed=config.fail_closed,
    )
    return Assessment(parsed, tables, estimate, thresholds, decision, no_estimate_why)

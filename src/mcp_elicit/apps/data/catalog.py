"""The data server's configuration and catalog: one TOML file, all keys optional.

```toml
[guard]
pii_tags = ["pii", "personal", "sensitive"]   # matched as whole words, never substrings
max_rows = 1000                                # rows returned to the client at most
catalog_ttl_seconds = 30                       # reuse the engine's catalog this long (0: per query)
fail_closed = { estimate = true, catalog = true, elicitation = true }

[thresholds]                                   # rows a query may read before it asks, per engine
duckdb = 1_000_000
postgres = 1_000_000
trino = 1_000_000

[tables."main.events"]                         # per table: its own threshold and column tags
threshold = 5_000_000
[tables."main.customers".columns]
email = "pii"
phone = ["personal", "contact"]
```

Column tags come from here and from the engine's column comments (``COMMENT ON COLUMN``); a
column is personal data when either names one of `pii_tags` as a whole word.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcp_elicit.apps.data.engine import DEFAULT_MAX_ROWS, TableInfo
from mcp_elicit.apps.data.guard import (
    DEFAULT_PII_TAGS,
    DEFAULT_THRESHOLD_ROWS,
    FailClosed,
    PiiColumn,
    Thresholds,
    matching_tags,
)
from mcp_elicit.errors import ConfigError

__all__ = ["DEFAULT_CATALOG_TTL_SECONDS", "DataConfig", "config_from_mapping", "load_config"]

_SECTIONS = {"guard", "thresholds", "tables"}
_GUARD_KEYS = {"pii_tags", "max_rows", "fail_closed", "catalog_ttl_seconds"}

# How long a catalog snapshot (tables, columns, comments) is reused before the engine is asked
# again. Reading DuckDB's catalog costs more than the EXPLAIN itself, so it is not read per query;
# an unknown table or column refreshes it at once, a changed comment is seen within this window.
DEFAULT_CATALOG_TTL_SECONDS: Final = 30.0
_FAIL_KEYS = {"estimate", "catalog", "elicitation"}


@dataclass(frozen=True)
class DataConfig:
    pii_tags: tuple[str, ...] = DEFAULT_PII_TAGS
    max_rows: int = DEFAULT_MAX_ROWS
    fail_closed: FailClosed = field(default_factory=FailClosed)
    engine_thresholds: Mapping[str, float] = field(default_factory=dict)
    table_thresholds: Mapping[str, float] = field(default_factory=dict)
    column_tags: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    catalog_ttl: float = DEFAULT_CATALOG_TTL_SECONDS

    def thresholds(self, engine: str, default_schema: str) -> Thresholds:
        per_table = {_qualify(t, default_schema): v for t, v in self.table_thresholds.items()}
        return Thresholds(self.engine_thresholds.get(engine, DEFAULT_THRESHOLD_ROWS), per_table)

    def tags(self, table: TableInfo, column: str, comment: str, default_schema: str) -> tuple[str, ...]:
        """Every tag text known for a column: the catalog's, then its comment; a partition's or an
        inheriting table's column adds the catalog's tags of that column in the tables above it
        (`TableInfo.parents`), a view's column those of every column the view reads
        (`TableInfo.reads`)."""
        texts = self._own_tags(table.qualified, column, comment, default_schema)
        for parent in table.parents:
            texts += self._own_tags(parent, column, "", default_schema)
        for base, base_column, base_comment in table.reads:
            texts += self._own_tags(base, base_column, base_comment, default_schema)
        return texts

    def _own_tags(self, qualified: str, column: str, comment: str, default_schema: str) -> tuple[str, ...]:
        listed = self.column_tags.get((qualified, column))
        schema, _, name = qualified.rpartition(".")
        if listed is None and schema == default_schema:
            listed = self.column_tags.get((name, column))
        return (*(listed or ()), *((comment,) if comment else ()))

    def pii_columns(
        self, tables: Iterable[TableInfo], read: set[tuple[str, str]], default_schema: str
    ) -> tuple[PiiColumn, ...]:
        """The columns in `read` ((qualified table, column)) whose tags name a PII tag."""
        out: list[PiiColumn] = []
        for table in tables:
            for col in table.columns:
                if (table.qualified, col.name) not in read:
                    continue
                found = matching_tags(self.tags(table, col.name, col.comment, default_schema), self.pii_tags)
                if found:
                    out.append(PiiColumn(table.qualified, col.name, found))
        return tuple(sorted(out, key=lambda c: (c.table, c.column)))


def _qualify(table: str, default_schema: str) -> str:
    return table if "." in table else f"{default_schema}.{table}"


def _number(value: Any, key: str, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(key, "must be a number of rows, 0 or more", path)
    return float(value)


def _tag_list(value: Any, key: str, path: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(key, "must be a tag or a list of tags", path)


def _unknown(data: Mapping[str, Any], allowed: set[str], where: str, path: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise ConfigError(f"{where}{extra[0]}", "unknown key", path)


def config_from_mapping(data: Mapping[str, Any], path: str = "") -> DataConfig:
    _unknown(data, _SECTIONS, "", path)
    guard = data.get("guard", {})
    _unknown(guard, _GUARD_KEYS, "guard.", path)
    tags = _tag_list(guard.get("pii_tags", list(DEFAULT_PII_TAGS)), "guard.pii_tags", path)
    max_rows = guard.get("max_rows", DEFAULT_MAX_ROWS)
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ConfigError("guard.max_rows", "must be a whole number, 1 or more", path)
    fail = guard.get("fail_closed", {})
    _unknown(fail, _FAIL_KEYS, "guard.fail_closed.", path)
    if not all(isinstance(v, bool) for v in fail.values()):
        raise ConfigError("guard.fail_closed", "each check takes true or false", path)
    engines = {k: _number(v, f"thresholds.{k}", path) for k, v in data.get("thresholds", {}).items()}
    table_limits: dict[str, float] = {}
    column_tags: dict[tuple[str, str], tuple[str, ...]] = {}
    for table, spec in data.get("tables", {}).items():
        _unknown(spec, {"threshold", "columns"}, f"tables.{table}.", path)
        if "threshold" in spec:
            table_limits[table] = _number(spec["threshold"], f"tables.{table}.threshold", path)
        for column, value in spec.get("columns", {}).items():
            column_tags[(table, column)] = _tag_list(value, f"tables.{table}.columns.{column}", path)
    ttl = _number(
        guard.get("catalog_ttl_seconds", DEFAULT_CATALOG_TTL_SECONDS), "guard.catalog_ttl_seconds", path
    )
    return DataConfig(tags, max_rows, FailClosed(**fail), engines, table_limits, column_tags, ttl)


def load_config(path: str | Path | None) -> DataConfig:
    """The configuration in `path` (TOML), or the defaults when `path` is None."""
    if path is None:
        return DataConfig()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError("", f"cannot read: {exc.strerror or exc}", str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("", f"not TOML: {exc}", str(path)) from None
    return config_from_mapping(data, str(path))

"""The guarded data server: asks before an expensive or personal-data query runs (issue 11).

`build_data_server(engine, config)` embeds it; `open_engine` picks an engine from a name and a
DSN; `mcp-elicit serve-data` runs it (with no arguments, on the sample DuckDB database).
Names load on first use, so importing the pure `guard` module never pulls in the SDK or an engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mcp_elicit.extras import missing

if TYPE_CHECKING:
    from mcp_elicit.apps.data.catalog import DataConfig, load_config
    from mcp_elicit.apps.data.launch import open_engine, serve_data
    from mcp_elicit.apps.data.server import build_data_server

__all__ = ["DataConfig", "build_data_server", "load_config", "open_engine", "serve_data"]

_SOURCES = {
    "DataConfig": "mcp_elicit.apps.data.catalog",
    "load_config": "mcp_elicit.apps.data.catalog",
    "open_engine": "mcp_elicit.apps.data.launch",
    "serve_data": "mcp_elicit.apps.data.launch",
    "build_data_server": "mcp_elicit.apps.data.server",
}


def __getattr__(name: str) -> Any:
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'mcp_elicit.apps.data' has no attribute {name!r}")
    try:
        module = importlib.import_module(source)
    except ModuleNotFoundError as exc:  # duckdb, sqlglot, trino or psycopg: the `data` extra
        raise missing("data", exc) from exc
    return getattr(module, name)

"""Optional dependencies, installed by extras: what each part needs and the error when it is missing.

A client, or a server kit without persistence, needs none of these; `pip install mcp-elicit`
stays light (the DuckDB engine alone is about 70 MB). `make demo` and `make test` install them all.
"""

from __future__ import annotations

from mcp_elicit.errors import ConfigError

__all__ = ["EXTRAS", "missing"]

# extra -> what it brings
EXTRAS = {
    "data": "the guarded data server (DuckDB, sqlglot, the Trino client, psycopg)",
    "postgres": "the PostgreSQL audit sink (psycopg)",
    "redis": "hand-off state, vault rows and the replay guard shared through Redis",
}


def missing(extra: str, exc: ModuleNotFoundError) -> ConfigError:
    """The error for a part whose optional dependency `exc.name` is not installed."""
    return ConfigError("dependencies", f"{exc.name} is not installed; pip install 'mcp-elicit[{extra}]'")

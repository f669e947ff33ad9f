"""Engines for the data server tests: the sample DuckDB file (once per session, in a temp dir) and a
unique schema on the real PostgreSQL (dropped afterwards)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcp_elicit.apps.data.catalog import DataConfig, config_from_mapping
from mcp_elicit.apps.data.sample import ensure_sample

POSTGRES_ENV = "MCP_ELICIT_TEST_POSTGRES"
# PostgreSQL gets a smaller `events` table and a threshold to match (thresholds are per engine).
PG_EVENTS = 20_000
CATALOG = {
    "thresholds": {"postgres": 10_000},
    "tables": {"customers": {"columns": {"phone": ["contact", "pii"]}}},
}


@dataclass(frozen=True)
class Target:
    """One engine under test: how to open it in-process and how to name it on the command line."""

    engine: str
    dsn: str
    schema: str  # the schema the tables live in: "main" on DuckDB, a fresh one on PostgreSQL
    config: DataConfig
    catalog_toml: str


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _toml() -> str:
    return '[thresholds]\npostgres = 10000\n\n[tables.customers.columns]\nphone = ["contact", "pii"]\n'


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ensure_sample(tmp_path_factory.mktemp("data") / "sample.duckdb")


@contextlib.contextmanager
def scratch_schema(prefix: str, fill: Callable[[Any, str], None]) -> Iterator[tuple[str, str]]:
    """(DSN whose search_path is a new schema, the schema) on the real PostgreSQL, the schema
    made and filled by `fill(connection, schema)`, dropped after; the test skips without one."""
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(f"{POSTGRES_ENV} is not set")
    import psycopg

    schema = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        fill(conn, schema)
    sep = "&" if "?" in url else "?"
    try:
        yield f"{url}{sep}options=-csearch_path%3D{schema}", schema
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _fill_sample(conn: Any, schema: str) -> None:
    """The sample's customers and events, as DuckDB's sample database has them."""
    conn.execute(
        f"CREATE TABLE {schema}.customers (id int PRIMARY KEY, name text, email text, phone text, "
        "country text, segment text)"
    )
    conn.execute(
        f"INSERT INTO {schema}.customers SELECT g, 'Customer ' || g, 'customer' || g || '@example.org', "
        "'+44 20 7946 ' || lpad((g % 10000)::text, 4, '0'), (ARRAY['GB','FR','DE','NL'])[1 + g % 4], "
        "(ARRAY['retail','business'])[1 + g % 2] FROM generate_series(0, 999) g"
    )
    conn.execute(f"CREATE TABLE {schema}.events (id int, customer_id int, kind text)")
    conn.execute(
        f"INSERT INTO {schema}.events SELECT g, g % 1000, (ARRAY['view','click','purchase'])[1 + g % 3] "
        f"FROM generate_series(0, {PG_EVENTS - 1}) g"
    )
    conn.execute(f"COMMENT ON COLUMN {schema}.customers.name IS 'Full name (personal)'")
    conn.execute(f"COMMENT ON COLUMN {schema}.customers.email IS 'pii: contact address'")
    conn.execute(f"COMMENT ON COLUMN {schema}.customers.segment IS 'non-pii: marketing segment'")
    conn.execute(f"ANALYZE {schema}.customers")
    conn.execute(f"ANALYZE {schema}.events")


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[tuple[str, str]]:
    with scratch_schema("mcp_elicit_data", _fill_sample) as made:
        yield made


@pytest.fixture(params=["duckdb", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "duckdb":
        dsn, schema = str(request.getfixturevalue("sample_db")), "main"
    else:
        dsn, schema = request.getfixturevalue("postgres_dsn")
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(_toml())
    return Target(request.param, dsn, schema, config_from_mapping(CATALOG), str(catalog))

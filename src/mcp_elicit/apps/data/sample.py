"""The sample DuckDB database `mcp-elicit serve-data` serves when given no engine: made on first use.

Three tables: `customers` (columns commented as personal data, and one "non-pii" column that
must not count), `orders`, and `events`, large enough that a scan crosses the default threshold.
It lives in ``$MCP_ELICIT_DATA_SAMPLE`` when set, else ``$XDG_DATA_HOME/mcp-elicit/sample.duckdb``
(``~/.local/share`` when XDG_DATA_HOME is unset); it is built in a temporary file and renamed into
place, so a half-built file is never served.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Final

import duckdb

__all__ = ["SAMPLE_CUSTOMERS", "SAMPLE_ENV", "SAMPLE_EVENTS", "SAMPLE_ORDERS", "ensure_sample", "sample_path"]

SAMPLE_ENV: Final = "MCP_ELICIT_DATA_SAMPLE"
# Rows per sample table: `events` is above the default 1,000,000-row threshold, the others below.
SAMPLE_CUSTOMERS: Final = 1_000
SAMPLE_ORDERS: Final = 5_000
SAMPLE_EVENTS: Final = 1_200_000

_SCRIPT = f"""
CREATE TABLE customers AS SELECT
    range AS id,
    'Customer ' || range AS name,
    'customer' || range || '@example.org' AS email,
    '+44 20 7946 ' || lpad(CAST(range % 10000 AS VARCHAR), 4, '0') AS phone,
    ['GB', 'FR', 'DE', 'NL'][1 + range % 4] AS country,
    ['retail', 'business'][1 + range % 2] AS segment
FROM range({SAMPLE_CUSTOMERS});
CREATE TABLE orders AS SELECT
    range AS id,
    range % {SAMPLE_CUSTOMERS} AS customer_id,
    round(5 + (range * 37 % 500) / 3.0, 2) AS amount,
    'SKU-' || (range % 40) AS sku,
    DATE '2026-01-01' + CAST(range % 300 AS INTEGER) AS ordered_on
FROM range({SAMPLE_ORDERS});
CREATE TABLE events AS SELECT
    range AS id,
    range % {SAMPLE_CUSTOMERS} AS customer_id,
    ['view', 'click', 'purchase'][1 + range % 3] AS kind
FROM range({SAMPLE_EVENTS});
COMMENT ON COLUMN customers.name IS 'Full name (personal)';
COMMENT ON COLUMN customers.email IS 'pii: contact address';
COMMENT ON COLUMN customers.phone IS 'PII';
COMMENT ON COLUMN customers.segment IS 'non-pii: marketing segment';
COMMENT ON COLUMN orders.sku IS 'non-pii product code';
"""  # noqa: S608 - built from the constants above only


def sample_path() -> Path:
    if os.environ.get(SAMPLE_ENV):
        return Path(os.environ[SAMPLE_ENV])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "mcp-elicit" / "sample.duckdb"


def ensure_sample(path: Path | None = None) -> Path:
    """The sample database at `path` (default `sample_path()`), created when missing."""
    target = path or sample_path()
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".sample-", suffix=".duckdb", dir=target.parent)
    os.close(fd)
    os.unlink(tmp)  # DuckDB wants to create the file itself
    try:
        conn = duckdb.connect(tmp)
        try:
            conn.execute(_SCRIPT)
        finally:
            conn.close()
        os.replace(tmp, target)
    finally:
        for leftover in (tmp, tmp + ".wal"):
            if os.path.exists(leftover):
                os.unlink(leftover)
    return target

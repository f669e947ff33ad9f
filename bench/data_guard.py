"""What the data server's guard costs per query, against running the same query unguarded (DuckDB).

The sample database (built once in a temporary directory) is queried three ways, interleaved
round by round so load on the machine hits them alike:

- unguarded: the engine runs the query, nothing else;
- guard: `assess` alone as the server runs it (parse + read-only check, the cached catalog,
  column resolution with sqlglot's qualify, the engine's EXPLAIN, tags and the decision), no
  question asked;
- guard, catalog per query: the same with the catalog read from the engine on every query
  (`catalog_ttl_seconds = 0`);
- EXPLAIN: one `EXPLAIN (FORMAT JSON)` round trip, the yardstick the goal is stated in.

A "small" query reads the 1,000-row customers table; a "large" one the 1,200,000-row events
table. Goal: the guard costs at most one EXPLAIN round trip on top of the EXPLAIN it makes (the
"guard - EXPLAIN" column against the "EXPLAIN" column).

Run: .venv/bin/python bench/data_guard.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mcp_elicit.apps.data.assess import CatalogCache, assess
from mcp_elicit.apps.data.catalog import DataConfig
from mcp_elicit.apps.data.duckdb import DuckDBEngine
from mcp_elicit.apps.data.sample import ensure_sample

QUERIES = {
    "small": "SELECT country, count(*) AS n FROM customers WHERE segment = 'retail' GROUP BY 1 ORDER BY 1",
    "large": "SELECT kind, count(*) AS n FROM events WHERE customer_id < 500 GROUP BY 1 ORDER BY 1",
}


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine = DuckDBEngine(str(ensure_sample(Path(tmp) / "sample.duckdb")))
        config = DataConfig()
        print(f"median of {args.rounds} rounds x {args.calls} calls, µs per query")
        cached = CatalogCache(engine, config.catalog_ttl, time.monotonic)
        uncached = CatalogCache(engine, 0, time.monotonic)
        print(
            "| query | unguarded run | EXPLAIN | guard | guard - EXPLAIN | guarded / unguarded "
            "| guard, catalog per query |"
        )
        print("|---|---|---|---|---|---|---|")
        for name, sql in QUERIES.items():
            variants: dict[str, Callable[[], object]] = {
                "run": lambda sql=sql: engine.run(sql, 1000),
                "guard": lambda sql=sql: assess(engine, config, sql, can_ask=True, catalog=cached),
                "explain": lambda sql=sql: engine.estimate(sql),
                "uncached": lambda sql=sql: assess(engine, config, sql, can_ask=True, catalog=uncached),
            }
            for fn in variants.values():  # warm up caches and the plan
                fn()
            samples: dict[str, list[float]] = {k: [] for k in variants}
            for _ in range(args.rounds):
                for key, fn in variants.items():
                    samples[key].append(per_call_us(fn, args.calls))
            run, guard, explain, uncached_guard = (
                statistics.median(samples[k]) for k in ("run", "guard", "explain", "uncached")
            )
            extra = guard - explain
            print(
                f"| {name} | {run:,.0f} | {explain:,.0f} | {guard:,.0f} | {extra:,.0f} "
                f"({extra / explain:.2f}× EXPLAIN) | {(guard + run) / run:.2f}× | {uncached_guard:,.0f} |"
            )
        engine.close()


if __name__ == "__main__":
    main()

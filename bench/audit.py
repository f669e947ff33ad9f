"""Audit records per second: what the trails actually do per record, batched separately, and the
storage floor beside each sink.

Each record is a metadata-level consent record of a three-field form (the default level), chained
and hashed exactly as in production; the events carry the secret guard's verdict, as the client
pipeline's do. Rows, per sink:

- "record only": `make_sealed_record` alone (building, redacting, hashing one record), no store;
- "trail, one at a time": `writer_for(sink).append(event)` awaited one after another from async
  code, which is what one elicitation pays (the record is committed, or for the SQLite sink
  journaled, before the answer goes on); the sink's deferred upkeep (the SQLite journal's merge)
  is run at the end and counted in the time;
- "trail, 64 at once": 64 elicitations recording at the same moment (group commit);
- "batched": `append_many` in batches of --batch (one transaction each; no production path).

Floors (same body text and columns, same settings, no record building, no chain):
- SQLite: plain `sqlite3`, WAL, synchronous=NORMAL, one INSERT + COMMIT per row / per batch;
- PostgreSQL: plain psycopg, one INSERT + COMMIT per row / `executemany` per batch.
Ratios are sink / floor in the same run. PostgreSQL runs when $MCP_ELICIT_TEST_POSTGRES is set or
a server answers at postgresql://postgres@127.0.0.1:5432/test (throw-away tables).

Run: .venv/bin/python bench/audit.py [--records N] [--batch B]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from mcp_elicit.audit.base import chain_sealed, row_of
from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.audit.writer import GroupWriter
from mcp_elicit.core.consent import (
    GENESIS_HASH,
    CallRef,
    ClientIdentity,
    ConsentEvent,
    ServerIdentity,
    make_sealed_record,
)
from mcp_elicit.core.sensitive import classify_schema

SCHEMA = {
    "type": "object",
    "properties": {
        "target": {"type": "string", "enum": ["staging", "production"]},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "notify": {"type": "boolean", "default": True},
    },
    "required": ["target"],
}
CONCURRENT = 64


def events(n: int) -> list[ConsentEvent]:
    verdict = classify_schema(SCHEMA)  # the client pipeline has it from its secret guard
    return [
        ConsentEvent(
            time=1_800_000_000.0 + i,
            side="client",
            mode="form",
            action="accept",
            decided_by="person",
            server=ServerIdentity("deployer", "1.4.2", "uvx deployer-mcp"),
            client=ClientIdentity("mcp-elicit", "0.1.0"),
            protocol_revision="2025-11-25",
            message="Where should this build go?",
            requested_schema=SCHEMA,
            latency_ms=2400.0,
            call=CallRef("tools/call", i, "deploy"),
            content={"target": "staging", "replicas": 2, "notify": True},
            form_verdict=verdict,
        )
        for i in range(n)
    ]


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def record_only(evs: list[ConsentEvent]) -> float:
    start = time.perf_counter()
    for i, e in enumerate(evs):
        make_sealed_record(e, "metadata", GENESIS_HASH, seq=i + 1, record_id=f"r{i}")
    return rate(len(evs), time.perf_counter() - start)


def upkeep(sink: Any) -> None:
    """What the sink's writer thread would do later (the SQLite journal's merge), done now."""
    if hasattr(sink, "maintain"):
        sink.maintain()


def trail_one_at_a_time(sink: Any, evs: list[ConsentEvent]) -> float:
    writer = GroupWriter(sink)

    async def run() -> float:
        start = time.perf_counter()
        for e in evs:
            await writer.append(e)
        upkeep(sink)
        return rate(len(evs), time.perf_counter() - start)

    return anyio.run(run)


def trail_concurrent(sink: Any, evs: list[ConsentEvent]) -> float:
    writer = GroupWriter(sink)

    async def run() -> float:
        start = time.perf_counter()
        for k in range(0, len(evs), CONCURRENT):
            async with anyio.create_task_group() as tg:
                for e in evs[k : k + CONCURRENT]:
                    tg.start_soon(writer.append, e)
        upkeep(sink)
        return rate(len(evs), time.perf_counter() - start)

    return anyio.run(run)


def batched(sink: Any, evs: list[ConsentEvent], batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(evs), batch):
        sink.append_many(evs[i : i + batch])
    return rate(len(evs), time.perf_counter() - start)


def rows(evs: list[ConsentEvent]) -> list[tuple[Any, ...]]:
    return [row_of(r, body) for r, body in chain_sealed(evs, "metadata", 0, GENESIS_HASH)]


_DDL = (
    "CREATE TABLE t (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, time TEXT NOT NULL,"
    " server TEXT NOT NULL, action TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,"
    " body TEXT NOT NULL)"
)


def sqlite_floor(path: Path, data: list[tuple[Any, ...]], batch: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(_DDL)
    start = time.perf_counter()
    for i in range(0, len(data), batch):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?)", data[i : i + batch])
        conn.execute("COMMIT")
    result = rate(len(data), time.perf_counter() - start)
    conn.close()
    return result


def postgres_url() -> str | None:
    url = os.environ.get("MCP_ELICIT_TEST_POSTGRES")
    if url:
        return url
    import psycopg

    default = "postgresql://postgres@127.0.0.1:5432/test"
    try:
        psycopg.connect(default, connect_timeout=2).close()
    except psycopg.Error:
        return None
    return default


def postgres_floor(url: str, data: list[tuple[Any, ...]], batch: int) -> float:
    import psycopg
    from psycopg import sql

    table = sql.Identifier(f"bench_floor_{uuid.uuid4().hex[:10]}")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL(_DDL.replace("CREATE TABLE t", "CREATE TABLE {t}")).format(t=table))
        try:
            insert = sql.SQL("INSERT INTO {t} VALUES (%s, %s, %s, %s, %s, %s, %s, %s)").format(t=table)
            start = time.perf_counter()
            for i in range(0, len(data), batch):
                with conn.transaction(), conn.cursor() as cur:
                    cur.executemany(insert, data[i : i + batch])
            return rate(len(data), time.perf_counter() - start)
        finally:
            conn.execute(sql.SQL("DROP TABLE {t}").format(t=table))


def row(name: str, value: float, floor: float | None = None) -> None:
    ratio = f"{value / floor:.0%} of floor" if floor else ""
    print(f"| {name} | {value:,.0f} | {ratio} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    evs = events(args.records)
    single = evs[: min(args.records, 3_000)]
    data = rows(evs)
    print("| what | records/s | vs floor |")
    print("|---|---|---|")
    row("record only (make_sealed_record)", record_only(evs))
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        f1 = sqlite_floor(d / "f1.sqlite3", data[: len(single)], 1)
        fb = sqlite_floor(d / "fb.sqlite3", data, args.batch)
        row("floor: plain sqlite3 WAL, one row per commit", f1)
        row(f"floor: plain sqlite3 WAL, {args.batch} rows per commit", fb)
        new: Callable[[str], Any] = lambda name: SqliteAuditSink(d / f"{name}.sqlite3")  # noqa: E731
        for label, fn, floor in (
            ("SQLite trail, one at a time", lambda: trail_one_at_a_time(new("a"), single), f1),
            (f"SQLite trail, {CONCURRENT} at once", lambda: trail_concurrent(new("b"), single), f1),
            (f"SQLite batched ({args.batch})", lambda: batched(new("c"), evs, args.batch), fb),
        ):
            row(label, fn(), floor)
        row("JSON lines trail, one at a time", trail_one_at_a_time(JsonlAuditSink(d / "a.jsonl"), single))
        row(f"JSON lines batched ({args.batch})", batched(JsonlAuditSink(d / "b.jsonl"), evs, args.batch))

    url = postgres_url()
    if url is None:
        print("postgres: skipped (no server)")
        return
    from mcp_elicit.audit.postgres import PostgresAuditSink

    few = single[:2_000]
    p1 = postgres_floor(url, data[: len(few)], 1)
    pb = postgres_floor(url, data, args.batch)
    row("floor: plain psycopg, one row per commit", p1)
    row(f"floor: plain psycopg, {args.batch} rows per commit", pb)
    for label, fn, floor in (
        ("PostgreSQL trail, one at a time", trail_one_at_a_time, p1),
        (f"PostgreSQL trail, {CONCURRENT} at once", trail_concurrent, p1),
        (f"PostgreSQL batched ({args.batch})", None, pb),
    ):
        sink = PostgresAuditSink(url, table=f"bench_audit_{uuid.uuid4().hex[:10]}")
        try:
            value = batched(sink, evs, args.batch) if fn is None else fn(sink, few)
            row(label, value, floor)
        finally:
            sink.drop()
            sink.close()


if __name__ == "__main__":
    main()

"""Audit records per second: SQLite with and without batching, JSON Lines, PostgreSQL.

Each record is a metadata-level consent record of a three-field form (the default level), chained
and hashed exactly as in production. "batched" appends with `append_many` in batches of --batch
records (one transaction each); "single" appends one record per transaction, as the pipeline
does for each elicitation (fail closed: the record is committed before the answer goes out).
The events carry the secret guard's verdict on their form, as the client pipeline's events do (it
classified the form before showing it), so the figures measure the record and the store, not the
guard. The target is >= 20,000 records/s for SQLite with batching.

PostgreSQL runs when $MCP_ELICIT_TEST_POSTGRES is set or a server answers at
postgresql://postgres@127.0.0.1:5432/test; it uses a throw-away table.

Run: .venv/bin/python bench/audit.py [--records N] [--batch B]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.core.consent import CallRef, ClientIdentity, ConsentEvent, ServerIdentity
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


def measure(name: str, sink: Any, evs: list[ConsentEvent], batch: int) -> None:
    start = time.perf_counter()
    if batch > 1:
        for i in range(0, len(evs), batch):
            sink.append_many(evs[i : i + batch])
    else:
        for e in evs:
            sink.append(e)
    elapsed = time.perf_counter() - start
    report = sink.verify()
    ok = "chain ok" if report.ok and report.count == len(evs) else f"BROKEN {report}"
    print(f"{name:<34} {len(evs) / elapsed:>10,.0f} records/s  ({len(evs)} in {elapsed:.2f} s, {ok})")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    evs = events(args.records)
    single = events(min(args.records, 5_000))

    with tempfile.TemporaryDirectory() as tmp:
        runs: list[tuple[str, Callable[[], Any], list[ConsentEvent], int]] = [
            (
                f"sqlite, batches of {args.batch}",
                lambda: SqliteAuditSink(Path(tmp) / "b.sqlite3"),
                evs,
                args.batch,
            ),
            ("sqlite, one per transaction", lambda: SqliteAuditSink(Path(tmp) / "s.sqlite3"), single, 1),
            (
                "sqlite FULL sync, one per txn",
                lambda: SqliteAuditSink(Path(tmp) / "f.sqlite3", synchronous="FULL"),
                single[:1000],
                1,
            ),
            (
                f"jsonl, batches of {args.batch}",
                lambda: JsonlAuditSink(Path(tmp) / "b.jsonl"),
                evs,
                args.batch,
            ),
            ("jsonl, one per append", lambda: JsonlAuditSink(Path(tmp) / "s.jsonl"), single, 1),
        ]
        for name, opener, batch_events, batch in runs:
            sink = opener()
            measure(name, sink, batch_events, batch)
            sink.close()

    url = postgres_url()
    if url is None:
        print("postgres: skipped (no server)")
        return
    from mcp_elicit.audit.postgres import PostgresAuditSink

    for name, batch_events, batch in (
        (f"postgres, batches of {args.batch}", evs, args.batch),
        ("postgres, one per transaction", single[:2000], 1),
    ):
        sink = PostgresAuditSink(url, table=f"bench_audit_{uuid.uuid4().hex[:10]}")
        try:
            measure(name, sink, batch_events, batch)
        finally:
            sink.drop()
            sink.close()


if __name__ == "__main__":
    main()

"""What reading a large consent trail costs: `audit verify`, `audit list --limit 3`, and the audit
page viewed, reloaded unchanged, and filtered.

Builds (or reuses) a SQLite trail of --records records with the documented API
(`SqliteAuditSink.append_many` in batches of 500; 16 servers, one record in four of them a
decline), then times each reader in this process (the page through its ASGI app, no browser).

Run: .venv/bin/python bench/audit_readers.py [--records N] [--trail FILE]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from starlette.testclient import TestClient

from mcp_elicit.audit.reading import open_reader
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.cli import main
from mcp_elicit.core.consent import CallRef, ConsentEvent, ServerIdentity
from mcp_elicit.ui.browser.audit_view import audit_app

BATCH = 500
START = 1_700_000_000.0


def build(path: Path, records: int) -> float:
    """Write `records` records to a new trail at `path`; the seconds it took."""
    began = time.perf_counter()
    with SqliteAuditSink(path) as sink:
        for first in range(0, records, BATCH):
            sink.append_many(
                ConsentEvent(
                    time=START + i,
                    side="client",
                    mode="form",
                    action="decline" if i % 4 == 0 else "accept",
                    decided_by="person",
                    server=ServerIdentity(f"srv-{i % 16}", "1.0", f"uvx srv-{i % 16}"),
                    call=CallRef("tools/call", i, "deploy"),
                    requested_schema={"type": "object", "properties": {"target": {"type": "string"}}},
                )
                for i in range(first, min(first + BATCH, records))
            )
    return time.perf_counter() - began


def timed(what: Callable[[], Any]) -> float:
    began = time.perf_counter()
    what()
    return time.perf_counter() - began


def cli(*args: str) -> None:
    result = CliRunner().invoke(main, ["audit", *args])
    assert result.exit_code in (0, 1), result.output


def page_get(app: Any, query: str = "") -> None:
    response = TestClient(app, base_url="http://127.0.0.1").get("/", params=query)
    assert response.status_code == 200


def main_(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--trail", type=Path, default=None, help="reuse (or build) this trail")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.trail or Path(tmp) / "big.sqlite3"
        if not path.exists():
            print(f"built {args.records:,} records in {build(path, args.records):.1f} s", flush=True)
        db = str(path)
        rows = [
            ("audit verify", lambda: cli("verify", "--db", db)),
            ("audit list --limit 3", lambda: cli("list", "--db", db, "--limit", "3")),
            (
                "audit list --limit 3 --server srv-1",
                lambda: cli("list", "--db", db, "--limit", "3", "--server", "srv-1"),
            ),
        ]
        app = audit_app(lambda: open_reader(db, None, "t", None), path.name)
        rows += [
            ("page, first view", lambda: page_get(app)),
            ("page, reload (trail unchanged)", lambda: page_get(app)),
            ("page, ?server=srv-1&since=2023-11-16", lambda: page_get(app, "server=srv-1&since=2023-11-16")),
            ("page, ?action=decline", lambda: page_get(app, "action=decline")),
        ]
        for name, what in rows:
            print(f"{name:<40} {timed(what):7.2f} s", flush=True)


if __name__ == "__main__":
    main_(sys.argv[1:])

"""Opening an engine by name and running the server: what `mcp-elicit serve-data` calls."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_elicit.apps.data.catalog import load_config
from mcp_elicit.apps.data.server import build_data_server
from mcp_elicit.errors import AuditWriteError, ConfigError

if TYPE_CHECKING:
    import socket

    from mcp_elicit.apps.data.engine import Engine

__all__ = ["AUDIT_FILE_NAME", "default_audit_path", "open_engine", "serve_data"]


def open_engine(kind: str = "duckdb", dsn: str | None = None) -> Engine:
    """An engine by name: "duckdb" (a file path; the sample database when None), "postgres"
    (a libpq DSN or URL; the tables served are those of the session's current schema, `public`
    unless the DSN sets ``options=-csearch_path=...``) or "trino"
    (``trino://user@host:port/catalog/schema``)."""
    if kind == "duckdb":
        from mcp_elicit.apps.data.duckdb import DuckDBEngine
        from mcp_elicit.apps.data.sample import ensure_sample

        return DuckDBEngine(dsn or str(ensure_sample()))
    if kind == "postgres":
        from mcp_elicit.apps.data.postgres import PostgresEngine

        if not dsn:
            raise ConfigError("dsn", "the postgres engine needs a DSN")
        return PostgresEngine(dsn)
    if kind == "trino":
        from mcp_elicit.apps.data.trino import TrinoEngine

        if not dsn:
            raise ConfigError("dsn", "the trino engine needs a DSN")
        return TrinoEngine(dsn)
    raise ConfigError("engine", f"unknown engine {kind!r}; expected duckdb, postgres or trino")


AUDIT_FILE_NAME = "data-server-audit.sqlite3"


def default_audit_path() -> str:
    """Where `serve-data` keeps its consent trail unless told otherwise (beside the sample)."""
    from mcp_elicit.apps.data.sample import sample_path

    return str(sample_path().parent / AUDIT_FILE_NAME)


def serve_data(
    engine: str = "duckdb",
    dsn: str | None = None,
    catalog: str | None = None,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8766,
    audit_db: str | None = None,
    audit_level: str = "metadata",
    sock: socket.socket | None = None,
) -> None:
    """`mcp-elicit serve-data`: the guarded data server over stdio or streamable HTTP (on `sock`
    when given: a socket already bound to `host` and `port`).

    With `audit_db` (a SQLite file) every query decision and every question goes to the consent
    trail there; "" turns the trail off. Ctrl-C or SIGTERM stops it (over stdio as end of file
    would, over HTTP with uvicorn's graceful shutdown) and exits 130 or 143 (SystemExit)."""
    import functools
    import socket
    import sys
    from pathlib import Path

    from mcp_elicit.audit import SqliteAuditSink
    from mcp_elicit.server import ElicitSettings, sdk_serving
    from mcp_elicit.server.heap import freeze_startup_heap
    from mcp_elicit.server.signals import run_until_signalled

    config = load_config(catalog)
    sink = None
    if audit_db != "":
        target = Path(audit_db or default_audit_path())
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where the folder should be, no permission
            raise AuditWriteError("sqlite", str(target), (exc.strerror or str(exc)).lower()) from None
        sink = SqliteAuditSink(target, level=audit_level)  # type: ignore[arg-type]
    try:
        opened = open_engine(engine, dsn)
        try:
            server = build_data_server(opened, config, ElicitSettings(audit=sink))
            freeze_startup_heap()  # a long-running server: full collections skip what start-up made
            if transport == "stdio":
                run_until_signalled(functools.partial(sdk_serving.serve_stdio, server))
                return
            if sock is None:  # bound here as the command binds it first (cli/listen.py)
                family = socket.AF_INET6 if ":" in host else socket.AF_INET
                sock = socket.create_server((host, port), family=family)
            where = f"[{host}]" if ":" in host else host
            url = f"http://{where}:{sock.getsockname()[1]}/mcp"
            print(f"mcp-elicit data server: {url}", file=sys.stderr, flush=True)
            run_until_signalled(functools.partial(sdk_serving.serve_http, server, sock, host))
        finally:
            opened.close()
    finally:
        # on every way out (end of input, a signal's SystemExit, an error): the trail's journal
        # merged and SQLite's WAL checkpointed now, not left for whoever opens it next
        if sink is not None:
            sink.close()

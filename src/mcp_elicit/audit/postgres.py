"""An audit sink on PostgreSQL (psycopg 3), for many clients or gateway replicas sharing one trail.

Each append runs in one transaction that first takes a transaction-scoped advisory lock derived
from the table name (``pg_advisory_xact_lock``), then reads the tail's seq and hash, inserts and
commits. A row lock on the tail would not do: under READ COMMITTED a second writer that waited on
it still sees the old tail and forks the chain. The body is stored as TEXT (the exact canonical
JSON that was hashed), not JSONB, which would normalise numbers and key order.

Nothing waits without a bound (fail closed, never hang): the server cancels a statement after
`STATEMENT_TIMEOUT_MS` and a lock wait (the advisory lock held by a stuck writer) after
`LOCK_TIMEOUT_MS`; TCP keepalives and `TCP_USER_TIMEOUT_MS` drop a connection whose packets
vanish; and a client-side deadline (`OPERATION_TIMEOUT_S`) shuts the socket of any operation
still running past it, for a peer that accepts bytes but never answers. The sink then raises
`AuditWriteError` (or `AuditReadError`), drops the connection and reconnects on the next call.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from dataclasses import dataclass
from typing import Any, Final

from mcp_elicit.extras import missing

try:
    import psycopg
except ModuleNotFoundError as exc:  # the `postgres` extra
    raise missing("postgres", exc) from exc
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from mcp_elicit.audit.base import SqlSinkBase, chain_sealed, row_of
from mcp_elicit.audit.checkpoint import Checkpoint
from mcp_elicit.audit.watchdog import Watchdog
from mcp_elicit.core.consent import DEFAULT_LEVEL, GENESIS_HASH, ConsentEvent, Level
from mcp_elicit.errors import AuditReadError, AuditWriteError, ConfigError

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEFAULT_TABLE",
    "KEEPALIVES_COUNT",
    "KEEPALIVES_IDLE_S",
    "KEEPALIVES_INTERVAL_S",
    "LOCK_TIMEOUT_MS",
    "OPERATION_TIMEOUT_S",
    "STATEMENT_TIMEOUT_MS",
    "TCP_USER_TIMEOUT_MS",
    "PostgresAuditSink",
    "PostgresTimeouts",
]

DEFAULT_TABLE: Final = "mcp_elicit_audit"

# Seconds to wait for the server when connecting. A local or same-datacenter server answers in
# milliseconds; past 5 s the elicitation is better declined (fail closed) than left hanging.
CONNECT_TIMEOUT_S: Final = 5

# Server-side bounds per statement and per lock wait. An append is three small statements; a
# page of a listing reads PAGE_SIZE rows. Seconds mean something is wrong: decline, do not wait.
STATEMENT_TIMEOUT_MS: Final = 5_000
LOCK_TIMEOUT_MS: Final = 5_000

# Client-side deadline for one whole operation (an append's transaction, one page of a read),
# above the server-side bounds so those fire first when the server is alive.
OPERATION_TIMEOUT_S: Final = 15

# TCP: probe an idle connection after 5 s, every 2 s, give up after 3 misses; and drop a
# connection whose sent data stays unacknowledged for 10 s (black-holed packets).
KEEPALIVES_IDLE_S: Final = 5
KEEPALIVES_INTERVAL_S: Final = 2
KEEPALIVES_COUNT: Final = 3
TCP_USER_TIMEOUT_MS: Final = 10_000


@dataclass(frozen=True, slots=True)
class PostgresTimeouts:
    """The sink's bounds; the defaults are the constants above (tests pass smaller ones)."""

    connect_s: float = CONNECT_TIMEOUT_S
    statement_ms: int = STATEMENT_TIMEOUT_MS
    lock_ms: int = LOCK_TIMEOUT_MS
    operation_s: float = OPERATION_TIMEOUT_S


_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def _with_options(conninfo: str, ours: str) -> str:
    """The connection's `options`: those the conninfo gives (else $PGOPTIONS, as libpq would take
    them), then ours. Passed alone, ours would replace them, and a `search_path` the conninfo sets
    would be lost: the trail written to, or verified in, another schema's table."""
    given = str(conninfo_to_dict(conninfo).get("options") or os.environ.get("PGOPTIONS", ""))
    return f"{given} {ours}" if given.strip() else ours


class PostgresAuditSink(SqlSinkBase):
    """Consent records in table `table` (created when missing) of the database `conninfo` names."""

    placeholder = "%s"

    def __init__(
        self,
        conninfo: str,
        *,
        table: str = DEFAULT_TABLE,
        level: Level = DEFAULT_LEVEL,
        create: bool = True,
        checkpoint: Checkpoint | None = None,
        timeouts: PostgresTimeouts | None = None,
    ) -> None:
        if not _IDENTIFIER.fullmatch(table):
            raise ConfigError("table", f"{table!r} is not a plain SQL identifier")
        super().__init__(level, checkpoint)
        self.conninfo = conninfo
        self.table = table
        self.timeouts = timeouts or PostgresTimeouts()
        self._ident = sql.Identifier(table)
        # a stable signed 64-bit key per table for pg_advisory_xact_lock
        self._lock_key = int.from_bytes(
            hashlib.sha256(f"mcp-elicit:{table}".encode()).digest()[:8], "big", signed=True
        )
        self._conn: psycopg.Connection[Any] | None = None
        self._closed = False
        self._watchdog = Watchdog(self.timeouts.operation_s)
        with self._lock:
            self._connect(create)

    def _fail(self, exc: BaseException) -> AuditWriteError:
        return AuditWriteError("postgres", self.table, _said(exc))

    def _connect(self, create: bool = False) -> psycopg.Connection[Any]:
        """The open connection, reconnecting once if the last one broke; errors fail closed."""
        if self._closed:
            raise AuditWriteError("postgres", self.table, "the sink is closed")
        if self._conn is not None and not self._conn.closed:
            return self._conn
        t = self.timeouts
        try:
            self._conn = psycopg.connect(
                self.conninfo,
                connect_timeout=max(1, round(t.connect_s)),
                options=_with_options(
                    self.conninfo, f"-c statement_timeout={t.statement_ms} -c lock_timeout={t.lock_ms}"
                ),
                keepalives=1,
                keepalives_idle=KEEPALIVES_IDLE_S,
                keepalives_interval=KEEPALIVES_INTERVAL_S,
                keepalives_count=KEEPALIVES_COUNT,
                tcp_user_timeout=TCP_USER_TIMEOUT_MS,
            )
            if create:
                with self._deadline(self._conn), self._conn.transaction():
                    self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    self._conn.execute(
                        sql.SQL(
                            "CREATE TABLE IF NOT EXISTS {t} ("
                            " seq BIGINT PRIMARY KEY, id TEXT NOT NULL UNIQUE, time TEXT NOT NULL,"
                            " server TEXT NOT NULL, action TEXT NOT NULL, prev_hash TEXT NOT NULL,"
                            " hash TEXT NOT NULL, body TEXT NOT NULL)"
                        ).format(t=self._ident)
                    )
                    self._conn.execute(
                        sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (time)").format(
                            i=sql.Identifier(f"{self.table}_time"), t=self._ident
                        )
                    )
                    self._conn.execute(
                        sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} (server, time)").format(
                            i=sql.Identifier(f"{self.table}_server_time"), t=self._ident
                        )
                    )
        except psycopg.Error as exc:
            self._drop()
            raise self._fail(exc) from exc
        return self._conn

    def _drop(self) -> None:
        """Forget a connection that failed: the next call reconnects instead of reusing it."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def _deadline(self, conn: psycopg.Connection[Any]) -> contextlib.AbstractContextManager[None]:
        """Shut the connection's socket if the block runs past `operation_s`: a blocked read
        then fails at once (psycopg raises), however the peer went silent."""
        return self._watchdog.guard(conn.fileno())

    def _store(self, events: list[ConsentEvent]) -> list[tuple[dict[str, Any], str]]:
        conn = self._connect()
        try:
            with self._deadline(conn), conn.transaction(), conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                cur.execute(
                    sql.SQL("SELECT seq, hash FROM {t} ORDER BY seq DESC LIMIT 1").format(t=self._ident)
                )
                tail = cur.fetchone()
                seq, prev = (tail[0], tail[1]) if tail else (0, GENESIS_HASH)
                sealed = chain_sealed(events, self.level, seq, prev)
                cur.executemany(
                    sql.SQL(
                        "INSERT INTO {t} (seq, id, time, server, action, prev_hash, hash, body)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                    ).format(t=self._ident),
                    [row_of(r, body) for r, body in sealed],
                )
        except psycopg.Error as exc:
            if conn.broken or conn.closed:
                self._drop()
            raise self._fail(exc) from exc
        return sealed

    def _count(self) -> int:
        rows = self._page(0, "", [], "count(*) OVER ()", 1, newest=True)
        return int(rows[0][1]) if rows else 0

    def _page(
        self, after: int, where: str, params: list[Any], columns: str, limit: int, newest: bool = False
    ) -> list[tuple[Any, ...]]:
        order = "DESC" if newest else "ASC"
        with self._lock:
            conn = self._connect()
            try:
                with self._deadline(conn), conn.transaction():
                    return conn.execute(
                        sql.SQL(
                            "SELECT seq, {c} FROM {t} WHERE seq > %s{w} ORDER BY seq {o} LIMIT %s"
                        ).format(c=sql.SQL(columns), t=self._ident, w=sql.SQL(where), o=sql.SQL(order)),
                        [after, *params, limit],
                    ).fetchall()
            except psycopg.Error as exc:
                if conn.broken or conn.closed:
                    self._drop()
                raise AuditReadError("postgres", self.table, _said(exc)) from exc

    def drop(self) -> None:
        """Drop the table (tests and benchmarks clean up with it)."""
        with self._lock:
            conn = self._connect()
            with conn.transaction():
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {t}").format(t=self._ident))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._watchdog.close()
            if self._conn is not None:
                self._conn.close()


def _said(exc: BaseException) -> str:
    """The server's message in one line: psycopg adds the statement's text and a caret pointing
    into it on lines of their own, which an error line or a log record should not carry."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[0].strip() if lines else type(exc).__name__

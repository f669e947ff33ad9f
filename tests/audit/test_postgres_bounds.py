"""The PostgreSQL sink never waits without a bound: a held lock, a silent server, a silent link.

Real PostgreSQL; the silent peers are sockets on 127.0.0.1 that this test opens. Bounds are set
small through `PostgresTimeouts` so the tests are quick; each check waits on the sink with an
outer bound (a thread join), never a sleep.
"""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from mcp_elicit.errors import AuditWriteError

from .conftest import make_event

pytestmark = pytest.mark.postgres

psycopg = pytest.importorskip("psycopg")

from mcp_elicit.audit.postgres import PostgresAuditSink, PostgresTimeouts  # noqa: E402

QUICK = PostgresTimeouts(connect_s=2, statement_ms=500, lock_ms=300, operation_s=2.0)
# How long the test itself waits for the sink to give up: far above QUICK, far below "forever".
OUTER_BOUND_S = 30.0


def bounded(call: Any) -> BaseException | None:
    """Run `call` in a thread; return what it raised. Fails the test if it is still running."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(OUTER_BOUND_S)
    assert not thread.is_alive(), "the sink did not give up within the bound"
    return outcome[0]


@pytest.fixture
def table(pg_url: str) -> Iterator[str]:
    name = f"audit_test_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')


def test_an_append_fails_closed_while_another_session_holds_the_trail_lock(pg_url: str, table: str) -> None:
    sink = PostgresAuditSink(pg_url, table=table, timeouts=QUICK)
    sink.append(make_event(0))
    holder = psycopg.connect(pg_url)
    try:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (sink._lock_key,))  # a stuck writer
        failure = bounded(lambda: sink.append(make_event(1)))
        assert isinstance(failure, AuditWriteError)
        assert failure.sink == "postgres"
    finally:
        holder.rollback()
        holder.close()
    assert sink.append(make_event(2))["seq"] == 2  # the sink recovers once the lock is free
    assert sink.verify().ok
    sink.close()


@pytest.fixture
def silent_listener() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


def test_a_server_that_never_answers_fails_closed_at_open(silent_listener: int) -> None:
    url = f"postgresql://postgres@127.0.0.1:{silent_listener}/test"
    failure = bounded(lambda: PostgresAuditSink(url, timeouts=QUICK))
    assert isinstance(failure, AuditWriteError)


class Relay:
    """A TCP relay to the real server that can go silent: it keeps accepting bytes, forwards none."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.silent = threading.Event()
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.port = self.server.getsockname()[1]
        self.sockets: list[socket.socket] = [self.server]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while True:
            try:
                data = src.recv(65536)
                if not data:
                    return
                if not self.silent.is_set():
                    dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        for s in self.sockets:
            s.close()


def test_a_link_that_goes_silent_mid_session_fails_closed_and_the_next_call_reconnects(
    pg_url: str, table: str
) -> None:
    parts = urlsplit(pg_url)
    relay = Relay((parts.hostname or "127.0.0.1", parts.port or 5432))
    netloc = f"{parts.username}@127.0.0.1:{relay.port}" if parts.username else f"127.0.0.1:{relay.port}"
    sink = PostgresAuditSink(urlunsplit(parts._replace(netloc=netloc)), table=table, timeouts=QUICK)
    try:
        sink.append(make_event(0))
        relay.silent.set()
        failure = bounded(lambda: sink.append(make_event(1)))
        assert isinstance(failure, AuditWriteError)
        relay.silent.clear()
        assert sink.append(make_event(2))["seq"] == 2
    finally:
        sink.close()
        relay.close()

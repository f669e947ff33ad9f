"""Processes that open one new SQLite file at the same moment (two gateway replicas starting side
by side on the default trail, say) all open it: the switch to WAL mode that meets another's waits
instead of failing at once."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_elicit.audit.base import enter_wal
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.cli import main
from mcp_elicit.errors import AuditReadError

BOUND_SECONDS = 120.0
ROUNDS = 12
OPENERS = 4

# Each round: OPENERS forked processes wait at one barrier, then open the same new file. Before
# the switch waited, about a third of such rounds had an opener fail with "database is locked".
RACE = r"""
import json, multiprocessing as mp, sys, tempfile
from pathlib import Path

kind, rounds, openers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def open_it(path, barrier, results):
    barrier.wait(timeout=60)
    try:
        if kind == "trail":
            from mcp_elicit.audit.sqlite import SqliteAuditSink
            SqliteAuditSink(path).close()
        else:
            from mcp_elicit.server.vault import SQLiteVaultStorage
            SQLiteVaultStorage(str(path))
        results.put("ok")
    except Exception as exc:
        results.put(type(exc).__name__)

import mcp_elicit.audit.sqlite, mcp_elicit.server.vault  # imported once, before the forks
ctx = mp.get_context("fork")
outcomes = []
for _ in range(rounds):
    path = Path(tempfile.mkdtemp()) / "shared.sqlite3"
    barrier, results = ctx.Barrier(openers), ctx.Queue()
    procs = [ctx.Process(target=open_it, args=(path, barrier, results)) for _ in range(openers)]
    for p in procs:
        p.start()
    outcomes += [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
print(json.dumps(outcomes))
"""


def race(kind: str) -> list[str]:
    command = [sys.executable, "-c", RACE, kind, str(ROUNDS), str(OPENERS)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=BOUND_SECONDS, check=False)
    assert proc.returncode == 0, proc.stderr
    outcomes: list[str] = json.loads(proc.stdout)
    return outcomes


@pytest.mark.parametrize("kind", ["trail", "vault"])
def test_processes_opening_one_new_file_at_once_all_open_it(kind: str) -> None:
    assert race(kind) == ["ok"] * (ROUNDS * OPENERS)


def test_a_switch_to_wal_still_blocked_at_its_bound_fails_with_the_busy_error(tmp_path: Path) -> None:
    path = tmp_path / "held.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")  # nobody else may even read until this ends
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        with pytest.raises(sqlite3.OperationalError) as caught:
            enter_wal(other, 0.0)
        assert caught.value.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
    finally:
        other.close()
        holder.rollback()
        holder.close()


def test_a_switch_to_wal_goes_through_once_the_other_connection_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "held.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, isolation_level=None, timeout=0, check_same_thread=False)
    done = threading.Event()
    failed: list[BaseException] = []

    def switch() -> None:
        try:
            enter_wal(other, BOUND_SECONDS)
        except BaseException as exc:  # reported to the test below
            failed.append(exc)
        done.set()

    worker = threading.Thread(target=switch)
    worker.start()
    assert not done.wait(0.05)  # a bound on how long we look, not on the code's speed: still blocked
    holder.rollback()
    assert done.wait(BOUND_SECONDS)
    worker.join()
    assert failed == []
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other.close()
    holder.close()


def test_a_database_holding_other_tables_but_no_trail_is_not_read_as_an_empty_intact_trail(
    tmp_path: Path,
) -> None:
    other = tmp_path / "app.db"  # a wrong --db: some other program's database
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE settings (k TEXT, v TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(AuditReadError) as caught:
        SqliteAuditSink(other, readonly=True)
    assert (caught.value.sink, caught.value.target) == ("sqlite", str(other))
    result = CliRunner().invoke(main, ["audit", "verify", "--db", str(other)])
    assert result.exit_code == 2
    empty = tmp_path / "empty.sqlite3"  # a writer died before making its table: an empty trail
    empty.touch()
    with SqliteAuditSink(empty, readonly=True) as sink:
        assert sink.verify().ok

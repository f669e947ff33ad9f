"""Keyed checkpoints: `verify` alone finds a cut-off tail, a re-chained tail and a forged checkpoint."""

from __future__ import annotations

import json
import logging
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.audit.base import chain_sealed, row_of
from mcp_elicit.audit.checkpoint import (
    CHECKPOINT_KEY_ENV,
    MIN_CHECKPOINT_KEY_BYTES,
    Checkpoint,
    checkpoint_key_from_env,
)
from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.audit.sqlite import TABLE, SqliteAuditSink
from mcp_elicit.cli import main
from mcp_elicit.errors import AuditWriteError, ConfigError, ConfigProblem

from .conftest import _POSTGRES, make_event, needs_postgres

KEY = bytes(range(32))
COUNT = 5


def kinds(sink: Any) -> list[str]:
    return [b.kind for b in sink.verify().breaks]


def forged_tail(from_seq: int, prev_hash: str) -> list[tuple[dict[str, Any], str]]:
    """What a forger without the key writes: records from `from_seq` on, re-chained and re-hashed."""
    events = [make_event(i, action="decline") for i in range(from_seq - 1, COUNT)]
    return chain_sealed(events, "metadata", from_seq - 1, prev_hash)


class Store:
    """One sink kind with raw access to its storage, as an attacker with the store but not the key."""

    def __init__(self, kind: str, tmp: Path) -> None:
        self.kind, self.tmp = kind, tmp
        self.table = f"audit_test_{uuid.uuid4().hex[:12]}"
        self.cp = Checkpoint(tmp / "elsewhere" / "audit.checkpoint", KEY)

    def open(self, key: bytes = KEY) -> Any:
        cp = self.cp if key == KEY else Checkpoint(self.cp.path, key)
        if self.kind == "sqlite":
            return SqliteAuditSink(self.tmp / "audit.sqlite3", checkpoint=cp)
        if self.kind == "jsonl":
            return JsonlAuditSink(self.tmp / "audit.jsonl", checkpoint=cp)
        from mcp_elicit.audit.postgres import PostgresAuditSink

        assert _POSTGRES is not None
        return PostgresAuditSink(_POSTGRES, table=self.table, checkpoint=cp)

    def hash_of(self, sink: Any, seq: int) -> str:
        return next(r["hash"] for r in sink.iter_records() if r["seq"] == seq)

    def cut_after(self, seq: int) -> None:
        if self.kind == "jsonl":
            path = self.tmp / "audit.jsonl"
            lines = path.read_text(encoding="utf-8").splitlines()[:seq]
            path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        else:
            self._sql("DELETE FROM {t} WHERE seq > %s", seq)

    def replace_tail(self, from_seq: int, sealed: list[tuple[dict[str, Any], str]]) -> None:
        self.cut_after(from_seq - 1)
        if self.kind == "jsonl":
            with open(self.tmp / "audit.jsonl", "a", encoding="utf-8") as f:
                f.write("".join(body + "\n" for _, body in sealed))
            return
        for record, body in sealed:
            self._sql("INSERT INTO {t} VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", *row_of(record, body))

    def _sql(self, statement: str, *params: Any) -> None:
        if self.kind == "sqlite":
            conn = sqlite3.connect(self.tmp / "audit.sqlite3")
            conn.execute(statement.replace("{t}", TABLE).replace("%s", "?"), params)
            conn.commit()
            conn.close()
            return
        import psycopg
        from psycopg import sql

        with psycopg.connect(_POSTGRES or "", autocommit=True) as conn:
            conn.execute(sql.SQL(statement).format(t=sql.Identifier(self.table)), params)


@pytest.fixture(
    params=["sqlite", "jsonl", pytest.param("postgres", marks=[pytest.mark.postgres, needs_postgres])]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Callable[[], Any]]]:
    s = Store(request.param, tmp_path)
    opened: list[Any] = []

    def open_sink() -> Any:
        opened.append(s.open())
        return opened[-1]

    with s.open() as sink:
        sink.append_many([make_event(i) for i in range(COUNT)])
    yield s, open_sink
    for sink in opened:
        sink.close()
    if request.param == "postgres":
        s._sql("DROP TABLE IF EXISTS {t}")


def test_an_intact_trail_verifies_against_its_checkpoint(store: tuple[Store, Callable[[], Any]]) -> None:
    _, open_sink = store
    assert kinds(open_sink()) == []


def test_a_cut_tail_is_found_without_an_outside_head(store: tuple[Store, Callable[[], Any]]) -> None:
    s, open_sink = store
    s.cut_after(3)
    assert kinds(open_sink()) == ["truncated"]


def test_a_trail_cut_to_nothing_is_found(store: tuple[Store, Callable[[], Any]]) -> None:
    s, open_sink = store
    s.cut_after(0)
    assert kinds(open_sink()) == ["truncated"]


def test_a_re_chained_tail_is_found(store: tuple[Store, Callable[[], Any]]) -> None:
    s, open_sink = store
    sink = open_sink()
    s.replace_tail(3, forged_tail(3, s.hash_of(sink, 2)))
    assert kinds(sink) == ["rewritten"]


def test_a_forged_checkpoint_is_found(store: tuple[Store, Callable[[], Any]]) -> None:
    s, open_sink = store
    s.cut_after(3)
    sink = open_sink()
    forged = s.cp.path.with_name("forged.checkpoint")
    Checkpoint(forged, bytes(32)).write(3, s.hash_of(sink, 3))  # the right format, the wrong key
    forged.replace(s.cp.path)
    assert kinds(sink) == ["bad_checkpoint"]


@pytest.mark.parametrize("text", ["", "garbage\n", "mcp-elicit-checkpoint/1 3\n"])
def test_a_checkpoint_file_that_is_not_a_checkpoint_is_a_bad_checkpoint_not_a_read_error(
    store: tuple[Store, Callable[[], Any]], text: str
) -> None:
    """Overwriting the anchor with anything is tampering, reported like a forged one (verify
    exits 1), rather than stopping the check as a store that cannot be read (exit 2)."""
    s, open_sink = store
    sink = open_sink()
    s.cp.path.write_text(text, encoding="ascii")
    (found,) = sink.verify().breaks
    assert (found.kind, found.seq) == ("bad_checkpoint", None)


def test_a_keyed_trail_whose_checkpoint_was_deleted_does_not_verify(
    store: tuple[Store, Callable[[], Any]],
) -> None:
    s, open_sink = store
    s.cp.path.unlink()
    report = open_sink().verify()
    assert [(b.kind, b.seq, b.record_id) for b in report.breaks] == [("no_checkpoint", None, "")]
    assert report.count == COUNT


def test_a_keyed_trail_with_no_records_verifies_without_a_checkpoint(tmp_path: Path) -> None:
    for sink in (
        SqliteAuditSink(tmp_path / "new.sqlite3", checkpoint=Checkpoint(tmp_path / "a.checkpoint", KEY)),
        JsonlAuditSink(tmp_path / "new.jsonl", checkpoint=Checkpoint(tmp_path / "b.checkpoint", KEY)),
    ):
        with sink:
            assert sink.verify().breaks == ()


def test_a_writer_that_starts_a_checkpoint_over_older_records_logs_it(
    store: tuple[Store, Callable[[], Any]], caplog: pytest.LogCaptureFixture
) -> None:
    s, open_sink = store
    s.cp.path.unlink()
    s.cp = Checkpoint(s.cp.path, KEY)  # a writer process started after the file was gone
    sink = open_sink()
    with caplog.at_level(logging.WARNING, logger="mcp_elicit.audit"):
        sink.append_many([make_event(COUNT)])
    started = [r for r in caplog.records if r.name == "mcp_elicit.audit" and str(s.cp.path) in r.getMessage()]
    assert [r.levelno for r in started] == [logging.WARNING]
    assert started[0].args == (s.cp.path, COUNT)
    assert kinds(sink) == []  # the new checkpoint covers the trail from here on


def test_a_writer_that_starts_a_new_trail_logs_nothing_about_its_checkpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = Store("jsonl", tmp_path / "fresh")
    with caplog.at_level(logging.WARNING, logger="mcp_elicit.audit"), s.open() as sink:
        sink.append_many([make_event(0), make_event(1)])
        sink.append_many([make_event(2)])
    assert [r for r in caplog.records if r.name == "mcp_elicit.audit"] == []
    assert s.cp.read() is not None


def test_the_checkpoint_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CHECKPOINT_KEY_ENV, KEY.hex())
    assert checkpoint_key_from_env() == KEY
    monkeypatch.setenv(CHECKPOINT_KEY_ENV, "abcd")
    with pytest.raises(ConfigError) as info:
        checkpoint_key_from_env()
    assert info.value.key == CHECKPOINT_KEY_ENV


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", ConfigProblem.MISSING),
        ("abc", ConfigProblem.ODD_LENGTH),
        ("ab" * 32 + "c", ConfigProblem.ODD_LENGTH),
        ("abcd", ConfigProblem.TOO_SHORT),
        ("xy" * 32, ConfigProblem.NOT_HEX),
        ("0x" + "ab" * 32, ConfigProblem.NOT_HEX),
    ],
)
def test_a_checkpoint_key_that_cannot_be_used_says_why_in_its_reason(
    monkeypatch: pytest.MonkeyPatch, value: str, reason: ConfigProblem
) -> None:
    monkeypatch.setenv(CHECKPOINT_KEY_ENV, value)
    with pytest.raises(ConfigError) as info:
        checkpoint_key_from_env()
    assert (info.value.key, info.value.reason) == (CHECKPOINT_KEY_ENV, reason)


@given(st.text(alphabet="0123456789abcdefABCDEF \n", max_size=200))
def test_any_hex_text_is_a_key_or_refused_for_its_length(text: str) -> None:
    digits = "".join(text.split())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CHECKPOINT_KEY_ENV, text)
        if not digits:
            expected = ConfigProblem.MISSING
        elif len(digits) % 2:
            expected = ConfigProblem.ODD_LENGTH
        elif len(digits) < 2 * MIN_CHECKPOINT_KEY_BYTES:
            expected = ConfigProblem.TOO_SHORT
        else:
            assert checkpoint_key_from_env() == bytes.fromhex(digits)
            return
        with pytest.raises(ConfigError) as info:
            checkpoint_key_from_env()
        assert info.value.reason == expected


def test_a_checkpoint_given_a_short_key_says_it_is_too_short(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        Checkpoint(tmp_path / "cp", b"short")
    assert info.value.reason == ConfigProblem.TOO_SHORT


def test_cli_verify_with_the_checkpoint_finds_a_cut_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Store("sqlite", tmp_path)
    with s.open() as sink:
        sink.append_many([make_event(i) for i in range(COUNT)])
    s.cut_after(4)
    db = str(tmp_path / "audit.sqlite3")
    monkeypatch.setenv(CHECKPOINT_KEY_ENV, KEY.hex())
    assert CliRunner().invoke(main, ["audit", "verify", "--db", db]).exit_code == 0
    cut = CliRunner().invoke(main, ["audit", "verify", "--db", db, "--checkpoint", str(s.cp.path)])
    assert cut.exit_code == 1
    assert "truncated" in cut.output
    monkeypatch.delenv(CHECKPOINT_KEY_ENV)
    assert (
        CliRunner().invoke(main, ["audit", "verify", "--db", db, "--checkpoint", str(s.cp.path)]).exit_code
        == 2
    )


def test_the_checkpoint_file_holds_no_record_content(tmp_path: Path) -> None:
    s = Store("jsonl", tmp_path)
    with s.open() as sink:
        sink.append_many([make_event(0)])
    _magic, seq, digest, mac = s.cp.path.read_text().split()
    assert (seq, len(digest), len(mac)) == ("1", 64, 64)
    assert json.loads((tmp_path / "audit.jsonl").read_text())["hash"] == digest


def test_a_writer_with_another_key_fails_closed_and_leaves_the_checkpoint_as_it_was(
    store: tuple[Store, Callable[[], Any]],
) -> None:
    s, _ = store
    before = s.cp.path.read_bytes()
    with s.open(key=bytes(range(1, 33))) as wrong, pytest.raises(AuditWriteError) as caught:
        wrong.append_many([make_event(COUNT)])
    assert caught.value.sink == "checkpoint"
    assert caught.value.target == str(s.cp.path)
    assert s.cp.path.read_bytes() == before
    assert caught.value.__cause__ is not None


def test_a_new_checkpoint_file_takes_a_new_key(tmp_path: Path) -> None:
    """Key rotation: a new file, never an old one overwritten under the new key."""
    old, new = (
        Checkpoint(tmp_path / "old.checkpoint", KEY),
        Checkpoint(tmp_path / "new.checkpoint", KEY[::-1]),
    )
    old.write(1, "ab" * 32)
    new.write(2, "cd" * 32)
    assert new.read() == (2, "cd" * 32, True)
    assert old.read() == (1, "ab" * 32, True)


def test_every_kind_of_break_is_explained_in_the_guardrails_doc() -> None:
    from mcp_elicit.core.chain import BREAK_KINDS

    doc = (Path(__file__).parents[2] / "docs" / "guardrails.md").read_text(encoding="utf-8")
    assert [k for k in BREAK_KINDS if f"| `{k}` |" not in doc] == []

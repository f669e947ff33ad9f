"""`mcp-elicit audit list|show|export --checkpoint FILE`: the records a keyed writer has only in its
signed journal are read with the key, as `verify --checkpoint` reads them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_elicit.audit.checkpoint import CHECKPOINT_KEY_ENV, Checkpoint
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.cli import main
from tests.audit.test_journal import journaled

KEY = "ab" * 32


@pytest.fixture
def live_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, list[str]]]:
    """A keyed writer, still running, whose records wait in its signed journal: the trail (named by
    no configuration), its checkpoint and the records' ids."""
    monkeypatch.setenv("MCP_ELICIT_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.setenv(CHECKPOINT_KEY_ENV, KEY)
    trail, anchor = tmp_path / "trail.sqlite3", tmp_path / "trail.checkpoint"
    sink = SqliteAuditSink(trail, checkpoint=Checkpoint(anchor, bytes.fromhex(KEY)))
    ids = journaled(sink, 2)
    yield trail, anchor, ids
    sink.close()


def read(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["audit", *args])
    return result.exit_code, result.stdout


def json_ids(out: str) -> list[str]:
    return [json.loads(line)["id"] for line in out.splitlines()]


def test_list_with_the_checkpoint_shows_the_records_a_live_keyed_writer_journaled(
    live_writer: tuple[Path, Path, list[str]],
) -> None:
    trail, anchor, ids = live_writer
    assert read("list", "--db", str(trail), "--json") == (0, "")  # signed: left for the key
    code, out = read("list", "--db", str(trail), "--checkpoint", str(anchor), "--json")
    assert code == 0
    assert json_ids(out) == ids


def test_show_and_export_with_the_checkpoint_read_the_journaled_records(
    live_writer: tuple[Path, Path, list[str]],
) -> None:
    trail, anchor, ids = live_writer
    code, out = read("show", "--db", str(trail), "--checkpoint", str(anchor), "--id", ids[1])
    assert code == 0
    assert json.loads(out)["id"] == ids[1]
    code, out = read("export", "--db", str(trail), "--checkpoint", str(anchor))
    assert code == 0
    assert json_ids(out) == ids


@pytest.mark.parametrize("command", [["list"], ["show", "1"], ["export"], ["verify"]])
def test_a_checkpoint_given_without_a_usable_key_is_a_usage_error(
    live_writer: tuple[Path, Path, list[str]], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    trail, anchor, _ = live_writer
    monkeypatch.delenv(CHECKPOINT_KEY_ENV)
    result = CliRunner().invoke(main, ["audit", *command, "--db", str(trail), "--checkpoint", str(anchor)])
    assert result.exit_code == 2
    assert CHECKPOINT_KEY_ENV in result.stderr

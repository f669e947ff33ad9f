"""`mcp-elicit audit list|show|verify|export` over a real store."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.audit.sqlite import TABLE, SqliteAuditSink
from mcp_elicit.cli import main
from mcp_elicit.client import ElicitClient
from mcp_elicit.client.names import CLEANED_NAME_MARK
from mcp_elicit.core.consent import ConsentEvent, ServerIdentity
from mcp_elicit.ui.scripted import ScriptedUI
from tests.audit.conftest import POSTGRES_DEFAULT, POSTGRES_ENV, postgres_url


def event(i: int, **changes: object) -> ConsentEvent:
    fields: dict[str, object] = {
        "time": 1_800_000_000.0 + 3600 * i,
        "side": "client",
        "mode": "form",
        "action": "accept",
        "decided_by": "person",
        "server": ServerIdentity("deployer", "1.0", "uvx deployer"),
        "requested_schema": {"type": "object", "properties": {"target": {"type": "string"}}},
    }
    fields.update(changes)
    return ConsentEvent(**fields)  # type: ignore[arg-type]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append_many(
            [
                event(0, record_id="r1"),
                event(1, record_id="r2", action="decline"),
                event(2, record_id="r3", server=ServerIdentity("weather")),
                event(3, record_id="r4", action="cancel", decided_by="rate_limit", reason="rate_limited"),
            ]
        )
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["audit", *args])
    return result.exit_code, result.output


def ids(listing: str) -> list[str]:
    """The record ids of an `audit list` table (its last column), below the header row."""
    header, *rows = listing.splitlines()
    assert header.split() == ["TIME", "SEQ", "SERVER", "TOOL", "MODE", "ACTION", "DECIDED_BY", "REASON", "ID"]
    return [row.split()[-1] for row in rows]


def test_list_shows_every_record_oldest_first(db: Path) -> None:
    code, out = run("list", "--db", str(db))
    assert code == 0
    rows = out.splitlines()[1:]
    assert [row.split()[-1] for row in rows] == ["r1", "r2", "r3", "r4"]
    assert "rate_limit" in rows[3]
    assert "rate_limited" in rows[3]


def test_list_filters_by_server_action_and_time(db: Path) -> None:
    assert ids(run("list", "--db", str(db), "--server", "weather")[1]) == ["r3"]
    assert ids(run("list", "--db", str(db), "--action", "decline")[1]) == ["r2"]
    code, out = run(
        "list", "--db", str(db), "--since", "2027-01-15T09:00:00", "--until", "2027-01-15T11:00:00Z"
    )
    assert code == 0
    assert ids(out) == ["r2", "r3"]


def test_list_limit_keeps_the_last_matches_and_json_prints_records(db: Path) -> None:
    code, out = run("list", "--db", str(db), "--limit", "2", "--json")
    assert code == 0
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["r3", "r4"]


def test_since_accepts_an_age(tmp_path: Path) -> None:
    path = tmp_path / "recent.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append(event(0, time=time.time() - 7200, record_id="old"))
        sink.append(event(0, time=time.time() - 60, record_id="new"))
    code, out = run("list", "--db", str(path), "--since", "1h")
    assert code == 0
    assert ids(out) == ["new"]


def test_a_bad_time_is_a_usage_error(db: Path) -> None:
    code, out = run("list", "--db", str(db), "--since", "last tuesday")
    assert code == 2
    assert "--since" in out


def test_a_bad_time_prints_no_header_and_leaves_the_output_file_alone(db: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["audit", "list", "--db", str(db), "--until", "soon"])
    assert result.exit_code == 2
    assert result.stdout == ""
    earlier = tmp_path / "earlier.csv"
    earlier.write_text("an earlier export\n", encoding="utf-8")
    code, _ = run("export", "--db", str(db), "--format", "csv", "--since", "yesterday", "-o", str(earlier))
    assert code == 2
    assert earlier.read_text(encoding="utf-8") == "an earlier export\n"


def test_show_prints_one_record_and_fails_for_an_unknown_id(db: Path) -> None:
    code, out = run("show", "--db", str(db), "r2")
    assert code == 0
    assert json.loads(out)["action"] == "decline"
    assert run("show", "--db", str(db), "nope")[0] == 1


def test_verify_says_ok_with_the_head_for_an_intact_trail(db: Path) -> None:
    code, out = run("verify", "--db", str(db))
    assert code == 0
    assert out.startswith("ok: 4 records")
    head = out.split()[-1]
    assert run("verify", "--db", str(db), "--expect-head", head)[0] == 0
    assert run("verify", "--db", str(db), "--expect-head", "0" * 64)[0] == 1


def test_verify_takes_the_kept_head_as_it_was_copied_in_upper_case_or_with_spaces(db: Path) -> None:
    head = run("verify", "--db", str(db))[1].split()[-1]
    assert run("verify", "--db", str(db), "--expect-head", head.upper())[0] == 0
    assert run("verify", "--db", str(db), "--expect-head", f" {head}\n")[0] == 0


def test_verify_exits_1_and_says_where_the_chain_broke(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute(f"DELETE FROM {TABLE} WHERE id = 'r2'")
    conn.commit()
    conn.close()
    code, out = run("verify", "--db", str(db))
    assert code == 1
    assert "BROKEN" in out
    assert "seq 3" in out
    assert "id r3" in out
    assert "deleted" in out


def test_export_jsonl_round_trips_and_verifies_as_a_file(db: Path, tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    code, _ = run("export", "--db", str(db), "--format", "jsonl", "--output", str(target))
    assert code == 0
    assert len(target.read_text(encoding="utf-8").splitlines()) == 4
    code, out = run("verify", "--jsonl", str(target))
    assert code == 0
    assert out.startswith("ok: 4 records")


def test_export_csv_has_a_header_and_one_row_per_record(db: Path) -> None:
    code, out = run("export", "--db", str(db), "--format", "csv", "--action", "accept")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["id"], r["server"], r["fields"]) for r in rows] == [
        ("r1", "deployer", "target:string"),
        ("r3", "weather", "target:string"),
    ]


def test_a_missing_database_is_reported_without_creating_it(tmp_path: Path) -> None:
    path = tmp_path / "missing.sqlite3"
    code, out = run("list", "--db", str(path))
    assert code == 2
    assert "no such file" in out
    assert not path.exists()


def test_the_default_database_comes_from_the_environment(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ELICIT_AUDIT_DB", str(db))
    code, out = run("list")
    assert code == 0
    assert ids(out) == ["r1", "r2", "r3", "r4"]


def test_two_sources_at_once_are_a_usage_error(db: Path) -> None:
    assert run("list", "--db", str(db), "--jsonl", str(db))[0] == 2


@pytest.fixture
def pg_url() -> str:
    url = postgres_url()
    if url is None:
        pytest.skip(f"no PostgreSQL: {POSTGRES_ENV} is unset and nothing answers at {POSTGRES_DEFAULT}")
    return url


@pytest.fixture
def pg_table(pg_url: str) -> Iterator[str]:
    from mcp_elicit.audit.postgres import PostgresAuditSink

    table = f"audit_cli_{uuid.uuid4().hex[:12]}"
    yield table
    sink = PostgresAuditSink(pg_url, table=table, create=False)
    sink.drop()
    sink.close()


@pytest.mark.postgres
def test_the_commands_read_postgres_too(pg_url: str, pg_table: str) -> None:
    from mcp_elicit.audit.postgres import PostgresAuditSink

    with PostgresAuditSink(pg_url, table=pg_table) as sink:
        sink.append_many([event(0, record_id="p1"), event(1, record_id="p2")])
    code, out = run("list", "--postgres", pg_url, "--table", pg_table)
    assert code == 0
    assert ids(out) == ["p1", "p2"]
    assert run("verify", "--postgres", pg_url, "--table", pg_table)[0] == 0


@pytest.mark.postgres
def test_a_missing_postgres_table_is_reported(pg_url: str) -> None:
    code, out = run("list", "--postgres", pg_url, "--table", "surely_no_such_table_here")
    assert code == 2
    assert "surely_no_such_table_here" in out


class Name(BaseModel):
    name: str = "x"


def test_a_server_name_with_an_escape_sequence_is_listed_cleaned_and_marked(tmp_path: Path) -> None:
    server = MCPServer("bank\x1b[2Jpay")

    @server.tool()
    async def ask_name(ctx: Context) -> str:
        return (await ctx.elicit("Name?", schema=Name)).action

    path = tmp_path / "audit.jsonl"

    async def run() -> None:
        with JsonlAuditSink(path) as sink:
            ui = ScriptedUI([{"accept_defaults": True}])
            async with ElicitClient(server, ui=ui, protocol="legacy", audit=sink) as client:
                await client.call_tool("ask_name")

    anyio.run(run)
    out = CliRunner().invoke(main, ["audit", "list", "--jsonl", str(path)])
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.output
    assert f"bankpay{CLEANED_NAME_MARK}" in out.output


def write_config(text: str) -> None:
    """The user's configuration file, where `call` and the gateway find it (XDG_CONFIG_HOME)."""
    import os

    path = Path(os.environ["XDG_CONFIG_HOME"]) / "mcp-elicit" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_commands_read_the_jsonl_trail_the_configuration_names(tmp_path: Path) -> None:
    from mcp_elicit.config import load_config, open_audit_sink

    trail = tmp_path / "trail.jsonl"
    write_config(f'[audit]\nsink = "jsonl"\npath = "{trail}"\n')
    with open_audit_sink(load_config().audit) as sink:  # what `call` and the gateway open
        sink.append_many([event(0, record_id="j1"), event(1, record_id="j2")])
    assert trail.is_file()
    code, out = run("list")
    assert code == 0, out
    assert ids(out) == ["j1", "j2"]
    code, out = run("verify")
    assert code == 0
    assert out.startswith("ok: 2 records")
    for key in ("j2", "#2", "2"):
        code, out = run("show", key)
        assert code == 0
        assert json.loads(out)["id"] == "j2"


def test_verify_checks_the_configured_checkpoint_when_it_reads_the_configured_trail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_elicit.audit.checkpoint import CHECKPOINT_KEY_ENV
    from mcp_elicit.config import load_config, open_audit_sink

    trail, anchor = tmp_path / "trail.sqlite3", tmp_path / "elsewhere" / "trail.checkpoint"
    anchor.parent.mkdir()
    monkeypatch.setenv(CHECKPOINT_KEY_ENV, "ab" * 32)
    write_config(f'[audit]\npath = "{trail}"\ncheckpoint = "{anchor}"\n')
    with open_audit_sink(load_config().audit) as sink:  # what `call` and the gateway open
        sink.append_many([event(i, record_id=f"c{i}") for i in range(3)])
    assert run("verify")[0] == 0
    conn = sqlite3.connect(trail)
    conn.execute(f"DELETE FROM {TABLE} WHERE seq = 3")  # the tail cut, the chain still whole
    conn.commit()
    conn.close()
    code, out = run("verify")
    assert code == 1
    assert "truncated" in out
    code, out = run("verify", "--db", str(trail))  # the same trail named by hand: its checkpoint too
    assert code == 1
    assert "truncated" in out
    other = tmp_path / "other.sqlite3"
    other.write_bytes(trail.read_bytes())
    assert run("verify", "--db", str(other))[0] == 0  # another file: no checkpoint implied
    monkeypatch.delenv(CHECKPOINT_KEY_ENV)
    assert run("verify")[0] == 2  # the configuration names a checkpoint; its key is missing


def test_list_merges_a_dead_keyed_writers_signed_journal_only_with_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_elicit.audit.checkpoint import CHECKPOINT_KEY_ENV
    from mcp_elicit.config import load_config, open_audit_sink
    from tests.audit.test_journal import crash, journaled

    trail, anchor = tmp_path / "trail.sqlite3", tmp_path / "trail.checkpoint"
    monkeypatch.setenv(CHECKPOINT_KEY_ENV, "ab" * 32)
    write_config(f'[audit]\npath = "{trail}"\ncheckpoint = "{anchor}"\n')
    sink = open_audit_sink(load_config().audit)  # what `call` and the gateway open
    written = journaled(sink, 2)
    crash(sink)  # a killed writer: its records are only in its signed journal
    monkeypatch.delenv(CHECKPOINT_KEY_ENV)
    code, out = run("list")
    assert code == 0
    assert not set(written) & set(ids(out))  # left for an opener with the key
    monkeypatch.setenv(CHECKPOINT_KEY_ENV, "ab" * 32)
    code, out = run("list")
    assert code == 0
    assert ids(out) == written
    assert run("verify")[0] == 0


@pytest.mark.parametrize("command", ["list", "show", "export"])
@pytest.mark.parametrize("key", ["not hex", "ab" * 8])
def test_a_reader_of_a_keyed_trail_with_a_bad_key_is_a_usage_error_that_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, key: str
) -> None:
    from mcp_elicit.audit.checkpoint import CHECKPOINT_KEY_ENV

    write_config(f'[audit]\npath = "{tmp_path / "t.sqlite3"}"\ncheckpoint = "{tmp_path / "t.cp"}"\n')
    monkeypatch.setenv(CHECKPOINT_KEY_ENV, key)
    result = CliRunner().invoke(main, ["audit", command, *(["1"] if command == "show" else [])])
    assert result.exit_code == 2
    assert CHECKPOINT_KEY_ENV in result.stderr  # the person gave no key on the command line


def test_verify_says_when_it_checked_a_checkpoint_and_when_refused_journal_lines_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_elicit.audit.checkpoint import CHECKPOINT_KEY_ENV, Checkpoint
    from tests.audit.test_journal import crash, edit_line, journaled

    monkeypatch.setenv(CHECKPOINT_KEY_ENV, "ab" * 32)
    trail, anchor = tmp_path / "trail.sqlite3", tmp_path / "trail.checkpoint"
    sink = SqliteAuditSink(trail, checkpoint=Checkpoint(anchor, bytes.fromhex("ab" * 32)))
    journaled(sink, 2)
    assert sink._journal is not None
    path = sink._journal.path
    crash(sink)
    edit_line(path, 0, b'"accept"', b'"cancel"')  # one record edited before its merge
    result = CliRunner().invoke(main, ["audit", "verify", "--db", str(trail), "--checkpoint", str(anchor)])
    assert result.exit_code == 0
    assert result.stdout.startswith("ok: 1 record")
    assert result.stdout.rstrip().endswith("checkpoint checked")
    assert str(trail.with_name(trail.name + ".journal-rejected")) in result.stderr
    trail.with_name(trail.name + ".journal-rejected").unlink()
    again = CliRunner().invoke(main, ["audit", "verify", "--db", str(trail)])
    assert again.exit_code == 0
    assert "journal-rejected" not in again.stderr
    assert not again.stdout.rstrip().endswith("checkpoint checked")  # none given


def test_verify_fails_when_the_checkpoint_it_was_given_does_not_exist(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_elicit.audit.checkpoint import CHECKPOINT_KEY_ENV

    monkeypatch.setenv(CHECKPOINT_KEY_ENV, "ab" * 32)
    missing = tmp_path / "typo.checkpoint"
    result = CliRunner().invoke(main, ["audit", "verify", "--db", str(db), "--checkpoint", str(missing)])
    assert result.exit_code == 1
    assert result.stdout.startswith("BROKEN: 1 break(s) in 4 records")
    assert "no_checkpoint" in result.stdout
    assert str(missing) in result.stdout


def test_call_with_a_configured_checkpoint_but_no_key_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from mcp_elicit.audit.checkpoint import CHECKPOINT_KEY_ENV

    monkeypatch.delenv(CHECKPOINT_KEY_ENV, raising=False)
    write_config(f'[audit]\npath = "{tmp_path / "t.sqlite3"}"\ncheckpoint = "{tmp_path / "t.cp"}"\n')
    server = f"{sys.executable} -m tests.peers.py_servers push"
    done = CliRunner().invoke(main, ["call", "--server", server, "--tool", "book", "--json"])
    assert done.exit_code == 2  # as any configuration that cannot be used; not a failed call


def test_verify_names_a_broken_record_as_list_and_show_do(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute(f"UPDATE {TABLE} SET hash = ? WHERE seq = 2", ("0" * 64,))
    conn.commit()
    conn.close()
    code, out = run("verify", "--db", str(db))
    assert code == 1
    named = {line.split()[0] for line in out.splitlines()[1:]}
    assert "#2" in named  # what `show #2` takes, not a position counted from 0
    assert run("show", "--db", str(db), "#2")[0] == 0


def test_the_configured_sqlite_path_is_read_when_no_store_is_named(db: Path) -> None:
    write_config(f'[audit]\npath = "{db}"\n')
    code, out = run("list")
    assert code == 0, out
    assert ids(out) == ["r1", "r2", "r3", "r4"]


def test_an_explicit_store_wins_over_the_configured_one(db: Path, tmp_path: Path) -> None:
    write_config(f'[audit]\nsink = "jsonl"\npath = "{tmp_path / "absent.jsonl"}"\n')
    assert run("list")[0] == 2  # the configured trail does not exist yet
    code, out = run("list", "--db", str(db))
    assert code == 0
    assert ids(out) == ["r1", "r2", "r3", "r4"]


def test_a_configuration_file_can_be_named_with_config(db: Path, tmp_path: Path) -> None:
    config = tmp_path / "elsewhere.toml"
    config.write_text(f'[audit]\npath = "{db}"\n', encoding="utf-8")
    code, out = run("list", "--config", str(config))
    assert code == 0, out
    assert ids(out) == ["r1", "r2", "r3", "r4"]
    assert run("list", "--config", str(tmp_path / "missing.toml"))[0] == 2


def test_the_db_help_says_xdg_data_home_is_honoured() -> None:
    code, out = run("list", "--help")
    assert code == 0
    assert "XDG_DATA_HOME" in out
    assert "XDG_CONFIG_HOME" in out


def test_show_finds_a_record_by_its_sequence_number_as_list_shows_it(db: Path) -> None:
    listed = run("list", "--db", str(db))[1].splitlines()[2].split()
    seq, record_id = listed[1], listed[-1]
    assert seq.startswith("#")
    for key in (seq, seq.removeprefix("#")):
        code, out = run("show", "--db", str(db), key)
        assert code == 0, out
        assert json.loads(out)["id"] == record_id
    assert run("show", "--db", str(db), "#99")[0] == 1


def test_show_finds_a_record_by_an_unambiguous_start_of_its_id(tmp_path: Path) -> None:
    path = tmp_path / "prefixes.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append_many([event(0, record_id="abc123"), event(1, record_id="abd456")])
    code, out = run("show", "--db", str(path), "abc")
    assert code == 0
    assert json.loads(out)["id"] == "abc123"
    assert run("show", "--db", str(path), "ab")[0] == 2  # two records start so
    assert run("show", "--db", str(path), "zz")[0] == 1


def test_list_has_a_header_and_the_tool_name_of_a_tool_call(tmp_path: Path) -> None:
    from mcp_elicit.core.consent import CallRef

    path = tmp_path / "tools.sqlite3"
    with SqliteAuditSink(path) as sink:
        sink.append(event(0, record_id="t1", call=CallRef("tools/call", 7, "deploy_web")))
        sink.append(event(1, record_id="t2"))
    code, out = run("list", "--db", str(path))
    assert code == 0
    lines = out.splitlines()
    assert {line.index(" #") for line in lines[1:]} == {lines[0].index(" SEQ")}  # columns line up
    header, first, second = (line.split() for line in lines)
    assert first[header.index("TOOL")] == "deploy_web"
    assert second[header.index("TOOL")] == "-"


def test_every_column_lines_up_for_every_action_decider_and_a_long_reason(tmp_path: Path) -> None:
    from mcp_elicit.core.consent import ACTIONS, DECIDERS

    path = tmp_path / "wide.sqlite3"
    reasons = ["-", "rate_limited", "user_accepted_masked", "not_answered"]
    with SqliteAuditSink(path) as sink:
        sink.append_many(
            [
                event(
                    i, record_id=f"w{i}", action=action, decided_by=decider, reason=reasons[i % len(reasons)]
                )
                for i, (action, decider) in enumerate((a, d) for a in ACTIONS for d in DECIDERS)
            ]
        )
    code, out = run("list", "--db", str(path))
    assert code == 0
    header, *rows = out.splitlines()
    assert len(rows) == len(ACTIONS) * len(DECIDERS)
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    for row in rows:  # every cell starts where its column's title does
        assert all(row[s - 1] == " " and row[s] != " " for s in starts[1:]), row
    assert {row.split()[header.split().index("REASON")] for row in rows} >= {"user_accepted_masked"}

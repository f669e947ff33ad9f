"""`mcp-elicit call` with the configuration file: its policy decides, its audit trail records (C4)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.cli import main
from mcp_elicit.cli.call import run_call
from mcp_elicit.config import AuditConfig, Config
from mcp_elicit.core.policy import Policy
from tests.e2e.test_client_guardrails import raw_sdk_server

REFERENCE = shlex.join([sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "stdio"])
DEPLOY = ["--server", REFERENCE, "--tool", "deploy", "--args", '{"service": "web"}', "--json"]


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def write_config(tmp_path: Path, policy: str, db: Path) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'{policy}\n[audit]\npath = "{db}"\n')
    return path


def test_a_server_the_config_denies_is_declined_by_policy_and_recorded_C4(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    config = write_config(
        tmp_path, '[[servers]]\nmatch = { name = "mcp-elicit-reference" }\nform = "deny"', db
    )
    result = invoke("call", "--config", str(config), *DEPLOY)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["completed"] is True
    assert out["result"]["content"][0]["text"] == "Nothing deployed (decline)."
    assert [(e["action"], e["decided_by"], e["reason"]) for e in out["elicitations"]] == [
        ("decline", "policy", "policy_deny")
    ]
    with SqliteAuditSink(db, readonly=True) as sink:
        records = list(sink.iter_records())
    assert [(r["decided_by"], r["server"]["name"], r["call"]["name"]) for r in records] == [
        ("policy", "mcp-elicit-reference", "deploy")
    ]
    assert invoke("audit", "verify", "--db", str(db)).exit_code == 0


def test_without_config_the_default_file_and_trail_are_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    result = invoke("call", *DEPLOY)  # no terminal, no answers: cancelled, but still recorded
    assert result.exit_code == 0, result.output
    assert [e["decided_by"] for e in json.loads(result.stdout)["elicitations"]] == ["no_terminal"]
    with SqliteAuditSink(data / "mcp-elicit" / "audit.sqlite3", readonly=True) as sink:
        assert [r["decided_by"] for r in sink.iter_records()] == ["no_terminal"]


def test_no_audit_records_nothing(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    config = write_config(tmp_path, "", db)
    assert invoke("call", "--config", str(config), "--no-audit", *DEPLOY).exit_code == 0
    assert not db.exists()


@pytest.mark.parametrize("text", ['[default]\nform = "sometimes"', "[audit]\nsink = 3", "not toml ["])
def test_a_bad_config_file_is_a_usage_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    assert invoke("call", "--config", str(path), *DEPLOY).exit_code == 2
    assert invoke("connect", "--config", str(path), "--server", REFERENCE).exit_code == 2


def test_a_config_file_named_but_missing_is_a_usage_error(tmp_path: Path) -> None:
    assert invoke("call", "--config", str(tmp_path / "nope.toml"), *DEPLOY).exit_code == 2


@pytest.mark.anyio
async def test_run_call_reports_the_secret_guard_and_the_trail_holds_it_F5(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    config = Config(policy=Policy(form="allow"), audit=AuditConfig(path=db))
    answers = tmp_path / "answers.json"
    answers.write_text('{"steps": [{"accept_defaults": true}]}')
    report = await run_call(
        raw_sdk_server(), "connect_push", answers=answers, protocol="legacy", config=config
    )
    assert report.completed
    assert [(e["action"], e["decided_by"]) for e in report.to_json()["elicitations"]] == [
        ("decline", "secret_guard")
    ]
    with SqliteAuditSink(db, readonly=True) as sink:
        assert [r["decided_by"] for r in sink.iter_records()] == ["secret_guard"]
        assert sink.verify().ok


@pytest.mark.anyio
async def test_scripted_answers_take_ask_first_as_approved_with_a_notice(tmp_path: Path) -> None:
    from mcp_elicit.reference import build_reference_server
    from mcp_elicit.ui.scripted import ScriptedUI

    ui = ScriptedUI([{"content": {"environment": "staging"}}])
    config = Config(policy=Policy(form="ask"), audit=AuditConfig(level="none"))
    report = await run_call(build_reference_server(), "deploy", {"service": "web"}, ui=ui, config=config)
    assert [(o.action, o.decided_by) for o in report.elicitations] == [("accept", "script")]
    assert len(ui.notices) == 1


@pytest.mark.anyio
async def test_connect_applies_the_policy_and_records_the_session(tmp_path: Path) -> None:
    import functools
    import io

    from rich.console import Console

    from mcp_elicit.cli.connect import ConnectSession, open_pipeline_client
    from mcp_elicit.core.policy import load_policy
    from mcp_elicit.ui.terminal import injected_input

    db = tmp_path / "audit.sqlite3"
    config = Config(policy=load_policy('[default]\nform = "deny"'), audit=AuditConfig(path=db))
    out = Console(
        file=io.StringIO(), width=200, color_system=None, markup=False, emoji=False, highlight=False
    )
    lines = ['call deploy {"service": "web"}', "quit"]
    session = ConnectSession(
        REFERENCE,
        protocol="legacy",
        console=out,
        read_line=injected_input(out, lines),
        opener=functools.partial(open_pipeline_client, config=config),
    )
    assert await session.run() == 0
    transcript = out.file.getvalue()  # type: ignore[attr-defined]
    assert "Note about mcp-elicit-reference" in transcript  # the person hears of the refusal
    assert "Nothing deployed (decline)." in transcript
    with SqliteAuditSink(db, readonly=True) as sink:
        assert [r["decided_by"] for r in sink.iter_records()] == ["policy"]

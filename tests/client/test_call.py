"""`run_call` and `mcp-elicit call`: one call, scripted or cancelled, never waiting for input."""

from __future__ import annotations

import io
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcp_elicit.cli import main
from mcp_elicit.cli.call import run_call
from mcp_elicit.reference import build_reference_server

REFERENCE = shlex.join([sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "stdio"])
DEPLOY_ANSWERS = {
    "steps": [
        {"match": {"fields": ["environment"]}, "content": {"environment": "production"}},
        {"match": {"fields": ["confirm"]}, "content": {"confirm": True}},
    ]
}


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(DEPLOY_ANSWERS))
    return path


@pytest.mark.anyio
async def test_run_call_answers_from_the_file_and_reports_every_question(answers: Path) -> None:
    report = await run_call(build_reference_server(), "deploy", {"service": "web"}, answers=answers)
    assert report.completed
    assert report.result is not None
    assert report.result["content"][0]["text"] == "Deployed web to production in eu-west with 2 replicas."
    out = report.to_json()
    assert out["server"]["name"] == "mcp-elicit-reference"
    assert [(e["action"], e["decided_by"], e["target"]) for e in out["elicitations"]] == [
        ("accept", "script", "deploy")
    ] * 2


@pytest.mark.anyio
async def test_without_a_terminal_every_question_is_cancelled_at_once_and_the_output_says_so() -> None:
    notices = io.StringIO()
    report = await run_call(build_reference_server(), "signup", interactive=False, notices=notices)
    assert report.completed
    assert report.result is not None
    assert report.result["content"][0]["text"] == "Signup stopped at step 1 (cancel)."
    assert [(o.action, o.decided_by) for o in report.elicitations] == [("cancel", "no_terminal")]
    assert "cancelled" in notices.getvalue()


@pytest.mark.anyio
async def test_with_a_terminal_but_no_terminal_ui_the_question_is_cancelled_with_a_notice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp_elicit.ui.terminal", None)  # import fails
    notices = io.StringIO()
    report = await run_call(build_reference_server(), "signup", interactive=True, notices=notices)
    assert [(o.decided_by, o.reason) for o in report.elicitations] == [("no_terminal", "no_terminal_ui")]
    assert "not installed" in notices.getvalue()


@pytest.mark.anyio
async def test_a_server_that_dies_is_a_failed_call_with_its_stderr_cleaned() -> None:
    crash = shlex.join(
        [sys.executable, "-c", "import sys; sys.stderr.write('boom\\x1b[2J\\u202e'); sys.exit(3)"]
    )
    report = await run_call(crash, "anything", interactive=False)
    assert not report.completed
    assert report.error is not None
    assert report.server_log is not None
    assert report.server_log.startswith("boom")
    assert "\x1b" not in report.server_log
    assert "\u202e" not in report.server_log


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, ["call", *args], catch_exceptions=False)


def test_call_json_prints_one_object_and_exits_zero(answers: Path) -> None:
    result = invoke(
        "--server",
        REFERENCE,
        "--tool",
        "deploy",
        "--args",
        '{"service": "api"}',
        "--answers",
        str(answers),
        "--json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["completed"] is True
    assert out["result"]["content"][0]["text"] == "Deployed api to production in eu-west with 2 replicas."
    assert [(e["mode"], e["server"], e["action"], e["decided_by"]) for e in out["elicitations"]] == [
        ("form", "mcp-elicit-reference", "accept", "script")
    ] * 2


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
def test_call_without_answers_and_without_a_terminal_never_waits(protocol: str) -> None:
    result = invoke("--server", REFERENCE, "--tool", "signup", "--json", "--protocol", protocol)
    assert result.exit_code == 0
    out = json.loads(result.stdout)
    assert [(e["action"], e["decided_by"]) for e in out["elicitations"]] == [("cancel", "no_terminal")]
    assert out["protocol"] == ("2026-07-28" if protocol == "modern" else "2025-11-25")


def test_call_prints_a_readable_summary_without_json(answers: Path) -> None:
    result = invoke(
        "--server", REFERENCE, "--tool", "deploy", "--args", '{"service": "db"}', "--answers", str(answers)
    )
    assert result.exit_code == 0
    assert "question for tools/call deploy: form accept by script" in result.stdout
    assert "result: Deployed db to production" in result.stdout


def test_a_failed_call_exits_one() -> None:
    result = invoke("--server", shlex.join([sys.executable, "-c", "pass"]), "--tool", "x", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["completed"] is False


@pytest.mark.parametrize("args", ["[1, 2]", "{not json"])
def test_arguments_that_are_not_a_json_object_are_a_usage_error(args: str) -> None:
    assert invoke("--server", REFERENCE, "--tool", "deploy", "--args", args).exit_code == 2


def test_a_bad_answers_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text('{"steps": [{"action": "maybe"}]}')
    result = invoke("--server", REFERENCE, "--tool", "deploy", "--answers", str(path))
    assert result.exit_code == 2
    assert "steps[0].action" in result.output

"""`mcp-elicit serve-reference` keeps no consent trail unless told where: `--audit-db FILE` gives it
one, which `audit list` reads. Real processes: `call` starting the server over stdio."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.cli import main

ROOT = Path(__file__).resolve().parents[1]
BOUND_SECONDS = 60.0


def call_deploy(tmp_path: Path, *server_options: str) -> dict[str, object]:
    """`call deploy` on a stdio reference server started with `server_options`, declining its question."""
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"steps": [{"action": "decline"}]}))
    server = shlex.join([sys.executable, "-m", "mcp_elicit", "serve-reference", *server_options])
    argv = [sys.executable, "-m", "mcp_elicit", "call", "--server", server, "--tool", "deploy"]
    argv += ["--args", '{"service": "web"}', "--answers", str(answers), "--json", "--no-audit"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=BOUND_SECONDS, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_the_reference_server_keeps_a_trail_in_the_file_audit_db_names(tmp_path: Path) -> None:
    trail = tmp_path / "trails" / "reference.sqlite3"  # its folder is made too
    report = call_deploy(tmp_path, "--audit-db", str(trail), "--audit-level", "request")
    assert report["completed"] is True
    with SqliteAuditSink(trail, readonly=True) as sink:
        records = list(sink.iter_records())
    assert [(r["side"], r["action"], r["level"]) for r in records] == [("server", "decline", "request")]
    assert "Where should web be deployed?" in json.dumps(records[0])
    listed = CliRunner().invoke(main, ["audit", "list", "--db", str(trail)])
    assert listed.exit_code == 0
    assert len(listed.output.splitlines()) == 2  # the header and the one record


def test_without_audit_db_the_reference_server_writes_no_trail_and_its_help_says_so(tmp_path: Path) -> None:
    report = call_deploy(tmp_path)
    assert report["completed"] is True
    data = Path(os.environ["XDG_DATA_HOME"])  # the tests' own (tests/conftest.py)
    assert not data.exists() or not list(data.rglob("*.sqlite3"))  # no trail, not even the default
    shown = " ".join(CliRunner().invoke(main, ["serve-reference", "--help"]).output.split())
    assert "keeps no consent trail of its own unless --audit-db names one" in shown


@pytest.mark.parametrize("command", ["serve-reference", "serve-data"])
def test_a_trail_that_cannot_be_opened_is_one_line_and_exit_1(tmp_path: Path, command: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    argv = [sys.executable, "-m", "mcp_elicit", command, "--audit-db", str(blocker / "t.sqlite3")]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=BOUND_SECONDS, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"Error: cannot open the consent trail {blocker / 't.sqlite3'}: ")

"""`mcp-elicit call` and `connect` pinned to 2026-07-28 (`--protocol modern`) against a server that
speaks only 2025-11-25: the failure comes with a hint to leave the choice to `auto` (the default),
which takes that server's handshake and completes the call.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp_elicit.cli.options import MODERN_REFUSED_HINT
from tests.peers import legacy_only_server
from tests.support import home_env

ROOT = Path(__file__).resolve().parents[2]
SERVER = f"{sys.executable} {legacy_only_server.__file__}"
BOUND_SECONDS = 60.0


def run(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**home_env(tmp_path), "COLUMNS": "400"}  # the note stays on one line
    return subprocess.run(
        [sys.executable, "-m", "mcp_elicit", *args, "--server", SERVER, "--no-audit"],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=BOUND_SECONDS,
        check=False,
    )


def test_a_call_pinned_to_2026_07_28_on_a_2025_11_25_server_fails_with_the_auto_hint(tmp_path: Path) -> None:
    done = run(tmp_path, "call", "--tool", "echo", "--protocol", "modern", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["completed"] is False
    assert report["error"]["hint"] == MODERN_REFUSED_HINT
    assert report["error"]["reason"] == "unfit_answer"  # a 2025-11-25 result has no resultType
    assert "\n" not in report["error"]["message"]


def test_the_failure_is_one_line_without_pydantics_report(tmp_path: Path) -> None:
    done = run(tmp_path, "call", "--tool", "echo", "--protocol", "modern")
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "errors.pydantic.dev" not in done.stderr
    assert "resultType" in errors[0]  # the field at fault is named


def test_the_same_call_with_the_default_protocol_completes(tmp_path: Path) -> None:
    done = run(tmp_path, "call", "--tool", "echo", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["completed"], report["protocol"]) == (True, "2025-11-25")
    assert "hint" not in json.dumps(report)


def test_connect_pinned_to_2026_07_28_says_the_hint_once(tmp_path: Path) -> None:
    done = run(tmp_path, "connect", "--protocol", "modern", stdin="tools\nquit\n")
    assert done.stdout.count(MODERN_REFUSED_HINT) == 1

"""A stdio server whose process ends during the call: `mcp-elicit call` (a real process) says how it
ended, its exit status or the signal, in one line, instead of the SDK's "Connection closed"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SERVER = """
import os, signal, sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("ends")


@server.tool()
def end() -> str:
    how = sys.argv[1]
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(int(how))


server.run("stdio")
"""


def call(tmp_path: Path, how: str, *extra: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "ends.py"
    script.write_text(SERVER)
    env = {**os.environ, "HOME": str(tmp_path)}
    argv = [sys.executable, "-m", "mcp_elicit", "call", "--no-audit", "--tool", "end", *extra]
    argv += ["--server", f"{sys.executable} {script} {how}"]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize(("how", "status"), [("3", 3), ("kill", -9)])
def test_a_server_whose_process_ends_during_the_call_is_said_with_its_exit_status(
    tmp_path: Path, how: str, status: int
) -> None:
    done = call(tmp_path, how, "--json")
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert (error["reason"], error["exit_status"]) == ("server_exited", status)


def test_the_line_says_how_the_process_ended_and_no_traceback(tmp_path: Path) -> None:
    done = call(tmp_path, "3")
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "status 3" in errors[0]
    assert "Traceback" not in done.stderr

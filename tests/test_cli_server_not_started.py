"""A stdio server whose command cannot be started: `mcp-elicit call` and `connect` run as real
processes (the venv not on PATH, as in a fresh clone), and the client kit's own error."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_elicit import demo
from mcp_elicit.client.connection import ElicitClient
from mcp_elicit.client.servers import start_failure
from mcp_elicit.ui.scripted import ScriptedUI

ROOT = Path(__file__).resolve().parents[1]


def run_off_path(
    argv: list[str], path: str, cwd: Path, stdin: str = "", **env_extra: str
) -> subprocess.CompletedProcess[str]:
    """`argv` run with the venv off: no VIRTUAL_ENV, PATH set to `path` (plus `env_extra`)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PATH")}
    env.update(PATH=path, **env_extra)
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=120, check=False
    )


def cli(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`python -m mcp_elicit ARGS` with a PATH that holds no `mcp-elicit` (an empty directory)."""
    empty = tmp_path / "empty-path"
    empty.mkdir(exist_ok=True)
    return run_off_path([sys.executable, "-m", "mcp_elicit", *args], str(empty), tmp_path, stdin)


def test_call_with_a_server_command_not_on_path_is_one_error_line_naming_it(tmp_path: Path) -> None:
    done = cli(tmp_path, "call", "--server", "mcp-elicit serve-data", "--tool", "list_tables")
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: cannot start the server: command not found: mcp-elicit"]
    assert "Traceback" not in done.stderr
    assert "FileNotFoundError" not in done.stderr + done.stdout


def test_call_json_keeps_the_os_error_type_with_the_reason_and_the_command(tmp_path: Path) -> None:
    done = cli(tmp_path, "call", "--json", "--server", "mcp-elicit serve-data", "--tool", "list_tables")
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert (error["type"], error["reason"]) == ("FileNotFoundError", "not_found")
    assert error["command"] == "mcp-elicit"
    assert error["message"] == "cannot start the server: command not found: mcp-elicit"


def test_a_server_command_that_is_not_executable_says_permission_denied(tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o644)
    done = cli(tmp_path, "call", "--json", "--server", str(script), "--tool", "x")
    error = json.loads(done.stdout)["error"]
    assert (error["type"], error["reason"]) == ("PermissionError", "not_executable")
    assert error["message"] == f"cannot start the server: command not executable: {script}, permission denied"


def test_connect_with_a_server_command_not_on_path_says_it_cannot_start_it(tmp_path: Path) -> None:
    done = cli(tmp_path, "connect", "--server", "mcp-elicit serve-data", stdin="quit\n")
    assert done.returncode == 1
    said = " ".join(done.stdout.split())  # the console wraps long lines
    assert (
        "Connection to mcp-elicit serve-data failed: cannot start the server: command not found: mcp-elicit"
        in said
    )
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.anyio
async def test_the_client_kit_keeps_the_os_error_and_start_failure_names_the_command() -> None:
    client = ElicitClient("mcp-elicit-no-such-command --stdio", ui=ScriptedUI([]))
    with pytest.raises(FileNotFoundError) as caught:
        async with client:
            pass
    assert client.stdio_command == "mcp-elicit-no-such-command"
    failure = start_failure(caught.value, client.stdio_command)
    assert failure is not None
    assert (failure.command, failure.reason) == ("mcp-elicit-no-such-command", "not_found")
    assert failure.text == "cannot start the server: command not found: mcp-elicit-no-such-command"
    assert start_failure(caught.value, "some-other-command") is None
    assert start_failure(FileNotFoundError(2, "No such file", "/some/data.json"), "mcp-elicit") is None


def test_the_demo_hint_for_the_data_server_works_when_pasted_from_the_repository_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    if not (Path(sys.executable).parent / "mcp-elicit").exists():
        pytest.skip("no mcp-elicit console script beside this Python")
    hint = demo.data_server_hint()
    bin_dir = Path(os.path.relpath(Path(sys.executable).parent, ROOT))
    command = str(bin_dir / "mcp-elicit")
    assert hint == f"{command} connect --server '{command} serve-data'"
    assert "/" in command  # a path, not a name PATH must find
    assert hint in demo.INTRO.format(data=hint)


def test_the_demo_hint_connects_to_the_data_server_from_the_repository_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint's own command line, run with the venv off PATH: it connects and lists the tools."""
    monkeypatch.chdir(ROOT)
    argv = shlex.split(demo.data_server_hint())
    if not (ROOT / argv[0]).exists():
        pytest.skip("no mcp-elicit console script beside this Python")
    sample = str(tmp_path / "sample.duckdb")
    done = run_off_path(argv, "/usr/bin:/bin", ROOT, "tools\nquit\n", MCP_ELICIT_DATA_SAMPLE=sample)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Connected to mcp-elicit-data" in done.stdout
    assert "list_tables" in done.stdout

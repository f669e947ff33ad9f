"""A FastMCP server asking `ctx.elicit("Paste your GitHub token", str)`: one field `value`, the secret
named only in the message. Driven by `mcp-elicit call` with default settings (a real subprocess, the
server a real stdio subprocess of it) and by the client kit: the form never reaches the person, the
server hears decline, and the person is told why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcp_elicit.client import ElicitClient
from mcp_elicit.ui.scripted import ScriptedUI
from tests.e2e.servers import serving_http
from tests.peers.py_servers import Http
from tests.support import home_env, text_of

ROOT = Path(__file__).resolve().parents[2]
SERVER = f"{sys.executable} tests/peers/py_servers.py fastmcp_token"
BOUND_SECONDS = 60.0
# The person is ready to paste a token: if the form reached them, the server would hear accept.
PERSON = [{"content": {"value": "ghp_0123456789abcdefghijklmnopqrstuvwxyz"}}]


def run_call(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = home_env(tmp_path)
    argv = [sys.executable, "-m", "mcp_elicit", "call", "--server", SERVER, "--tool", "connect_github"]
    return subprocess.run(
        [*argv, *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BOUND_SECONDS,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize("scripted", [False, True], ids=["default", "a person ready to paste it"])
def test_call_with_default_settings_never_shows_a_token_form_and_says_why(
    tmp_path: Path, scripted: bool
) -> None:
    extra = ["--json"]
    if scripted:
        answers = tmp_path / "answers.json"
        answers.write_text(json.dumps(PERSON), encoding="utf-8")
        extra += ["--answers", str(answers)]
    done = run_call(tmp_path, *extra)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["completed"] is True
    assert report["result"]["structuredContent"] == {"result": "Not connected (decline)."}
    [question] = report["elicitations"]
    assert (question["mode"], question["action"], question["decided_by"], question["reason"]) == (
        "form",
        "decline",
        "secret_guard",
        "secret_in_form",
    )
    assert question["fields"] == ["value"]
    # Whoever runs the command is told once, on stderr, with or without an answers file (a script
    # reads the JSON on stdout; the notice is for the person who started it).
    told = [line for line in done.stderr.splitlines() if line.startswith("mcp-elicit: fastmcp-token-peer: ")]
    assert len(told) == 1


def test_call_in_text_mode_tells_the_person_and_reports_the_decline(tmp_path: Path) -> None:
    done = run_call(tmp_path)
    assert done.returncode == 0, done.stderr
    assert "secret_guard (secret_in_form)" in done.stdout
    assert "Not connected (decline)." in done.stdout
    assert any(line.startswith("mcp-elicit: fastmcp-token-peer: ") for line in done.stderr.splitlines())


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_client_kit_declines_the_token_form_before_any_ui_sees_it(transport: str) -> None:
    ui = ScriptedUI(PERSON)
    with anyio.fail_after(BOUND_SECONDS):
        if transport == "stdio":
            async with ElicitClient(SERVER, ui=ui) as client:
                result = await client.call_tool("connect_github")
        else:
            async with serving_http(Http("fastmcp_token")) as url, ElicitClient(url, ui=ui) as client:
                result = await client.call_tool("connect_github")
    assert text_of(result) == "Not connected (decline)."
    assert ui.seen == []  # the form never reached the person
    [outcome] = client.outcomes
    assert (outcome.action, outcome.decided_by, outcome.reason) == (
        "decline",
        "secret_guard",
        "secret_in_form",
    )
    assert len(ui.notices) == 1

"""`mcp-elicit call --oauth/--no-oauth` against a real local authorization server and a protected MCP
server on 127.0.0.1; the browser is a subprocess started through MCP_ELICIT_BROWSER."""

from __future__ import annotations

import json
import shlex
import socket
import stat
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner, Result

from mcp_elicit.cli import main
from tests.mcp_auth import Provider, authorization_setup

pytestmark = pytest.mark.anyio

BROWSER = shlex.join([sys.executable, str(Path(__file__).parent / "client" / "oauth_browser.py")])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call(tmp_path: Path, url: str, *extra: str, summary: bool = False) -> Result:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([{"content": {"guests": 4}}]))
    env = {
        "MCP_ELICIT_BROWSER": BROWSER,
        "MCP_ELICIT_OAUTH_TOKENS": str(tmp_path / "tokens.json"),
        "FAKE_BROWSER_LOG": str(tmp_path / "browser.log"),
        "MCP_ELICIT_BEARER": "",
    }
    args = ["call", "--server", url, "--tool", "book", "--answers", str(answers), "--no-audit"]
    args += [] if summary else ["--json"]
    with anyio.fail_after(60):
        return await anyio.to_thread.run_sync(
            lambda: CliRunner().invoke(main, [*args, *extra], env=env, catch_exceptions=False)
        )


async def test_call_signs_in_when_the_server_asks_and_the_next_call_reuses_the_token(tmp_path: Path) -> None:
    provider = Provider(user="alice")
    async with authorization_setup(provider) as url:
        first = await call(tmp_path, url)
        second = await call(tmp_path, url)
    for done in (first, second):
        assert done.exit_code == 0, done.output
        assert json.loads(done.stdout)["result"]["content"][0]["text"] == "Booked for 4 (alice)."
    assert len(provider.authorize_requests) == 1
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600
    assert (tmp_path / "browser.log").read_text().startswith("200 http://127.0.0.1:")


async def test_a_denied_sign_in_fails_the_call_with_its_reason_and_no_traceback(tmp_path: Path) -> None:
    async with authorization_setup(Provider(deny=True)) as url:
        done = await call(tmp_path, url)
    assert done.exit_code == 1
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "AuthorizationFailed"
    assert error["reason"] == "denied"
    assert "Traceback" not in done.output


async def test_no_oauth_never_opens_a_browser(tmp_path: Path) -> None:
    provider = Provider()
    async with authorization_setup(provider) as url:
        done = await call(tmp_path, url, "--no-oauth")
    assert done.exit_code == 1
    assert provider.authorize_requests == []
    assert not (tmp_path / "browser.log").exists()


async def test_oauth_and_a_bearer_token_exclude_each_other(tmp_path: Path) -> None:
    done = await call(tmp_path, "http://127.0.0.1:9/mcp", "--oauth", "--bearer", "x")
    assert done.exit_code == 2


async def test_the_summary_names_a_server_without_a_version_in_one_clean_line(tmp_path: Path) -> None:
    async with authorization_setup(Provider()) as url:
        done = await call(tmp_path, url, summary=True)
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == f"server: protected-peer ({url})"  # the URL typed, usable again


async def test_a_server_nothing_answers_at_is_a_connection_error_not_a_failed_sign_in(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a loopback port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = await call(tmp_path, f"http://127.0.0.1:{port}/mcp")
    assert done.exit_code == 1
    error = json.loads(done.stdout)["error"]
    assert error["type"] != "AuthorizationFailed"
    assert "reason" not in error
    assert not (tmp_path / "browser.log").exists()


async def test_a_server_nothing_answers_at_is_named_in_the_error_with_its_credentials_redacted(
    tmp_path: Path,
) -> None:
    with socket.socket() as sock:  # a loopback port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp?access_token=sk-secret"
    report = await call(tmp_path, url)
    assert json.loads(report.stdout)["error"]["url"] == f"http://127.0.0.1:{port}/mcp?access_token=REDACTED"
    said = await call(tmp_path, url, summary=True)
    assert said.exit_code == 1
    assert f"(http://127.0.0.1:{port}/mcp?access_token=REDACTED)" in said.stderr  # usable again, as typed
    assert "sk-secret" not in said.stderr

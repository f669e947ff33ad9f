"""Reaching servers as people name them: `--config FILE.json --server NAME` (the mcpServers format of
Claude Desktop, Cursor and VS Code), `VAR=value` prefixes, `--header` and `--bearer` against a
server that checks its Authorization header."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result

from mcp_elicit.cli import main
from mcp_elicit.client.servers import ServerSpec, parse_server_spec, servers_in
from mcp_elicit.errors import ConfigError
from tests.e2e.servers import serving_app
from tests.peers.py_servers import Http

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-test-token"
JSON_NO_AUDIT = ["--json", "--no-audit"]
PEER = [sys.executable, "-m", "tests.peers.py_servers"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def checking_auth(app: Any) -> Any:
    """The peer's ASGI app behind a check of `Authorization: Bearer TOKEN` (401 otherwise)."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {TOKEN}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await app(scope, receive, send)

    return guarded


async def call(args: list[str]) -> Result:
    with anyio.fail_after(60):
        return await anyio.to_thread.run_sync(
            lambda: CliRunner().invoke(main, ["call", *args], catch_exceptions=False)
        )


def answers(tmp_path: Path) -> str:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps([{"content": {"guests": 4}}]))
    return str(path)


async def test_an_mcpservers_file_of_three_servers_reaches_each_by_name(tmp_path: Path) -> None:
    async with serving_app(checking_auth(Http("ask").streamable_http_app())) as origin:
        file = tmp_path / "claude_desktop_config.json"
        file.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "pusher": {
                            "command": PEER[0],
                            "args": [*PEER[1:], "push"],
                            "env": {"PEER_NAME": "from-env"},
                        },
                        "fast": {"command": PEER[0], "args": [*PEER[1:], "fastmcp"]},
                        "hosted": {"url": f"{origin}/mcp", "headers": {"Authorization": f"Bearer {TOKEN}"}},
                    }
                }
            )
        )
        reports = {}
        for name in ("pusher", "fast", "hosted"):
            done = await call(
                [
                    "--config",
                    str(file),
                    "--server",
                    name,
                    "--tool",
                    "book",
                    "--answers",
                    answers(tmp_path),
                    *JSON_NO_AUDIT,
                ]
            )
            assert done.exit_code == 0, done.output
            reports[name] = json.loads(done.stdout)
    for report in reports.values():
        assert report["result"]["content"][0]["text"] == "Booked for 4."
    assert reports["pusher"]["server"]["name"] == "from-env"
    assert reports["fast"]["server"]["name"] == "fastmcp-peer"


async def test_bearer_and_header_options_reach_a_server_that_checks_them(tmp_path: Path) -> None:
    async with serving_app(checking_auth(Http("push").streamable_http_app())) as origin:
        url = f"{origin}/mcp"
        common = ["--tool", "book", "--answers", answers(tmp_path), "--json", "--no-audit"]
        refused = await call(["--server", url, *common])
        with_bearer = await call(["--server", url, "--bearer", TOKEN, *common])
        with_header = await call(["--server", url, "--header", f"Authorization: Bearer {TOKEN}", *common])
    assert refused.exit_code == 1
    for done in (with_bearer, with_header):
        assert done.exit_code == 0, done.output
        assert json.loads(done.stdout)["result"]["content"][0]["text"] == "Booked for 4."


async def test_a_var_prefix_sets_the_stdio_servers_environment(tmp_path: Path) -> None:
    spec = f"PEER_NAME=prefixed {' '.join(PEER)} push"
    done = await call(
        ["--server", spec, "--tool", "book", "--answers", answers(tmp_path), "--json", "--no-audit"]
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["server"]["name"] == "prefixed"


def test_var_prefixes_are_split_off_the_command_line() -> None:
    assert parse_server_spec("A=1 B='two words' npx -y srv X=3") == ServerSpec(
        argv=("npx", "-y", "srv", "X=3"), env=(("A", "1"), ("B", "two words"))
    )
    with pytest.raises(ConfigError):
        parse_server_spec("A=1")


def test_a_bad_mcpservers_entry_is_a_clear_error(tmp_path: Path) -> None:
    file = tmp_path / "servers.json"
    file.write_text(json.dumps({"mcpServers": {"x": {"args": ["a"]}}}))
    with pytest.raises(ConfigError, match="needs a command or a url"):
        servers_in(file)
    done = CliRunner().invoke(main, ["call", "--config", str(file), "--server", "y", "--tool", "t"])
    assert done.exit_code == 2


async def test_a_refused_scripted_answer_keeps_its_reason_in_call_json(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps([{"content": {"guests": 99}}]))  # above the form's maximum of 10
    done = await call(
        ["--server", f"{' '.join(PEER)} push", "--tool", "book", "--answers", str(path), *JSON_NO_AUDIT]
    )
    assert done.exit_code == 0, done.output
    (question,) = json.loads(done.stdout)["elicitations"]
    assert (question["action"], question["decided_by"]) == ("cancel", "script")
    assert question["reason"].startswith("scripted_answer_refused: guests")

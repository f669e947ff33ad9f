"""`mcp-elicit call` against a real HTTP server on 127.0.0.1 that requires a bearer token and answers
401 with a bare `WWW-Authenticate: Bearer` (no `resource_metadata`, so no OAuth sign-in is offered):
the call fails with `AuthorizationFailed` carrying the HTTP status and a structured reason, not the
SDK's bare -32603."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result
from mcp.server.mcpserver import MCPServer

from mcp_elicit.cli import main
from tests.mcp_auth import serving_built

pytestmark = pytest.mark.anyio

GOOD_TOKEN = "t0ken-clifix"  # a test server's token


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def bearer_gate(app: Any, status: int = 401) -> Any:
    """An ASGI app letting through only HTTP requests with `Authorization: Bearer GOOD_TOKEN`;
    the others get `status` with a bare `WWW-Authenticate: Bearer`."""

    async def gated(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {GOOD_TOKEN}".encode():
                challenge = [(b"www-authenticate", b"Bearer"), (b"content-type", b"text/plain")]
                await send({"type": "http.response.start", "status": status, "headers": challenge})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return gated


def protected_app(origin: str, status: int = 401) -> Any:
    server = MCPServer("gated")

    @server.tool()
    async def hello() -> str:
        return "hello"

    return bearer_gate(server.streamable_http_app(), status)


async def call(url: str, *extra: str, as_json: bool = True) -> Result:
    env = {"MCP_ELICIT_BEARER": "", "MCP_ELICIT_BROWSER": "false"}
    args = ["call", "--server", url, "--tool", "hello", "--no-audit", *(["--json"] if as_json else [])]
    with anyio.fail_after(60):
        return await anyio.to_thread.run_sync(
            lambda: CliRunner().invoke(main, [*args, *extra], env=env, catch_exceptions=False)
        )


@pytest.mark.parametrize("oauth", [(), ("--no-oauth",)], ids=["default", "no-oauth"])
async def test_a_401_without_credentials_is_an_authorization_error_with_its_status(
    oauth: tuple[str, ...],
) -> None:
    async with serving_built(protected_app) as origin:
        done = await call(f"{origin}/mcp", *oauth)
    assert done.exit_code == 1
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "AuthorizationFailed"
    assert error["reason"] == "required"
    assert error["status"] == 401
    assert "code" not in error
    assert "--bearer" in error["hint"]


async def test_a_refused_bearer_token_is_reported_as_refused(tmp_path: Path) -> None:
    async with serving_built(protected_app) as origin:
        done = await call(f"{origin}/mcp", "--bearer", "wrong")
    assert done.exit_code == 1
    error = json.loads(done.stdout)["error"]
    assert (error["type"], error["reason"], error["status"]) == ("AuthorizationFailed", "refused", 401)


async def test_the_right_bearer_token_gets_through() -> None:
    async with serving_built(protected_app) as origin:
        done = await call(f"{origin}/mcp", "--bearer", GOOD_TOKEN)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["result"]["content"][0]["text"] == "hello"


async def test_the_summary_says_so_in_one_error_line_naming_the_credential_options() -> None:
    async with serving_built(protected_app) as origin:
        done = await call(f"{origin}/mcp", "--no-oauth", as_json=False)
    assert done.exit_code == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert errors[0].startswith("error: AuthorizationFailed:")
    assert all(option in errors[0] for option in ("--bearer", "--header", "--oauth"))
    assert "Traceback" not in done.output


async def test_a_403_is_an_authorization_error_with_status_403() -> None:
    async with serving_built(lambda origin: protected_app(origin, 403)) as origin:
        done = await call(f"{origin}/mcp", "--no-oauth")
    assert done.exit_code == 1
    error = json.loads(done.stdout)["error"]
    assert (error["type"], error["reason"], error["status"]) == ("AuthorizationFailed", "required", 403)

"""The matrix's cells for FastMCP's `Client` (its default settings) and our own client
(`ElicitClient` and `mcp-elicit call`, in each `--protocol`) downstream of `mcp-elicit gateway`,
with the reference server and a FastMCP server (`ctx.elicit`) upstream.

Over stdio each client starts `mcp-elicit gateway --config f.json` itself, as a desktop client
does; over HTTP one `mcp-elicit gateway --listen 127.0.0.1:0` serves the module. The reference
server's pages are loopback pages of its own: the person (`open_page`, or the fake browser for the
command line) enters a key there, and the server then completes the page. FastMCP's `Context`
has no URL elicitation (4.1.2 and 4.2.3: `ctx.elicit` asks forms only), so its cells are forms.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import fastmcp
import mcp_types as t
import pytest
from click.testing import CliRunner, Result
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StdioTransport
from mcp.client.stdio import StdioServerParameters

from mcp_elicit.cli import main
from mcp_elicit.client import ElicitClient
from mcp_elicit.client.opener import BROWSER_ENV
from mcp_elicit.client.url import UrlMode
from mcp_elicit.ui.scripted import ScriptedUI
from tests.gateway.matrix import GUARDRAILS, gateway, listening, matrix_servers
from tests.peers.support import MODERN, WAIT_BOUND_SECONDS, open_page
from tests.support import text_of

pytestmark = pytest.mark.anyio

FAKE_BROWSER = Path(__file__).resolve().parents[1] / "client" / "fake_browser.py"
PROTOCOLS = ["auto", "legacy", "modern"]
TRANSPORTS = ["stdio", "http"]
DEPLOY = {"service": "search"}
WHERE = {"environment": "production", "region": "us-east"}
DEPLOYED = "Deployed search to production in us-east with 2 replicas."
# The reference server's pages: -32042 first (once connected, the status needs no page).
STATUS, CONNECTED = "Example API: connected, 3 projects.", "Connected to Example API."


@pytest.fixture(scope="module")
def servers_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference server and the FastMCP server, with the matrix's guardrails."""
    found = matrix_servers()
    path = tmp_path_factory.mktemp("cells") / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"ref": found["ref"], "fm": found["fm"]}}))
    path.with_suffix(".toml").write_text(GUARDRAILS)
    return path


@pytest.fixture(scope="module")
def listen_url(servers_file: Path) -> Iterator[str]:
    with listening(gateway(servers_file, "--listen", "127.0.0.1:0")) as running:
        yield running.url


def front(transport: str, servers_file: Path, listen_url: str) -> Any:
    """What a client is pointed at: the gateway's command line (stdio) or its URL."""
    if transport == "http":
        return listen_url
    argv = gateway(servers_file)
    return StdioTransport(command=argv[0], args=argv[1:])


def stdio(servers_file: Path) -> StdioServerParameters:
    argv = gateway(servers_file)
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))


class Person:
    """A FastMCP elicitation handler: fills forms from `answers` in order and, for a page,
    enters a key on it (the reference server's loopback page) before accepting."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.asked.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        if params.mode == "url":
            await open_page(params.url)
            return ElicitResult(action="accept")
        return self.answers.pop(0)


# -- FastMCP's Client, default settings --------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_fastmcps_client_answers_the_reference_and_fastmcp_servers_forms_through_the_gateway(
    transport: str, servers_file: Path, listen_url: str
) -> None:
    person = Person(WHERE, {"confirm": True}, {"name": "bo"})
    async with fastmcp.Client(front(transport, servers_file, listen_url), elicitation_handler=person) as c:
        era = c.protocol_version
        deploy = await c.call_tool("deploy", DEPLOY)
        hello = await c.call_tool("hello", {})
    assert era == MODERN  # its default mode settles on 2026-07-28 with the gateway: rounds
    assert (text_of(deploy), text_of(hello)) == (DEPLOYED, "hello bo")
    assert [a["mode"] for a in person.asked] == ["form"] * 3


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_fastmcps_client_finishes_the_reference_servers_pages_and_its_minus_32042_through_the_gateway(
    transport: str, servers_file: Path, listen_url: str
) -> None:
    """Over HTTP the module's one gateway keeps the reference server (and its connected API) for
    the module, so only the page that always asks is tried there."""
    tools = {"stdio": ["service_status", "connect_service"], "http": ["connect_service"]}[transport]
    person = Person()
    async with fastmcp.Client(front(transport, servers_file, listen_url), elicitation_handler=person) as c:
        with anyio.fail_after(WAIT_BOUND_SECONDS * 2):
            texts = [text_of(await c.call_tool(tool, {})) for tool in tools]
    assert texts == [{"service_status": STATUS, "connect_service": CONNECTED}[tool] for tool in tools]
    assert [a["mode"] for a in person.asked] == ["url"] * len(tools)
    assert all(a["url"].startswith("http://127.0.0.1:") for a in person.asked)


async def test_fastmcps_client_in_legacy_mode_gets_the_page_under_our_id_and_its_completion(
    servers_file: Path,
) -> None:
    """Not its default: with `mode="legacy"` the page is pushed, and the reference server's
    completion reaches the client under the id the gateway gave the page."""
    completed: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, t.ElicitCompleteNotification):
            completed.append(message.params.elicitation_id)

    person = Person()
    transport = front("stdio", servers_file, "")
    async with fastmcp.Client(
        transport, mode="legacy", elicitation_handler=person, message_handler=on_message
    ) as c:
        with anyio.fail_after(WAIT_BOUND_SECONDS * 2):
            connect = await c.call_tool("connect_service", {})
    assert text_of(connect) == CONNECTED
    [page] = person.asked
    assert page["mode"] == "url"
    assert completed == [page["elicitationId"]]


# -- our client: ElicitClient --------------------------------------------------------------------


def pages_ui(*forms: dict[str, Any]) -> ScriptedUI:
    """Each form answered in order; every page opened (consent given)."""
    steps: list[dict[str, Any]] = [{"action": "accept", "content": content} for content in forms]
    return ScriptedUI([*steps, {"url": "open", "repeat": True}])


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_our_client_answers_the_reference_and_fastmcp_servers_forms_through_the_gateway(
    protocol: str, servers_file: Path
) -> None:
    ui = pages_ui(WHERE, {"confirm": True}, {"name": "cy"})
    async with ElicitClient(stdio(servers_file), ui=ui, protocol=protocol) as client:
        deploy = await client.call_tool("deploy", DEPLOY)
        hello = await client.call_tool("hello", {})
        outcomes = [(o.mode, o.action, o.purpose.target) for o in client.outcomes]
    assert (text_of(deploy), text_of(hello)) == (DEPLOYED, "hello cy")
    assert outcomes == [("form", "accept", "deploy")] * 2 + [("form", "accept", "hello")]


async def test_our_client_over_http_answers_both_servers_forms_through_the_gateway(listen_url: str) -> None:
    ui = pages_ui(WHERE, {"confirm": True}, {"name": "di"})
    async with ElicitClient(listen_url, ui=ui) as client:
        deploy = await client.call_tool("deploy", DEPLOY)
        hello = await client.call_tool("hello", {})
    assert (text_of(deploy), text_of(hello)) == (DEPLOYED, "hello di")


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_our_client_in_url_mode_finishes_the_reference_servers_pages_through_the_gateway(
    protocol: str, servers_file: Path
) -> None:
    opened: list[str] = []

    async def person(url: str) -> None:  # the browser the client opens: the person enters a key
        opened.append(url)
        await open_page(url)

    ui = pages_ui()
    async with ElicitClient(
        stdio(servers_file), ui=ui, protocol=protocol, url_mode=UrlMode(opener=person)
    ) as client:
        with anyio.fail_after(WAIT_BOUND_SECONDS * 2):
            status = await client.call_tool("service_status", {})
            connect = await client.call_tool("connect_service", {})
        pages = [(o.mode, o.action) for o in client.outcomes if o.mode == "url"]
    assert (text_of(status), text_of(connect)) == (STATUS, CONNECTED)
    assert pages == [("url", "accept")] * 2
    assert len(opened) == 2
    assert all(url.startswith("http://127.0.0.1:") for url in opened)


# -- our client: the command line -----------------------------------------------------------------


async def call(args: list[str], env: dict[str, str | None] | None = None) -> Result:
    """`mcp-elicit call ARGS` in-process, in a worker thread (it runs its own event loop)."""
    with anyio.fail_after(WAIT_BOUND_SECONDS * 2):
        return await anyio.to_thread.run_sync(
            lambda: CliRunner().invoke(main, ["call", *args], env=env, catch_exceptions=False)
        )


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_call_command_answers_the_reference_servers_form_through_a_stdio_gateway(
    protocol: str, servers_file: Path, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([{"content": WHERE}, {"content": {"confirm": True}}]))
    server = " ".join(map(shlex.quote, gateway(servers_file)))
    args = ["--server", server, "--tool", "deploy", "--args", json.dumps(DEPLOY), "--answers", str(answers)]
    done = await call([*args, "--protocol", protocol, "--json", "--no-audit"])
    assert done.exit_code == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["completed"] is True
    assert report["result"]["content"][0]["text"] == DEPLOYED
    assert [(e["mode"], e["action"]) for e in report["elicitations"]] == [("form", "accept")] * 2


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_the_call_command_opens_the_reference_servers_page_through_a_stdio_gateway(
    protocol: str, servers_file: Path, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"steps": [{"url": "open"}]}))
    log = tmp_path / "browser.log"
    env: dict[str, str | None] = {
        BROWSER_ENV: f"{sys.executable} {FAKE_BROWSER}",
        "FAKE_BROWSER_LOG": str(log),
    }
    server = " ".join(map(shlex.quote, gateway(servers_file)))
    args = ["--server", server, "--tool", "connect_service", "--answers", str(answers)]
    done = await call([*args, "--protocol", protocol, "--json", "--no-audit"], env)
    assert done.exit_code == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["result"]["content"][0]["text"] == CONNECTED
    assert (report["elicitations"][0]["mode"], report["elicitations"][0]["action"]) == ("url", "accept")

"""Side by side: the same upstreams behind `mcp-elicit gateway` and behind FastMCP's own proxy
(`fastmcp.server.create_proxy` over the same `mcpServers` file, FastMCP 4.2.3), driven by the same
downstream clients. Each test asserts what each front really does; docs/gateway.md has the table.

Upstreams here are over HTTP (the raw-SDK server and the TypeScript server, each one process for
the module) because FastMCP's proxy starts every stdio server of the file anew for each call; the
last test shows that with stdio servers.

What FastMCP's proxy does (read in `fastmcp/server/providers/proxy.py`, seen here): it forwards a
form as it is; since 4.2 it forwards a URL request as a URL under the upstream's own `elicitationId`
(`default_proxy_elicitation_handler`; 4.1 turned it into a form with no fields), but forwards no
completion (its backend message handler passes on list-changed notifications only); it turns
-32042 into a tool error text, mirrors a 2026-07-28 client's era onto its backends (so a server
that pushes cannot ask, and a 2025-11-25-only server disappears), and checks nothing.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import fastmcp
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_elicit.client import ElicitClient
from mcp_elicit.client.url import UrlMode
from mcp_elicit.ui.scripted import ScriptedUI
from tests.gateway.matrix import (
    GUARDRAILS,
    NEEDS_TS,
    PROXY,
    TS_ENV,
    gateway,
    listening,
    matrix_servers,
    ts_client,
    ts_server_http,
)
from tests.gateway.support import PEERS, http_client
from tests.peers.support import WAIT_BOUND_SECONDS
from tests.support import text_of

pytestmark = [pytest.mark.anyio, NEEDS_TS]

FRONTS = ["gateway", "proxy"]


@pytest.fixture(scope="module")
def fronts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Both fronts over one file: `sdk` (the raw-SDK server) and `ts` (the TypeScript server)."""
    with (
        listening([sys.executable, PEERS, "sdk", "http"]) as sdk,
        listening(ts_server_http(), TS_ENV) as ts,
    ):
        config = tmp_path_factory.mktemp("side") / "servers.json"
        config.write_text(json.dumps({"mcpServers": {"sdk": {"url": sdk.url}, "ts": {"url": ts.url}}}))
        config.with_suffix(".toml").write_text(GUARDRAILS)
        with (
            listening(gateway(config, "--listen", "127.0.0.1:0")) as ours,
            listening([*PROXY, str(config), "http"]) as proxy,
        ):
            yield {"gateway": ours.url, "proxy": proxy.url}


def named(front: str, server: str, tool: str) -> str:
    """Our gateway keeps a unique name bare; FastMCP's proxy prefixes `<key>_` for a multi-server file."""
    return f"{server}_{tool}" if front == "proxy" else tool


class Seen:
    """An SDK client's elicitation callback and message handler: what reached the person."""

    def __init__(self, content: dict[str, Any] | None = None) -> None:
        self.content = content or {}
        self.asked: list[dict[str, Any]] = []
        self.completed: list[str] = []

    async def __call__(self, ctx: Any, params: Any) -> t.ElicitResult:
        self.asked.append(params.model_dump(mode="json", by_alias=True, exclude_none=True))
        if params.mode == "url":
            return t.ElicitResult(action="accept")
        fields = params.requested_schema.get("properties", {})
        return t.ElicitResult(action="accept", content={k: v for k, v in self.content.items() if k in fields})

    async def on_message(self, message: Any) -> None:
        if isinstance(message, t.ElicitCompleteNotification):
            self.completed.append(message.params.elicitation_id)


def client(url: str, era: str, seen: Seen) -> Client:
    return http_client(url, None, era, seen, message_handler=seen.on_message)


async def greet_and_book(front: str, url: str, era: str) -> tuple[Seen, Any, Any]:
    """The raw-SDK server's form, then the TypeScript server's, on one connection."""
    seen = Seen({"name": "ann", "guests": 3})
    async with client(url, era, seen) as c:
        greet = await c.call_tool(named(front, "sdk", "greet"), {})
        book = await c.call_tool(named(front, "ts", "book"), {})
    return seen, greet, book


@pytest.mark.parametrize("front", FRONTS)
async def test_a_form_reaches_a_2025_client_through_both_fronts(front: str, fronts: dict[str, str]) -> None:
    seen, greet, book = await greet_and_book(front, fronts[front], "legacy")
    assert (text_of(greet), text_of(book)) == ("hello ann", "Booked for 3.")
    assert [a["mode"] for a in seen.asked] == ["form", "form"]


@pytest.mark.parametrize("front", FRONTS)
async def test_an_answer_with_a_field_the_form_lacks_is_said_by_the_gateway_and_passed_on_by_the_proxy(
    front: str, fronts: dict[str, str]
) -> None:
    async def extra(ctx: Any, params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "ann", "admin": True})

    async with http_client(fronts[front], None, "legacy", extra) as c:
        greet = await c.call_tool(named(front, "sdk", "greet"), {})
    if front == "gateway":  # checked, refused, and said: the upstream hears cancel
        assert greet.is_error is False  # the upstream's result, the notice first
        assert "did not fit the form (admin)" in greet.content[0].text  # type: ignore[union-attr]
        assert greet.content[-1].text == "cancel"  # type: ignore[union-attr]
    else:  # passed on unchecked (this upstream's pydantic model happens to drop the extra field)
        assert text_of(greet) == "hello ann"


@pytest.mark.parametrize("front", FRONTS)
async def test_a_url_request_reaches_the_client_through_both_fronts_and_is_completed_only_through_the_gateway(
    front: str, fronts: dict[str, str]
) -> None:
    seen = Seen()
    async with client(fronts[front], "legacy", seen) as c:
        result = await c.call_tool(named(front, "sdk", "signin"), {})
    [asked] = seen.asked
    assert text_of(result) == "signin accept"  # the upstream heard the client's accept
    assert (asked["mode"], asked["url"]) == ("url", "https://example.com/login")
    if front == "gateway":  # under an id of ours; the upstream's completion reaches this session
        assert asked["elicitationId"] != "upstream-1"
        assert seen.completed == [asked["elicitationId"]]
    else:  # the upstream's own id, passed through; its completion is dropped by the proxy
        assert asked["elicitationId"] == "upstream-1"
        assert seen.completed == []


@pytest.mark.parametrize("front", FRONTS)
async def test_minus_32042_becomes_a_page_and_the_result_only_through_the_gateway(
    front: str, fronts: dict[str, str]
) -> None:
    seen, asked = Seen(), anyio.Event()
    results: list[Any] = []

    async def callback(ctx: Any, params: Any) -> t.ElicitResult:
        asked.set()
        return await seen(ctx, params)

    url = fronts[front]
    async with http_client(url, None, "legacy", callback) as c, http_client(url, None, "legacy") as other:

        async def call() -> None:
            results.append(await c.call_tool(named(front, "ts", "ts_need_page"), {}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            if front == "gateway":
                with anyio.fail_after(WAIT_BOUND_SECONDS):
                    await asked.wait()
                await other.call_tool(named(front, "ts", "ts_finish_page"), {})
    if front == "gateway":
        assert [a["url"] for a in seen.asked] == ["https://example.com/ts-authorize"]
        assert text_of(results[0]) == "ts page done"
    else:  # a tool error text: the code and the list of pages are gone, the client cannot help
        assert seen.asked == []
        assert results[0].is_error is True
        assert "URL elicitation required" in text_of(results[0])
        assert "ts-authorize" not in text_of(results[0])


@pytest.mark.parametrize("front", FRONTS)
async def test_a_2026_client_is_asked_only_through_the_gateway(front: str, fronts: dict[str, str]) -> None:
    seen, greet, book = await greet_and_book(front, fronts[front], "2026-07-28")
    if front == "gateway":  # the era bridge: pushed upstream, rounds downstream
        assert (text_of(greet), text_of(book)) == ("hello ann", "Booked for 3.")
        return
    # FastMCP mirrors the client's era onto the backends: the pushing server cannot ask, and the
    # TypeScript server (2025-11-25 only) is not reached at all.
    assert seen.asked == []
    assert greet.is_error is True
    assert "elicitation/create" in text_of(greet)
    assert book.is_error is True
    assert "Unknown tool" in text_of(book)


@pytest.mark.parametrize("front", FRONTS)
async def test_a_secret_seeking_form_and_a_look_alike_url_are_stopped_only_by_the_gateway(
    front: str, fronts: dict[str, str]
) -> None:
    seen = Seen({"username": "ann", "password": "hunter2"})
    async with client(fronts[front], "legacy", seen) as c:
        login = await c.call_tool(named(front, "sdk", "login"), {})
        lookalike = await c.call_tool(named(front, "sdk", "lookalike"), {})
    if front == "gateway":
        assert seen.asked == []
        assert login.content[-1].text == "login decline"  # type: ignore[union-attr]
        assert lookalike.content[-1].text == "url decline"  # type: ignore[union-attr]
        return
    assert "password" in seen.asked[0]["requestedSchema"]["properties"]  # the password reached the person
    assert text_of(login) == "login accept"
    assert (seen.asked[1]["mode"], seen.asked[1]["url"]) == ("url", "https://xn--pypl-53dc.com/login")
    assert text_of(lookalike) == "url accept"  # the look-alike reached the person, who accepted it


@pytest.mark.parametrize("front", FRONTS)
async def test_the_typescript_client_sees_the_page_through_both_fronts_and_its_completion_via_the_gateway(
    front: str, fronts: dict[str, str]
) -> None:
    calls = [{"tool": named(front, "ts", "book")}, {"tool": named(front, "sdk", "signin")}]
    async with ts_client(fronts[front], calls, answers=[{"guests": 2}]) as run:
        book, signin = await run.results(2)
    assert text_of_ts(book) == "Booked for 2."
    assert text_of_ts(signin) == "signin accept"
    [page] = [e["params"] for e in signin["before"] if e["event"] == "elicit"]
    assert (page["mode"], page["url"]) == ("url", "https://example.com/login")
    completed = [e["elicitationId"] for e in signin["before"] if e["event"] == "complete"]
    if front == "gateway":
        assert completed == [page["elicitationId"]]
    else:  # the upstream's id passed through, and no completion
        assert (page["elicitationId"], completed) == ("upstream-1", [])


@pytest.mark.parametrize("front", FRONTS)
async def test_fastmcps_own_client_with_its_defaults_is_asked_only_through_the_gateway(
    front: str, fronts: dict[str, str]
) -> None:
    asked: list[str] = []

    async def handler(message: str, response_type: type, params: object, context: object) -> dict[str, str]:
        asked.append(message)
        return {"name": "bo"}

    async with fastmcp.Client(fronts[front], elicitation_handler=handler) as c:
        result = await c.call_tool(named(front, "sdk", "greet"), {}, raise_on_error=False)
    if front == "gateway":
        assert (asked, text_of(result)) == (["Who are you?"], "hello bo")
    else:  # its default mode settles on 2026-07-28 with the proxy, which then mirrors that era
        assert asked == []
        assert result.is_error is True


@pytest.mark.parametrize("front", FRONTS)
async def test_our_client_in_url_mode_opens_the_page_through_both_fronts_and_hears_it_done_via_the_gateway(
    front: str, fronts: dict[str, str]
) -> None:
    opened: list[str] = []

    async def opener(url: str) -> None:
        opened.append(url)

    url_mode = UrlMode(opener=opener)
    page, any_form = {"match": {"mode": "url"}, "action": "accept"}, {"action": "accept"}
    ui = ScriptedUI([{"action": "accept", "content": {"name": "cy"}}, page, any_form])
    async with ElicitClient(fronts[front], ui=ui, url_mode=url_mode) as c:
        greet = await c.call_tool(named(front, "sdk", "greet"), {})
        signin = await c.call_tool(named(front, "sdk", "signin"), {})
        outcomes = [(o.mode, o.fields) for o in c.outcomes]
    assert (text_of(greet), text_of(signin)) == ("hello cy", "signin accept")
    assert outcomes == [("form", ("name",)), ("url", ())]
    assert opened == ["https://example.com/login"]
    # `complete` is True only for an id the client opened a page for and has not heard done.
    if front == "gateway":  # the page had an id of ours, and its completion came
        assert url_mode.tracker.complete("upstream-1") is False
    else:  # the page kept the upstream's id, and no completion came for it
        assert url_mode.tracker.complete("upstream-1") is True


async def test_mcpdo_through_fastmcps_proxy_gets_the_page_as_a_url_and_on_2026_no_question(
    tmp_path: Path, fronts: dict[str, str]
) -> None:
    """mcpdo through our gateway: tests/gateway/test_matrix_mcpdo.py (pages and forms, both eras).
    mcpdo prints no completion, so the proxy's dropped completion is not seen here."""
    from tests.e2e.test_url_mode_inspector import MCPDO, Mcpdo

    if not MCPDO.exists():
        pytest.skip("needs mcpdo: see tests/e2e/test_url_mode_inspector.py")
    async with Mcpdo(tmp_path / "home") as mcpdo:
        name = (await mcpdo("connect", fronts["proxy"]))["name"]  # mcpdo's default era: 2025-11-25
        pending = (await mcpdo("--connection", name, "tools/call", "sdk_signin"))["elicitationPending"]
        signin = await mcpdo("--connection", name, "elicitation/respond", pending["elicitationId"], "--done")
        await mcpdo.stop()
        name = (await mcpdo("connect", "--era", "modern", fronts["proxy"]))["name"]
        code, out, _ = await mcpdo._run("--format", "json", "--connection", name, "tools/call", "sdk_greet")
    assert (pending["mode"], pending["url"]) == ("url", "https://example.com/login")  # ids: mcpdo's own
    assert text_of_ts({"result": signin}) == "signin accept"
    assert code != 0  # mcpdo exits non-zero on a tool error
    assert json.loads(out)["isError"] is True


async def test_fastmcps_proxy_over_a_file_with_one_stdio_server_cannot_ask_even_a_2025_client(
    tmp_path: Path,
) -> None:
    """With one stdio server FastMCP keeps one connected backend client (its log warns of "context
    mixing"): that session was not opened in the client's era, so the pushed question fails."""
    config = tmp_path / "one.json"
    config.write_text(json.dumps({"mcpServers": {"sdk": matrix_servers()["sdk"]}}))
    seen = Seen({"name": "ann"})
    with listening([*PROXY, str(config), "http"]) as proxy:
        async with client(proxy.url, "legacy", seen) as c:
            greet = await c.call_tool("greet", {})  # one server: no prefix
    assert seen.asked == []
    assert greet.is_error is True
    assert "elicitation/create" in text_of(greet)


async def test_fastmcps_proxy_starts_a_stdio_server_anew_for_each_call_where_the_gateway_keeps_one(
    tmp_path: Path,
) -> None:
    """Over stdio, with stdio servers in the file: our gateway keeps one process per server for
    the session; FastMCP's proxy starts new ones for every call, so whatever a server keeps in
    memory between calls (a page finished for a -32042) is gone by the next call."""
    config = tmp_path / "servers.json"
    ts = matrix_servers()["ts"]  # two TypeScript servers: they start fastest, and one alone is kept
    config.write_text(json.dumps({"mcpServers": {"ts": ts, "ts2": ts}}))
    config.with_suffix(".toml").write_text(GUARDRAILS)
    pids: dict[str, list[str]] = {}
    for front, argv in (("gateway", gateway(config)), ("proxy", [*PROXY, str(config)])):
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        async with Client(params, mode="legacy") as c:
            tool = "ts_ts_process_id" if front == "proxy" else "ts__ts_process_id"
            pids[front] = [text_of(await c.call_tool(tool, {})) for _ in range(2)]
    assert pids["gateway"][0] == pids["gateway"][1]
    assert pids["proxy"][0] != pids["proxy"][1]


def text_of_ts(event: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in event["result"]["content"])

"""The matrix's TypeScript cells: the TypeScript SDK client (1.32.2, 2025-11-25 only) downstream of
`mcp-elicit gateway`, and a TypeScript SDK server upstream (over stdio and over HTTP) for every
other downstream client. One gateway over HTTP serves the module (a `--listen` subprocess);
over stdio the TypeScript client starts its own gateway, as a desktop client would.

Upstreams (tests/gateway/matrix.py): `ref` the reference server, `sdk` a raw-SDK server that
pushes, `fm` a FastMCP server, `ts` / `tsweb` the TypeScript server over stdio / HTTP (the two
share tool names, so theirs are `ts__book`, `tsweb__book`, ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import fastmcp
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_elicit.client import ElicitClient
from mcp_elicit.ui.scripted import ScriptedUI
from tests.gateway.matrix import (
    NEEDS_TS,
    gateway,
    ts_client,
)
from tests.gateway.support import Answers, http_client
from tests.peers.support import WAIT_BOUND_SECONDS, open_page
from tests.support import text_of

pytestmark = [pytest.mark.anyio, NEEDS_TS]

TRANSPORTS = ["stdio", "http"]
FORMS = [
    ("greet", {}, [{"name": "ann"}], "hello ann"),
    ("hello", {}, [{"name": "bo"}], "hello bo"),
    (
        "deploy",
        {"service": "search"},
        [{"environment": "production", "region": "us-east"}, {"confirm": True}],
        "Deployed search to production in us-east with 2 replicas.",
    ),
    ("ts__book", {}, [{"guests": 3}], "Booked for 3."),
    ("tsweb__book", {}, [{"guests": 4}], "Booked for 4."),
]


def front(transport: str, config: Path, gateway_url: str) -> list[str] | str:
    return gateway(config) if transport == "stdio" else gateway_url


def texts(results: list[dict[str, Any]]) -> list[str]:
    return ["".join(c.get("text", "") for c in r["result"]["content"]) for r in results]


# -- the TypeScript client downstream ----------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_typescript_client_answers_forms_from_every_upstream_through_the_gateway(
    transport: str, config: Path, gateway_url: str
) -> None:
    calls = [{"tool": tool, "arguments": args} for tool, args, _, _ in FORMS]
    answers = [answer for _, _, each, _ in FORMS for answer in each]
    async with ts_client(front(transport, config, gateway_url), calls, answers=answers) as run:
        results = await run.results(len(calls))
    assert texts(results) == [expected for _, _, _, expected in FORMS]
    asked = [[e["params"]["mode"] for e in r["before"] if e["event"] == "elicit"] for r in results]
    assert asked == [["form"] * len(each) for _, _, each, _ in FORMS]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_typescript_client_gets_pages_under_our_ids_with_their_completions(
    transport: str, config: Path, gateway_url: str
) -> None:
    """URL requests from the raw-SDK, TypeScript and reference servers, and the reference server's
    -32042 (pushed as a page: the gateway retries upstream itself). The person opens the
    reference server's loopback pages; the example.com ones complete upstream on accept."""
    # service_status first: once connect_service connected the API, it needs no page.
    tools = ["signin", "ts__ts_signin", "service_status", "connect_service"]
    results: list[dict[str, Any]] = []
    async with ts_client(front(transport, config, gateway_url), [{"tool": x} for x in tools]) as run:
        before: list[dict[str, Any]] = []
        while len(results) < len(tools):
            event = await run.next()
            if event["event"] in ("result", "error"):
                results.append({**event, "before": before})
                before = []
                continue
            before.append(event)
            if event["event"] == "elicit" and event["params"]["url"].startswith("http://127.0.0.1:"):
                await open_page(event["params"]["url"])  # the person finishes the page
    assert texts(results) == [
        "signin accept",
        "ts signin accept",
        "Example API: connected, 3 projects.",
        "Connected to Example API.",
    ]
    pages = [[e["params"]["mode"] for e in r["before"] if e["event"] == "elicit"] for r in results]
    assert pages == [["url"]] * len(tools)
    for result in results[:2]:  # the upstream's completion arrives under the id we gave
        [page] = [e["params"] for e in result["before"] if e["event"] == "elicit"]
        completes = [e["elicitationId"] for e in result["before"] if e["event"] == "complete"]
        assert page["mode"] == "url"
        assert page["elicitationId"] != "upstream-1"
        assert not page["elicitationId"].startswith("ts-signin-")
        assert completes == [page["elicitationId"]]


async def test_the_typescript_client_gets_a_typescript_servers_minus_32042_as_a_page_then_the_result(
    gateway_url: str,
) -> None:
    """The page's own server finishes it (`ts__ts_finish_page`, called by another client of the
    same user) while the TypeScript client's call waits; the gateway retries upstream itself."""
    async with ts_client(gateway_url, [{"tool": "ts__ts_need_page"}]) as run:
        page = (await run.until("elicit"))["params"]
        async with http_client(gateway_url, None, "legacy") as other:
            assert text_of(await other.call_tool("ts__ts_finish_page", {})) == "ts finished"
        [result] = await run.results(1)
    assert page["url"] == "https://example.com/ts-authorize"
    assert not page["elicitationId"].startswith("ts-page-")
    assert texts([result]) == ["ts page done"]
    assert [e["elicitationId"] for e in result["before"] if e["event"] == "complete"] == [
        page["elicitationId"]
    ]


# -- the TypeScript server upstream, every other downstream client -------------------------------


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("server", ["ts", "tsweb"])
async def test_the_sdk_client_answers_a_typescript_servers_form_and_url_in_both_eras(
    gateway_url: str, era: str, server: str
) -> None:
    urls: list[str] = []

    async def callback(ctx: Any, params: Any) -> t.ElicitResult:
        if params.mode == "url":
            urls.append(params.url)
            return t.ElicitResult(action="accept")
        return t.ElicitResult(action="accept", content={"guests": 6})

    async with http_client(gateway_url, None, era, callback) as c:
        book = await c.call_tool(f"{server}__book", {})
        signin = await c.call_tool(f"{server}__ts_signin", {})
    assert text_of(book) == "Booked for 6."
    assert text_of(signin) == "ts signin accept"
    assert urls == ["https://example.com/ts-login"]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_the_sdk_client_gets_a_typescript_servers_minus_32042_page_and_then_the_result(
    gateway_url: str, era: str
) -> None:
    asked = anyio.Event()

    async def callback(ctx: Any, params: Any) -> t.ElicitResult:
        assert params.url == "https://example.com/ts-authorize"
        asked.set()
        return t.ElicitResult(action="accept")

    results: list[Any] = []
    async with (
        http_client(gateway_url, None, era, callback) as c,
        http_client(gateway_url, None, "legacy") as o,
    ):

        async def call() -> None:
            results.append(await c.call_tool("tsweb__ts_need_page", {}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with anyio.fail_after(WAIT_BOUND_SECONDS):
                await asked.wait()
            await o.call_tool("tsweb__ts_finish_page", {})
    assert text_of(results[0]) == "ts page done"


async def test_fastmcp_and_our_client_answer_a_typescript_servers_form(gateway_url: str) -> None:
    async def handler(message: str, response_type: type, params: object, context: object) -> dict[str, int]:
        return {"guests": 7}

    async with fastmcp.Client(gateway_url, elicitation_handler=handler) as c:
        by_fastmcp = await c.call_tool("ts__book", {})
    ui = ScriptedUI([{"action": "accept", "content": {"guests": 8}}])
    async with ElicitClient(gateway_url, ui=ui) as client:
        by_ours = await client.call_tool("ts__book", {})
    assert text_of(by_fastmcp) == "Booked for 7."
    assert text_of(by_ours) == "Booked for 8."


async def test_a_stdio_gateway_relays_the_typescript_servers_form_to_the_sdk_client(config: Path) -> None:
    answers = Answers({"guests": 2})
    argv = gateway(config)
    async with Client(
        StdioServerParameters(command=argv[0], args=argv[1:]), mode="2026-07-28", elicitation_callback=answers
    ) as c:
        result = await c.call_tool("ts__book", {})
    assert text_of(result) == "Booked for 2."
    assert answers.messages == ["How many guests?"]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_page_the_person_finishes_before_their_client_answers_still_lets_the_call_finish(
    gateway_url: str, era: str
) -> None:
    """mcpdo's order: the person finishes the page, then says `--done`. The upstream's completion
    reaches the gateway before the client's accept, and the -32042 retry must still go out."""
    async with http_client(gateway_url, None, "legacy") as other:

        async def finish_then_accept(ctx: Any, params: Any) -> t.ElicitResult:
            assert text_of(await other.call_tool("ts__ts_finish_page", {})) == "ts finished"
            return t.ElicitResult(action="accept")

        async with http_client(gateway_url, None, era, finish_then_accept) as c:
            with anyio.fail_after(WAIT_BOUND_SECONDS):
                result = await c.call_tool("ts__ts_need_page", {})
    assert text_of(result) == "ts page done"

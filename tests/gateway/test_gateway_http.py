"""The gateway over streamable HTTP with several users (bearer token -> user), and the attacks on it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as t
import pytest

from mcp_elicit.audit.jsonl import JsonlAuditSink
from tests.gateway.support import PEERS, Answers, greet_at_once, http_client, http_gateway

pytestmark = pytest.mark.anyio

USERS = {"token-a": "alice", "token-b": "bob"}


def config(**extra: Any) -> str:
    sdk = {"command": sys.executable, "args": [PEERS, "sdk"], **extra}
    return json.dumps({"mcpServers": {"sdk": sdk}, "users": USERS})


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_two_users_each_get_only_their_own_question(era: str) -> None:
    alice, bob = Answers({"name": "alice"}), Answers({"name": "bob"})
    async with (
        http_gateway(config()) as (_, url),
        http_client(url, "token-a", era, alice) as a,
        http_client(url, "token-b", era, bob) as b,
    ):
        results = await greet_at_once({"a": a, "b": b})
    assert results["a"].content[0].text == "hello alice"
    assert results["b"].content[0].text == "hello bob"
    assert alice.messages == ["Who are you?"]
    assert bob.messages == ["Who are you?"]


async def test_a_request_without_a_known_token_is_refused_before_the_gateway() -> None:
    async with http_gateway(config()) as (_, url):
        for headers in ({}, {"Authorization": "Bearer nope"}):
            async with httpx2.AsyncClient(headers=headers) as http:
                response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert response.status_code == 401


async def test_bob_cannot_answer_alices_question_with_her_request_state() -> None:
    async with (
        http_gateway(config()) as (_, url),
        http_client(url, "token-a", "2026-07-28", Answers()) as a,
        http_client(url, "token-b", "2026-07-28", Answers()) as b,
    ):
        # Alice's first round: the gateway holds the upstream call and hands her a state.
        first = await a.session.call_tool("greet", {}, allow_input_required=True)
        assert isinstance(first, t.InputRequiredResult)
        state = first.request_state
        stolen = await b.session.call_tool(
            "greet",
            {},
            input_responses={"q": {"action": "accept", "content": {"name": "mallory"}}},
            request_state=state,
            allow_input_required=True,
        )
        assert isinstance(stolen, t.CallToolResult)
        assert stolen.is_error
        # Alice's own retry still works, once.
        own = {"q": {"action": "accept", "content": {"name": "alice"}}}
        done = await a.session.call_tool(
            "greet", {}, input_responses=own, request_state=state, allow_input_required=True
        )
        assert isinstance(done, t.CallToolResult)
        assert done.content[0].text == "hello alice"  # type: ignore[union-attr]
        again = await a.session.call_tool(
            "greet", {}, input_responses=own, request_state=state, allow_input_required=True
        )
        assert isinstance(again, t.CallToolResult)
        assert again.is_error


async def test_each_relayed_question_leaves_one_consent_record_naming_the_user(tmp_path: Path) -> None:
    sink = JsonlAuditSink(tmp_path / "trail.jsonl")
    try:
        async with (
            http_gateway(config(), audit=sink) as (_, url),
            http_client(url, "token-b", "legacy", Answers({"name": "bob"})) as b,
        ):
            await b.call_tool("greet", {})
    finally:
        sink.close()
    records = [json.loads(line) for line in (tmp_path / "trail.jsonl").read_text().splitlines()]
    assert len(records) == 1
    text = json.dumps(records[0])
    assert '"bob"' in text
    assert "sdk-peer" in text
    assert "greet" in text


async def test_a_client_that_disconnects_while_asked_frees_the_upstream_call() -> None:
    asked = anyio.Event()

    async def never_answers(ctx: Any, params: Any) -> t.ElicitResult:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with http_gateway(config()) as (gw, url):

        async def call() -> None:
            async with http_client(url, "token-a", "legacy", never_answers) as a:
                await a.call_tool("greet", {})

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with anyio.fail_after(30):
                await asked.wait()
            book = gw.pools["alice"].books["sdk"]
            assert len(book.calls) == 1
            tg.cancel_scope.cancel()  # the client goes away mid-question
        with anyio.fail_after(30):
            await book.idle.wait()  # the upstream call ended (its question cancelled)
        assert book.budget.count == 0


async def test_a_client_that_cannot_ask_is_asked_through_the_gateways_own_ui_when_configured() -> None:
    from mcp_elicit.ui.scripted import ScriptedUI  # stands in for the BrowserUI (tested in Chromium)

    local = ScriptedUI([{"action": "accept", "content": {"name": "local person"}}])
    async with (
        http_gateway(config(noElicitation="browser"), browser=local) as (_, url),
        http_client(url, "token-a", "legacy") as a,  # no elicitation capability declared
    ):
        result = await a.call_tool("greet", {})
    assert result.content[0].text == "hello local person"  # type: ignore[union-attr]
    assert len(local.seen) == 1


async def test_a_user_with_the_maximum_of_open_questions_gets_the_next_one_refused_in_the_result(
    tmp_path: Path,
) -> None:
    from mcp_elicit.core.policy import Policy
    from mcp_elicit.gateway.relay import MAX_PENDING_PER_USER, TOO_MANY_OPEN

    release = anyio.Event()
    waiting = 0
    all_waiting = anyio.Event()

    async def slow(ctx: Any, params: Any) -> t.ElicitResult:
        nonlocal waiting
        waiting += 1
        if waiting == MAX_PENDING_PER_USER:
            all_waiting.set()
        await release.wait()
        return t.ElicitResult(action="accept", content={"name": "ann"})

    policy = Policy(form="allow", url="allow", rate_limits=())  # the bound itself, not the rate limit
    results: list[Any] = []
    async with (
        http_gateway(config(), policy=policy, audit=JsonlAuditSink(tmp_path / "trail.jsonl")) as (_, url),
        http_client(url, "token-a", "legacy", slow) as a,
    ):

        async def call() -> None:
            results.append(await a.call_tool("greet", {}))

        async with anyio.create_task_group() as tg:
            for _ in range(MAX_PENDING_PER_USER):
                tg.start_soon(call)
            with anyio.fail_after(30):
                await all_waiting.wait()
            over = await a.call_tool("greet", {})
            release.set()
    assert over.is_error is False  # the upstream's result ("cancel"), the notice first
    assert "too many open questions" in over.content[0].text  # type: ignore[union-attr]
    assert [r.content[0].text for r in results] == ["hello ann"] * MAX_PENDING_PER_USER
    refused = [json.loads(line) for line in (tmp_path / "trail.jsonl").read_text().splitlines()]
    refused = [r for r in refused if r["action"] == "cancel"]
    assert [(r["decided_by"], r["reason"]) for r in refused] == [("no_terminal", TOO_MANY_OPEN)]

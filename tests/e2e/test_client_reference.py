"""The client kit against the reference server in both eras, in-process, over stdio and streamable HTTP.

One `ElicitClient` with a scripted UI serves 2025-11-25 pushes and 2026-07-28 embedded requests
alike (M1, M2); each question is shown with the server that asks and the request it serves (C4),
defaults pre-filled (F6), answers validated before they leave (F7).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcp_elicit.client import ElicitClient, Pipeline
from mcp_elicit.client.ui_protocol import FormPrompt, Purpose
from mcp_elicit.reference import build_reference_server
from mcp_elicit.ui.scripted import ScriptedUI
from tests.e2e.servers import reference_over_stdio, serving_http
from tests.support import text_of

pytestmark = pytest.mark.anyio

PROTOCOLS = ["legacy", "modern"]
TRANSPORTS = ["memory", "stdio", "http"]
BOUND_SECONDS = 60.0


@asynccontextmanager
async def connected(transport: str, protocol: str, ui: Any) -> AsyncIterator[ElicitClient]:
    with anyio.fail_after(BOUND_SECONDS):
        if transport == "memory":
            async with ElicitClient(build_reference_server(), ui=ui, protocol=protocol) as c:
                yield c
        elif transport == "stdio":
            async with ElicitClient(reference_over_stdio(), ui=ui, protocol=protocol) as c:
                yield c
        else:
            async with (
                serving_http(build_reference_server()) as url,
                ElicitClient(url, ui=ui, protocol=protocol) as c,
            ):
                yield c


DEPLOY = [
    {"match": {"fields": ["environment"]}, "content": {"environment": "production", "replicas": 3}},
    {"match": {"message": "affects live traffic"}, "content": {"confirm": True}},
]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_deploy_is_answered_through_the_pipeline_in_both_eras(protocol: str, transport: str) -> None:
    ui = ScriptedUI(DEPLOY)
    async with connected(transport, protocol, ui) as client:
        result = await client.call_tool("deploy", {"service": "checkout"})
        expected = "2026-07-28" if protocol == "modern" else "2025-11-25"
        assert client.protocol_version == expected
    assert text_of(result) == "Deployed checkout to production in eu-west with 3 replicas."
    first = ui.seen[0]
    assert isinstance(first, FormPrompt)
    assert (first.requester.name, first.requester.version) == ("mcp-elicit-reference", "0.1.0")
    assert first.purpose == Purpose("tools/call", "deploy", {"service": "checkout"})
    assert first.values == {"region": "eu-west", "replicas": 2}  # defaults pre-filled (F6)
    assert first.form.field("region").options[0].title == "Europe (Ireland)"
    outcomes = client.outcomes
    assert [(o.action, o.decided_by, o.mode) for o in outcomes] == [("accept", "script", "form")] * 2
    assert outcomes[0].delivery == ("embedded" if protocol == "modern" else "push")
    assert {o.attribution for o in outcomes} <= {"exact", "sole_call_in_flight"}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_decline_reaches_the_tool_and_stops_the_signup(protocol: str) -> None:
    ui = ScriptedUI(
        [
            {"content": {"username": "ada", "email": "ada@example.org"}},
            {"accept_defaults": True},
            {"action": "decline"},
        ]
    )
    async with connected("memory", protocol, ui) as client:
        result = await client.call_tool("signup")
    assert text_of(result) == "Signup stopped at step 3."
    assert [o.action for o in client.outcomes] == ["accept", "accept", "decline"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_invalid_scripted_answer_never_reaches_the_server_F7(protocol: str) -> None:
    ui = ScriptedUI([{"content": {"username": "a", "email": "not an email"}}])
    async with connected("memory", protocol, ui) as client:
        result = await client.call_tool("signup")
    assert text_of(result) == "Signup stopped at step 1 (cancel)."
    assert client.outcomes[0].action == "cancel"
    assert len(ui.notices) == 1  # the script is told its answer was refused


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_questions_from_a_prompt_and_a_resource_name_the_request_they_serve_C4(protocol: str) -> None:
    ui = ScriptedUI(
        [{"match": {"method": "prompts/get"}, "content": {"name": "Lin"}}, {"content": {"name": "Bo"}}]
    )
    async with connected("stdio", protocol, ui) as client:
        prompt = await client.get_prompt("greeting")
        resource = await client.read_resource("notes://tea")
    assert "Lin" in prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "for Bo" in resource.contents[0].text  # type: ignore[union-attr]
    assert [(p.purpose.method, p.purpose.target) for p in ui.seen] == [
        ("prompts/get", "greeting"),
        ("resources/read", "notes://tea"),
    ]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_concurrent_calls_are_never_guessed_between_C4(transport: str) -> None:
    # Two calls in flight: a push over stdio cannot be tied to either (it says so); over HTTP and in
    # 2026-07-28 each question arrives in its own call's context and is attributed exactly.
    ui = ScriptedUI([{"content": {"name": "A"}, "repeat": True}])
    async with connected(transport, "legacy", ui) as client, anyio.create_task_group() as tg:
        tg.start_soon(client.read_resource, "notes://one")
        tg.start_soon(client.read_resource, "notes://two")
    attributions = {o.attribution for o in client.outcomes}
    if transport == "stdio":
        assert attributions <= {"none", "sole_call_in_flight"}
        for prompt in ui.seen:
            if prompt.purpose == Purpose():
                assert prompt.warnings
    else:
        assert attributions == {"exact"}
        assert sorted(p.purpose.target or "" for p in ui.seen) == ["notes://one", "notes://two"]


async def test_a_client_that_declares_url_mode_still_answers_forms() -> None:
    ui = ScriptedUI(DEPLOY)
    with anyio.fail_after(BOUND_SECONDS):
        async with ElicitClient(
            build_reference_server(), pipeline=Pipeline(ui, modes=("form", "url"))
        ) as client:
            result = await client.call_tool("deploy", {"service": "api"})
    assert text_of(result).startswith("Deployed api to production")

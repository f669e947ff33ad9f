"""The gateway over stdio, driven as a desktop client would: `mcp-elicit gateway --config f.json`.

Downstream: the SDK's `Client` in both eras and FastMCP's `Client`. Upstream: the reference server,
a raw-SDK server that pushes `ctx.elicit` and a FastMCP server (tests/gateway/peers.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.client.stdio import stdio_client

from tests.gateway.support import Answers, servers, stdio_gateway, write_config

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


@pytest.mark.parametrize("era", ERAS)
async def test_questions_from_every_upstream_reach_the_sdk_client_and_its_answers_go_back(
    tmp_path: Path, era: str
) -> None:
    answers = Answers({"name": "ann"})
    gateway = stdio_gateway(write_config(tmp_path / "f.json"))
    async with Client(gateway, mode=era, elicitation_callback=answers) as c:
        names = {tool.name for tool in (await c.list_tools()).tools}
        assert {"greet", "hello", "deploy", "login"} <= names
        greet = await c.call_tool("greet", {})
        hello = await c.call_tool("hello", {})
    assert [x.text for x in greet.content] == ["hello ann"]  # type: ignore[union-attr]
    assert [x.text for x in hello.content] == ["hello ann"]  # type: ignore[union-attr]
    assert answers.messages == ["Who are you?", "Who are you?"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_reference_server_form_with_validation_passes_through_in_both_eras(
    tmp_path: Path, era: str
) -> None:
    answers = Answers({"environment": "staging", "region": "eu-west", "replicas": 2})
    gateway = stdio_gateway(write_config(tmp_path / "f.json"))
    async with Client(gateway, mode=era, elicitation_callback=answers) as c:
        result = await c.call_tool("deploy", {"service": "web"})
    assert result.is_error is False
    assert "Deployed web to staging" in result.content[0].text  # type: ignore[union-attr]


async def test_a_secret_seeking_form_from_upstream_never_reaches_the_client(tmp_path: Path) -> None:
    answers = Answers()
    config = write_config(tmp_path / "f.json", reference=False)
    async with Client(stdio_gateway(config), mode="legacy", elicitation_callback=answers) as c:
        result = await c.call_tool("login", {})
    assert answers.messages == []
    assert result.is_error is False  # the model is told why, then sees the upstream's own result
    assert "Password" in result.content[0].text  # type: ignore[union-attr]
    assert result.content[-1].text == "login decline"  # type: ignore[union-attr]


async def test_a_look_alike_url_from_upstream_never_reaches_the_client(tmp_path: Path) -> None:
    answers = Answers()
    config = write_config(tmp_path / "f.json", reference=False)
    async with Client(stdio_gateway(config), mode="legacy", elicitation_callback=answers) as c:
        result = await c.call_tool("lookalike", {})
    assert answers.messages == []
    assert result.content[-1].text == "url decline"  # type: ignore[union-attr]


async def test_a_url_elicitation_and_its_completion_reach_the_session_that_asked_under_our_id(
    tmp_path: Path,
) -> None:
    seen: list[tuple[str, str | None]] = []
    completed: list[str] = []

    async def callback(ctx: Any, params: Any) -> t.ElicitResult:
        seen.append((params.url, params.elicitation_id))
        return t.ElicitResult(action="accept")

    async def on_message(message: Any) -> None:
        if isinstance(message, t.ElicitCompleteNotification):
            completed.append(message.params.elicitation_id)

    config = write_config(tmp_path / "f.json", reference=False)
    async with Client(
        stdio_gateway(config), mode="legacy", elicitation_callback=callback, message_handler=on_message
    ) as c:
        result = await c.call_tool("signin", {})
    assert result.content[0].text == "signin accept"  # type: ignore[union-attr]
    assert len(seen) == 1
    url, ours = seen[0]
    assert url == "https://example.com/login"
    assert ours is not None
    assert ours != "upstream-1"
    assert completed == [ours]


async def test_a_flood_of_questions_is_rate_limited(tmp_path: Path) -> None:
    answers = Answers()
    config = write_config(tmp_path / "f.json", reference=False)
    async with Client(stdio_gateway(config), mode="legacy", elicitation_callback=answers) as c:
        result = await c.call_tool("flood", {"times": 12})
    assert result.is_error is False  # the upstream's flag; the rate limit is said first, not silent
    actions = result.content[-1].text.split(",")  # type: ignore[union-attr]
    assert len(answers.messages) < 12  # the burst limit stopped the rest before the client
    assert actions.count("accept") == len(answers.messages)
    assert set(actions) - {"accept"}


async def test_a_client_without_elicitation_gets_a_refusal_the_model_can_relay(tmp_path: Path) -> None:
    config = write_config(tmp_path / "f.json", reference=False)
    async with Client(stdio_gateway(config), mode="legacy") as c:
        result = await c.call_tool("greet", {})
    assert result.is_error is False  # the upstream's own result, after the notice
    assert "could not be shown" in result.content[0].text  # type: ignore[union-attr]
    assert result.content[-1].text == "decline"  # type: ignore[union-attr]  (the upstream's own result)


async def test_an_upstream_that_fails_to_start_does_not_take_the_others_down(tmp_path: Path) -> None:
    config = write_config(tmp_path / "f.json", reference=False, broken=True)
    async with Client(stdio_gateway(config), mode="legacy", elicitation_callback=Answers()) as c:
        names = {tool.name for tool in (await c.list_tools()).tools}
        result = await c.call_tool("greet", {})
    assert {"greet", "hello"} <= names
    assert result.content[0].text == "hello ann"  # type: ignore[union-attr]


async def test_fastmcp_client_gets_questions_through_the_gateway(tmp_path: Path) -> None:
    from fastmcp import Client as FastMCPClient
    from fastmcp.client.transports import StdioTransport

    asked: list[str] = []

    async def handler(message: str, response_type: type, params: object, context: object) -> dict[str, str]:
        asked.append(message)
        return {"name": "bo"}

    params = stdio_gateway(write_config(tmp_path / "f.json", reference=False))
    transport = StdioTransport(command=params.command, args=params.args)
    async with FastMCPClient(transport, elicitation_handler=handler) as c:
        result = await c.call_tool("greet", {})
    assert asked == ["Who are you?"]
    assert result.content[0].text == "hello bo"  # type: ignore[union-attr]


@pytest.mark.parametrize("protocol", ["auto", "legacy", "modern"])
async def test_our_own_client_gets_the_upstream_question_through_the_gateway(
    tmp_path: Path, protocol: str
) -> None:
    from mcp_elicit.client import ElicitClient
    from mcp_elicit.ui.scripted import ScriptedUI

    ui = ScriptedUI([{"action": "accept", "content": {"name": "cy"}}])
    params = stdio_gateway(write_config(tmp_path / "f.json", reference=False))
    async with ElicitClient(params, ui=ui, protocol=protocol) as client:
        result = await client.call_tool("greet", {})
        outcomes = client.outcomes
    assert result.content[0].text == "hello cy"  # type: ignore[union-attr]
    assert [o.action for o in outcomes] == ["accept"]
    assert outcomes[0].server.name == "mcp-elicit-gateway"


async def test_prompts_and_resources_are_offered_and_a_prompts_question_is_relayed(tmp_path: Path) -> None:
    answers = Answers({"name": "dee"})
    gateway = stdio_gateway(write_config(tmp_path / "f.json"))
    async with Client(gateway, mode="legacy", elicitation_callback=answers) as c:
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        prompt = await c.get_prompt("greeting", {})
        resources = (await c.list_resources()).resources
    assert "greeting" in prompts
    assert answers.messages == ["Who is reading?"]
    assert "dee" in prompt.messages[0].content.text  # type: ignore[union-attr]
    assert isinstance(resources, list)


async def test_an_upstream_32042_page_is_pushed_to_the_client_and_the_call_retried_after_its_completion(
    tmp_path: Path,
) -> None:
    pushed: list[tuple[str, str | None]] = []
    completed: list[str] = []
    asked = anyio.Event()

    async def callback(ctx: Any, params: Any) -> t.ElicitResult:
        pushed.append((params.url, params.elicitation_id))
        asked.set()
        return t.ElicitResult(action="accept")

    async def on_message(message: Any) -> None:
        if isinstance(message, t.ElicitCompleteNotification):
            completed.append(message.params.elicitation_id)

    config = write_config(tmp_path / "f.json", reference=False)
    results: list[Any] = []
    async with Client(
        stdio_gateway(config), mode="legacy", elicitation_callback=callback, message_handler=on_message
    ) as c:

        async def call() -> None:
            results.append(await c.call_tool("need_page", {}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with anyio.fail_after(30):
                await asked.wait()
            await c.call_tool("finish_page", {})  # the page's server says it is done
    assert results[0].content[-1].text == "page done"
    assert [url for url, _ in pushed] == ["https://example.com/authorize"]
    assert pushed[0][1] != "page-1"
    assert completed == [pushed[0][1]]


async def test_an_upstream_32042_page_the_client_declines_ends_the_call_as_a_tool_error_without_a_traceback(
    tmp_path: Path,
) -> None:
    async def callback(ctx: Any, params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="decline")

    config = write_config(tmp_path / "f.json", reference=False)
    async with Client(stdio_gateway(config), mode="legacy", elicitation_callback=callback) as c:
        result = await c.call_tool("need_page", {})
    assert result.is_error
    assert "declined" in result.content[0].text  # type: ignore[union-attr]


async def test_a_url_elicitation_reaches_a_2026_client_as_a_round_and_the_call_finishes(
    tmp_path: Path,
) -> None:
    seen: list[str] = []

    async def callback(ctx: Any, params: Any) -> t.ElicitResult:
        seen.append(params.url)
        return t.ElicitResult(action="accept")

    config = write_config(tmp_path / "f.json", reference=False)
    async with Client(stdio_gateway(config), mode="2026-07-28", elicitation_callback=callback) as c:
        signin = await c.call_tool("signin", {})
        lookalike = await c.call_tool("lookalike", {})
    assert signin.content[-1].text == "signin accept"  # type: ignore[union-attr]
    assert lookalike.content[-1].text == "url decline"  # type: ignore[union-attr]
    assert seen == ["https://example.com/login"]


async def test_without_an_elicit_config_each_relayed_question_is_recorded_on_the_default_trail(
    tmp_path: Path,
) -> None:
    from mcp_elicit.audit.sqlite import SqliteAuditSink
    from mcp_elicit.config import default_audit_db_path

    answers = Answers({"name": "ann"})
    config = write_config(tmp_path / "f.json", reference=False)
    async with Client(stdio_gateway(config), mode="legacy", elicitation_callback=answers) as c:
        await c.call_tool("greet", {})
    sink = SqliteAuditSink(default_audit_db_path())  # the test's own XDG_DATA_HOME (tests/conftest.py)
    try:
        records = list(sink.iter_records())
        intact = sink.verify().breaks == ()
    finally:
        sink.close()
    assert intact
    assert len(records) == 1
    assert records[0]["action"] == "accept"
    text = json.dumps(records[0])
    assert "mcp-elicit-gateway" in text
    assert "greet" in text


async def test_a_file_with_a_users_map_serves_its_one_local_user_over_stdio(tmp_path: Path) -> None:
    # The users map names HTTP callers by bearer token; a stdio client has none and is the local user.
    config = write_config(tmp_path / "f.json", users={"a-long-random-token": "alice"}, reference=False)
    async with Client(stdio_gateway(config), mode="legacy", elicitation_callback=Answers()) as c:
        result = await c.call_tool("greet", {})
    assert result.is_error is False
    assert [x.text for x in result.content] == ["hello ann"]  # type: ignore[union-attr]


async def test_the_consent_record_names_the_upstream_by_its_key_when_two_entries_run_the_same_server(
    tmp_path: Path,
) -> None:
    """Found by a new user: two entries of one server (two accounts, say) wrote records that could
    not be told apart, both naming the server as it introduced itself and the same command line."""
    trail = tmp_path / "trail.jsonl"
    policy = f'[default]\nform = "allow"\n[audit]\nsink = "jsonl"\npath = "{trail}"\n'
    (tmp_path / "g.toml").write_text(policy)
    fm = servers()["fm"]
    (tmp_path / "f.json").write_text(json.dumps({"mcpServers": {"work": fm, "home": fm}}))
    gateway = stdio_gateway(tmp_path / "f.json")
    gateway.args = [*gateway.args, "--elicit-config", str(tmp_path / "g.toml")]
    async with Client(gateway, mode="legacy", elicitation_callback=Answers({"name": "ann"})) as c:
        await c.call_tool("home__hello", {})
        await c.call_tool("work__hello", {})
    records = [json.loads(line) for line in trail.read_text().splitlines()]
    assert [r["details"]["upstream"] for r in records] == ["home", "work"]
    assert [r["call"]["name"] for r in records] == ["hello", "hello"]
    assert {r["server"]["where"] for r in records} == {records[0]["server"]["where"]}  # no help there
    assert all(r["client"]["version"] for r in records)


async def test_a_server_the_file_marks_disabled_is_left_out_with_one_line(tmp_path: Path) -> None:
    """Found by a new user: Cline's and Roo Code's files keep `"disabled": true` on servers turned
    off; the gateway started them anyway (a broken one logged as unavailable, a working one's tools
    offered to the model)."""
    fm = servers()["fm"]
    gone = {"command": "/nonexistent", "disabled": True}
    entries = {"on": fm, "off": {**fm, "disabled": True}, "gone": gone, "kept": {**fm, "disabled": False}}
    (tmp_path / "f.json").write_text(json.dumps({"mcpServers": entries}))
    log = tmp_path / "gateway.log"
    with log.open("w") as errlog:
        transport = stdio_client(stdio_gateway(tmp_path / "f.json"), errlog=errlog)
        async with Client(transport, mode="legacy") as c:
            names = sorted(tool.name for tool in (await c.list_tools()).tools)
    assert names == sorted(f"{key}__{tool}" for key in ("kept", "on") for tool in ("hello", "book_table"))
    logged = log.read_text()
    assert "unavailable" not in logged
    assert [line for line in logged.splitlines() if "disabled" in line] == [
        'INFO mcp_elicit.gateway: upstreams left out ("disabled": true in the file): gone, off'
    ]

"""`ask` and `confirm` behave the same on 2025-11-25 sessions and 2026-07-28 requests (M1–M4, F7, C1–C3)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import mcp_types as t
import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_elicit.core.refusals import refusal_of
from mcp_elicit.errors import AnswerError, CapabilityError, FieldProblem
from mcp_elicit.server import MAX_ASKS_PER_CALL, ElicitSettings, ask, confirm, install
from tests.support import ScriptedCallback, text_of

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


@dataclasses.dataclass
class Target:
    environment: Literal["staging", "production"]
    replicas: int = 2


@dataclasses.dataclass
class Name:
    name: str


def make_server(settings: ElicitSettings | None = None) -> tuple[MCPServer[Any], list[str]]:
    server: MCPServer[Any] = MCPServer("ask-test")
    install(server, settings)
    runs: list[str] = []

    @server.tool()
    async def deploy(ctx: Context, service: str) -> str:
        runs.append("deploy")
        target = await ask(ctx, f"Where should {service} go?", Target)
        if not target.accepted:
            return f"nothing deployed ({target.action})"
        assert isinstance(target.data, Target)
        if not await confirm(ctx, f"Deploy {service} to {target.data.environment}?"):
            return "not confirmed"
        return f"{service} -> {target.data.environment} x{target.data.replicas}"

    @server.tool()
    async def two_names(ctx: Context) -> str:
        first = await ask(ctx, "First name?", Name)
        second = await ask(ctx, "Second name?", Name)
        assert first.data is not None
        assert second.data is not None
        return f"{first.data.name} & {second.data.name}"

    @server.tool()
    async def survey(ctx: Context, questions: int) -> str:
        yes = [await confirm(ctx, f"Question {n}?") for n in range(questions)]
        return f"{sum(yes)} yes"

    @server.prompt()
    async def greet(ctx: Context) -> str:
        who = await ask(ctx, "Who should I greet?", Name)
        return f"Say hello to {who.data.name}" if who.accepted and who.data else "Say hello"

    @server.resource("profile://{user}")
    async def profile(user: str, ctx: Context) -> str:
        who = await ask(ctx, f"Display name for {user}?", Name)
        return f"{user}: {who.data.name}" if who.accepted and who.data else user

    return server, runs


def client(server: MCPServer[Any], era: str, callback: Any, **kw: Any) -> Client:
    return Client(server, mode=era, elicitation_callback=callback, **kw)


@pytest.mark.parametrize("era", ERAS)
async def test_an_accepted_form_reaches_the_tool_as_its_own_type(era: str) -> None:
    server, _ = make_server()
    cb = ScriptedCallback(
        [
            {"action": "accept", "content": {"environment": "staging", "replicas": 3}},
            {"action": "accept", "content": {"confirm": True}},
        ]
    )
    async with client(server, era, cb) as c:
        result = await c.call_tool("deploy", {"service": "api"})
    assert text_of(result) == "api -> staging x3"
    assert [s["message"] for s in cb.seen] == ["Where should api go?", "Deploy api to staging?"]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_reach_the_tool_without_data(era: str, action: str) -> None:
    server, _ = make_server()
    async with client(server, era, ScriptedCallback([{"action": action}])) as c:
        result = await c.call_tool("deploy", {"service": "api"})
    assert text_of(result) == f"nothing deployed ({action})"


@pytest.mark.parametrize("era", ERAS)
async def test_defaults_are_applied_when_the_client_leaves_them_out(era: str) -> None:
    server, _ = make_server()
    cb = ScriptedCallback(
        [
            {"action": "accept", "content": {"environment": "production"}},
            {"action": "accept", "content": {"confirm": True}},
        ]
    )
    async with client(server, era, cb) as c:
        result = await c.call_tool("deploy", {"service": "db"})
    assert text_of(result) == "db -> production x2"


@pytest.mark.parametrize("era", ERAS)
async def test_progressive_questions_come_back_in_order_each_bound_to_its_question(era: str) -> None:
    server, _ = make_server()
    cb = ScriptedCallback(
        [{"action": "accept", "content": {"name": "Ada"}}, {"action": "accept", "content": {"name": "Bob"}}]
    )
    async with client(server, era, cb) as c:
        result = await c.call_tool("two_names", {})
    assert text_of(result) == "Ada & Bob"
    assert [s["message"] for s in cb.seen] == ["First name?", "Second name?"]


async def test_on_2026_07_28_the_handler_reruns_once_per_round_and_never_pushes() -> None:
    server, runs = make_server()
    cb = ScriptedCallback(
        [
            {"action": "accept", "content": {"environment": "staging"}},
            {"action": "accept", "content": {"confirm": False}},
        ]
    )
    async with client(server, "2026-07-28", cb) as c:
        result = await c.call_tool("deploy", {"service": "api"})
    assert text_of(result) == "not confirmed"
    assert runs == ["deploy", "deploy", "deploy"]


@pytest.mark.parametrize("era", ERAS)
async def test_an_invalid_answer_is_asked_again_and_never_reaches_the_tool(era: str) -> None:
    server, _ = make_server()
    cb = ScriptedCallback(
        [
            {"action": "accept", "content": {"environment": "moon"}},
            {"action": "accept", "content": {"environment": "staging", "replicas": "many"}},
            {"action": "accept", "content": {"environment": "staging"}},
            {"action": "accept", "content": {"confirm": True}},
        ]
    )
    async with client(server, era, cb) as c:
        result = await c.call_tool("deploy", {"service": "api"})
    assert text_of(result) == "api -> staging x2"
    assert len(cb.seen) == 4


@pytest.mark.parametrize("era", ERAS)
async def test_answers_that_stay_invalid_end_the_call_with_an_error_instead_of_looping(era: str) -> None:
    server, _ = make_server()
    cb = ScriptedCallback([{"action": "accept", "content": {"environment": "moon"}}] * 10)
    async with client(server, era, cb) as c:
        result = await c.call_tool("deploy", {"service": "api"})
    assert result.is_error
    assert len(cb.seen) == 3


@pytest.mark.parametrize("era", ERAS)
async def test_ask_works_the_same_inside_prompts_and_resource_reads(era: str) -> None:
    server, _ = make_server()
    cb = ScriptedCallback(
        [{"action": "accept", "content": {"name": "Ada"}}, {"action": "accept", "content": {"name": "Lin"}}]
    )
    async with client(server, era, cb) as c:
        prompt = await c.get_prompt("greet", {})
        resource = await c.read_resource("profile://u1")
    assert prompt.messages[0].content.text == "Say hello to Ada"  # type: ignore[union-attr]
    assert resource.contents[0].text == "u1: Lin"  # type: ignore[union-attr]


async def test_a_2025_11_25_client_without_elicitation_gives_the_tool_a_capability_error() -> None:
    server: MCPServer[Any] = MCPServer("cap")
    install(server)
    caught: list[BaseException] = []

    @server.tool()
    async def needs_form(ctx: Context) -> str:
        try:
            await ask(ctx, "Name?", Name)
        except CapabilityError as exc:
            caught.append(exc)
            return "no form support"
        return "asked"

    async with Client(server, mode="legacy") as c:
        result = await c.call_tool("needs_form", {})
    assert text_of(result) == "no form support"
    assert isinstance(caught[0], CapabilityError)
    assert caught[0].mode == "form"


async def test_a_2026_07_28_client_without_elicitation_gets_minus_32021_with_required_capabilities() -> None:
    server, _ = make_server()
    async with Client(server, mode="2026-07-28") as c:
        with pytest.raises(MCPError) as info:
            await c.call_tool("two_names", {})
    assert info.value.error.code == t.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert info.value.error.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


def test_answer_error_names_every_bad_field() -> None:
    from mcp_elicit.core.forms import form_of

    with pytest.raises(AnswerError) as info:
        form_of(Target).parse({"environment": "moon", "replicas": "x"})
    assert set(info.value.fields) == {"environment", "replicas"}


@pytest.mark.parametrize("era", ERAS)
async def test_a_message_over_the_limit_is_refused_before_anything_is_sent(era: str) -> None:
    from mcp_elicit.core.limits import MAX_MESSAGE_CHARS
    from mcp_elicit.errors import FormDefinitionError

    server: MCPServer[Any] = MCPServer("long")
    install(server)
    caught: list[FormDefinitionError] = []

    @server.tool()
    async def chatty(ctx: Context) -> str:
        try:
            await ask(ctx, "x" * (MAX_MESSAGE_CHARS + 1), Name)
        except FormDefinitionError as exc:
            caught.append(exc)
        return "done"

    cb = ScriptedCallback([])
    async with client(server, era, cb) as c:
        await c.call_tool("chatty", {})
    assert caught[0].construct == "message"
    assert cb.seen == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_call_asking_past_the_per_call_limit_ends_with_an_error_in_both_eras(era: str) -> None:
    server, _ = make_server()
    cb = ScriptedCallback([{"action": "accept", "content": {"confirm": True}}] * (2 * MAX_ASKS_PER_CALL + 1))
    async with client(server, era, cb, input_required_max_rounds=2 * MAX_ASKS_PER_CALL) as c:
        within = await c.call_tool("survey", {"questions": MAX_ASKS_PER_CALL})
        cb.seen.clear()
        over = await c.call_tool("survey", {"questions": MAX_ASKS_PER_CALL + 1})
    assert text_of(within) == f"{MAX_ASKS_PER_CALL} yes"
    assert over.is_error
    too_many = AnswerError((FieldProblem("", "too_many_questions"),))
    assert text_of(over) == refusal_of(too_many, modern=False, method="tools/call").text
    assert len(cb.seen) == MAX_ASKS_PER_CALL

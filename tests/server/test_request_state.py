"""requestState is attacker-controlled input (M3): tampered, expired and replayed state is refused."""

from __future__ import annotations

import dataclasses
from typing import Any

import mcp_types as t
import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_elicit.server import ElicitSettings, ask, install
from mcp_elicit.testing import ManualClock
from tests.support import ScriptedCallback, text_of

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Name:
    name: str


def make_server(clock: ManualClock) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("state-test")
    install(server, ElicitSettings(clock=clock, state_ttl=60.0))

    @server.tool()
    async def hello(ctx: Context, greeting: str = "Hello") -> str:
        who = await ask(ctx, "Your name?", Name)
        return f"{greeting}, {who.data.name}" if who.accepted and who.data else "nobody"

    return server


def accept(name: str) -> dict[str, t.InputResponse]:
    return {"elicitation-0": t.ElicitResult(action="accept", content={"name": name})}


async def first_round(c: Client, **args: Any) -> t.InputRequiredResult:
    first = await c.session.call_tool("hello", args, allow_input_required=True)
    assert isinstance(first, t.InputRequiredResult)
    return first


async def retry(c: Client, state: str | None, responses: Any, **args: Any) -> Any:
    return await c.session.call_tool(
        "hello", args, input_responses=responses, request_state=state, allow_input_required=True
    )


def assert_refused_state(err: MCPError) -> None:
    assert err.error.code == t.INVALID_PARAMS
    assert err.error.data == {"reason": "invalid_request_state"}


async def test_the_first_round_embeds_one_form_request_and_opaque_state() -> None:
    async with Client(make_server(ManualClock()), mode="2026-07-28", elicitation_callback=_never) as c:
        first = await first_round(c)
    assert first.input_requests is not None
    assert list(first.input_requests) == ["elicitation-0"]
    request = first.input_requests["elicitation-0"]
    assert request.method == "elicitation/create"
    assert first.request_state is not None
    assert "name" not in first.request_state  # sealed: the client cannot read it


async def test_a_valid_retry_completes_the_call() -> None:
    async with Client(make_server(ManualClock()), mode="2026-07-28", elicitation_callback=_never) as c:
        first = await first_round(c)
        done = await retry(c, first.request_state, accept("Ada"))
    assert text_of(done) == "Hello, Ada"


async def test_tampered_state_is_refused() -> None:
    async with Client(make_server(ManualClock()), mode="2026-07-28", elicitation_callback=_never) as c:
        first = await first_round(c)
        assert first.request_state is not None
        forged = first.request_state[:-4] + ("AAAA" if not first.request_state.endswith("AAAA") else "BBBB")
        with pytest.raises(MCPError) as info:
            await retry(c, forged, accept("Ada"))
    assert_refused_state(info.value)


async def test_expired_state_is_refused() -> None:
    clock = ManualClock()
    async with Client(make_server(clock), mode="2026-07-28", elicitation_callback=_never) as c:
        first = await first_round(c)
        clock.advance(61.0)
        with pytest.raises(MCPError) as info:
            await retry(c, first.request_state, accept("Ada"))
    assert_refused_state(info.value)


async def test_replayed_state_is_refused_the_second_time() -> None:
    async with Client(make_server(ManualClock()), mode="2026-07-28", elicitation_callback=_never) as c:
        first = await first_round(c)
        await retry(c, first.request_state, accept("Ada"))
        with pytest.raises(MCPError) as info:
            await retry(c, first.request_state, accept("Mallory"))
    assert_refused_state(info.value)


async def test_state_minted_for_other_arguments_is_refused() -> None:
    async with Client(make_server(ManualClock()), mode="2026-07-28", elicitation_callback=_never) as c:
        first = await first_round(c, greeting="Hi")
        with pytest.raises(MCPError) as info:
            await retry(c, first.request_state, accept("Ada"), greeting="Bye")
    assert info.value.error.code == t.INVALID_PARAMS


async def test_a_retry_without_the_answer_is_asked_again_instead_of_failing() -> None:
    async with Client(make_server(ManualClock()), mode="2026-07-28", elicitation_callback=_never) as c:
        first = await first_round(c)
        again = await retry(c, first.request_state, None)
    assert isinstance(again, t.InputRequiredResult)
    assert again.input_requests is not None
    assert list(again.input_requests) == ["elicitation-0"]


async def test_unexpected_response_keys_are_ignored() -> None:
    async with Client(make_server(ManualClock()), mode="2026-07-28", elicitation_callback=_never) as c:
        first = await first_round(c)
        responses = {**accept("Ada"), "stray": t.ElicitResult(action="accept", content={"x": "y"})}
        done = await retry(c, first.request_state, responses)
    assert text_of(done) == "Hello, Ada"


async def test_an_answer_to_the_first_question_is_taken_without_state_as_the_suite_expects() -> None:
    async with Client(make_server(ManualClock()), mode="2026-07-28", elicitation_callback=_never) as c:
        done = await retry(c, None, accept("Ada"))
    assert text_of(done) == "Hello, Ada"


async def test_without_state_a_client_cannot_answer_questions_it_was_never_shown() -> None:
    server: MCPServer[Any] = MCPServer("two-steps")
    install(server)

    @server.tool()
    async def two(ctx: Context) -> str:
        first = await ask(ctx, "First?", Name, key="first")
        second = await ask(ctx, "Second?", Name, key="second")
        return f"{first.data} {second.data}"

    answers = {
        "first": t.ElicitResult(action="accept", content={"name": "a"}),
        "second": t.ElicitResult(action="accept", content={"name": "b"}),
    }
    async with Client(server, mode="2026-07-28", elicitation_callback=_never) as c:
        again = await c.session.call_tool("two", {}, input_responses=answers, allow_input_required=True)
    assert isinstance(again, t.InputRequiredResult)
    assert again.input_requests is not None
    assert list(again.input_requests) == ["second"]


async def _never(context: Any, params: Any) -> t.ElicitResult:
    raise AssertionError("these tests drive the rounds by hand")


async def test_a_replayed_answer_is_neither_checked_again_nor_its_question_rebuilt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 14: on each 2026-07-28 retry every earlier `ask` replays; that must cost O(1), not a new
    validation, wire schema and digest per earlier question."""
    from mcp_elicit.core.form_model import Form
    from mcp_elicit.server import questions

    checked: list[Any] = []
    original = Form.validate
    monkeypatch.setattr(
        Form, "validate", lambda self, content: checked.append(content) or original(self, content)
    )
    questions._cached_step.cache_clear()
    server: MCPServer[Any] = MCPServer("replay-cost")
    install(server)

    @server.tool()
    async def three(ctx: Context) -> str:
        names = [await ask(ctx, f"Name {i}?", Name, key=f"n{i}") for i in range(3)]
        return ",".join(a.data.name for a in names if a.data)

    script = [{"action": "accept", "content": {"name": n}} for n in ("a", "b", "c")]
    async with Client(server, mode="2026-07-28", elicitation_callback=ScriptedCallback(script)) as c:
        assert text_of(await c.call_tool("three", {})) == "a,b,c"
    assert len(checked) == 3  # one check per fresh answer; the 3 replays are trusted
    info = questions._cached_step.cache_info()
    assert (info.misses, info.hits) == (3, 6)  # built once each; runs 2-4 find 1 + 2 + 3 again

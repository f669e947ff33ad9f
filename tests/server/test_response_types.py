"""On 2026-07-28 each input response must be a result of the kind its request asked for."""

from __future__ import annotations

import dataclasses
from typing import Any

import mcp_types as t
import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from mcp_elicit.server import ElicitSettings, Question, RawRequest, gather, install
from mcp_elicit.testing import ManualClock
from tests.support import text_of

pytestmark = pytest.mark.anyio


@dataclasses.dataclass
class Name:
    name: str


SAMPLING = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
ELICIT = t.ElicitResult(action="accept", content={"name": "Ada"})
SAMPLED = t.CreateMessageResult(role="assistant", content=t.TextContent(type="text", text="x"), model="m")
ROOTS = t.ListRootsResult(roots=[t.Root(uri="file:///tmp")])


def make_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("types-test")
    install(server, ElicitSettings(clock=ManualClock()))

    @server.tool()
    async def mixed(ctx: Context) -> str:
        got = await gather(
            ctx,
            {
                "who": Question("Your name?", Name),
                "llm": RawRequest("sampling/createMessage", SAMPLING),
                "roots": RawRequest("roots/list"),
            },
        )
        return f"{got['who'].data.name} {got['llm']['model']} {len(got['roots']['roots'])}"

    return server


async def _unused(*_: Any) -> Any:
    raise AssertionError("answers travel in inputResponses in this test")


async def call(responses: dict[str, Any]) -> tuple[Any, MCPError | None]:
    """The retry's result, or the error it got (caught inside the client's own scope)."""
    async with Client(
        make_server(),
        mode="2026-07-28",
        elicitation_callback=_unused,
        sampling_callback=_unused,
        list_roots_callback=_unused,
    ) as c:
        first = await c.session.call_tool("mixed", {}, allow_input_required=True)
        assert isinstance(first, t.InputRequiredResult)
        assert first.input_requests is not None
        assert set(first.input_requests) == {"who", "llm", "roots"}
        try:
            done = await c.session.call_tool(
                "mixed",
                {},
                input_responses=responses,
                request_state=first.request_state,
                allow_input_required=True,
            )
        except MCPError as exc:
            return None, exc
        return done, None


async def test_results_of_the_right_types_complete_the_call() -> None:
    done, error = await call({"who": ELICIT, "llm": SAMPLED, "roots": ROOTS})
    assert error is None
    assert text_of(done) == "Ada m 1"


@pytest.mark.parametrize(
    ("responses", "key", "expected"),
    [
        ({"who": ELICIT, "llm": ELICIT, "roots": ROOTS}, "llm", "sampling/createMessage"),
        ({"who": ELICIT, "llm": SAMPLED, "roots": SAMPLED}, "roots", "roots/list"),
        ({"who": ROOTS, "llm": SAMPLED, "roots": ROOTS}, "who", "elicitation/create"),
    ],
)
async def test_a_result_of_the_wrong_type_is_refused(
    responses: dict[str, Any], key: str, expected: str
) -> None:
    done, error = await call(responses)
    assert done is None
    assert error is not None
    assert error.error.code == t.INVALID_PARAMS
    assert error.error.data == {"reason": "wrong_response_type", "key": key, "expected": expected}

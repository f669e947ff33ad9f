"""A question asked again after an invalid answer says what was wrong: which field, what it
expects, never the value that was sent (M4). Both eras, with the SDK's `Client` over streamable HTTP
and FastMCP's `Client`.
"""

from __future__ import annotations

from typing import Any

import fastmcp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.mcpserver import Context, MCPServer

from mcp_elicit import install
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.core.limits import MAX_MESSAGE_CHARS
from mcp_elicit.core.retry_hints import MAX_RETRY_HINT_CHARS, retry_hint, retry_message
from mcp_elicit.errors import AnswerError, FieldProblem
from mcp_elicit.server import ask
from tests.core.strategies import forms, json_values
from tests.e2e.servers import serving_app, serving_http
from tests.server.handoff_support import mcp_client
from tests.support import ScriptedCallback, text_of

pytestmark = pytest.mark.anyio

MESSAGE = "A few details for your order, please."
# A PIN is sensitive: the tool overrides the secret guard for it, and its value must never be
# repeated to the person (or to whoever reads the client's screen).
ORDER = Form(
    (
        Field.integer("quantity", title="How many", minimum=1, maximum=10),
        Field.string("pin", title="PIN", max_length=4),
    )
)
BAD = {"action": "accept", "content": {"quantity": 60, "pin": "987654321"}}
GOOD = {"action": "accept", "content": {"quantity": 2, "pin": "1234"}}


def make_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("hints")
    install(server)

    @server.tool()
    async def order(ctx: Context) -> str:
        answer = await ask(ctx, MESSAGE, ORDER, allow_secret_fields=True)
        return f"{answer.action} {answer.data}"

    return server


def check_hints(messages: list[str]) -> None:
    first, second = messages
    assert first == MESSAGE
    hint, _, rest = second.partition("\n\n")
    assert rest == MESSAGE
    assert hint.startswith("Your last answer was not accepted.")
    assert "How many (quantity): a whole number from 1 to 10" in hint
    assert "PIN (pin): text of at most 4 characters" in hint
    assert "987654321" not in second  # the sensitive value is never repeated
    assert "60" not in second  # nor any other


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_the_question_asked_again_says_which_field_was_wrong_and_what_it_expects(era: str) -> None:
    callback = ScriptedCallback([BAD, GOOD])
    async with serving_http(make_server()) as url, mcp_client(url, era, callback) as client:
        result = await client.call_tool("order", {})
    assert text_of(result) == "accept {'quantity': 2, 'pin': '1234'}"
    check_hints([seen["message"] for seen in callback.seen])


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_fastmcp_server_asks_again_with_the_hint_too(era: str) -> None:
    """FastMCP's own client checks an answer before sending it, so the SDK's client answers here."""
    server = fastmcp.FastMCP("hints-fastmcp")
    install(server)

    async def order(ctx: fastmcp.Context) -> str:
        answer = await ask(ctx, MESSAGE, ORDER, allow_secret_fields=True)
        return answer.action

    server.tool(order, name="order")
    callback = ScriptedCallback([BAD, GOOD])
    async with (
        serving_app(server.http_app(path="/mcp")) as origin,
        mcp_client(f"{origin}/mcp", era, callback) as client,
    ):
        result = await client.call_tool("order", {})
    assert text_of(result) == "accept"
    check_hints([seen["message"] for seen in callback.seen])


async def test_after_the_last_try_the_tool_ends_and_each_retry_carried_the_hint() -> None:
    callback = ScriptedCallback([BAD, BAD, BAD])
    async with serving_http(make_server()) as url, mcp_client(url, "2026-07-28", callback) as client:
        result = await client.call_tool("order", {})
    assert result.is_error
    first, *again = [seen["message"] for seen in callback.seen]
    assert first == MESSAGE
    assert len(again) == 2
    assert all(m.startswith("Your last answer was not accepted.") for m in again)


def problems_of(form: Form, content: Any) -> tuple[FieldProblem, ...]:
    try:
        form.validate(content)
    except AnswerError as exc:
        return tuple(exc.problems)
    return ()


@given(form=forms(), content=json_values)
def test_a_hint_is_bounded_and_never_makes_a_message_too_long(form: Form, content: Any) -> None:
    problems = problems_of(form, content)
    hint = retry_hint(form, problems)
    assert hint.startswith("Your last answer was not accepted.")
    assert len(hint) <= MAX_RETRY_HINT_CHARS
    assert len(retry_message("m" * MAX_MESSAGE_CHARS, form, problems)) <= MAX_MESSAGE_CHARS
    assert len(retry_message("m", form, problems)) <= MAX_MESSAGE_CHARS


# Each value starts with a snowman, which the hint's own words never hold: a value such as
# "numbe" is found in "a whole number" without being echoed.
@given(st.text(min_size=4, max_size=29).map(lambda text: "\u2603" + text))
def test_no_value_sent_appears_in_the_hint(value: str) -> None:
    form = Form((Field.string("code", max_length=4), Field.integer("n", maximum=3)))
    with pytest.raises(AnswerError) as caught:
        form.validate({"code": value, "n": value, value: value})
    assert value not in retry_hint(form, caught.value.problems)

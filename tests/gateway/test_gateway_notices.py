"""What the gateway says when a question is not asked: in tool results, naming the upstream server.

A streak of refused questions (rate limit, decline embargo, a policy's deny) gets one full notice,
counted only once it reached a client in a tool result; every other refused tool call of the
streak still says why in one line. A prompt's or a read's result has no place for a reason: it is
passed on as the upstream made it, and logged; when the upstream then fails the request, its
JSON-RPC error carries the reason after its own message.

Upstreams: the reference server (`notes://{topic}` and the `greeting` prompt ask who reads,
`deploy` asks where to) and the raw-SDK peer (`login` asks for a password, `lookalike` sends a
look-alike URL, the `strict` prompt fails without an answer), behind an in-process HTTP gateway.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import mcp_types as t
import pytest
from mcp.shared.exceptions import MCPError

from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.core.policy import Policy, RateLimit
from mcp_elicit.core.wire_codes import INTERNAL_ERROR
from mcp_elicit.gateway import sdk
from tests.gateway.support import Answers, http_client, http_gateway, servers

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


def config(*names: str) -> str:
    found = servers()
    return json.dumps({"mcpServers": {name: found[name] for name in names}})


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in getattr(result, "contents", None) or result.content)


def prompt_text(result: t.GetPromptResult) -> str:
    return "".join(getattr(m.content, "text", "") for m in result.messages)


@pytest.mark.parametrize("era", ERAS)
async def test_a_rate_limit_streak_begun_by_a_read_still_tells_each_tool_call_why(era: str) -> None:
    """The read's notice has nowhere to go, so the streak's first tool call gets it in full; the
    next refused tool call says why in one line, naming the server too."""
    once_an_hour = Policy(form="allow", url="allow", rate_limits=(RateLimit(1, 3600.0),))
    answers = Answers({"name": "dee"})
    async with (
        http_gateway(config("ref"), policy=once_an_hour) as (_, url),
        http_client(url, None, era, answers) as c,
    ):
        asked = await c.read_resource("notes://birds")
        limited = await c.read_resource("notes://tea")
        first = await c.call_tool("deploy", {"service": "web"})
        second = await c.call_tool("deploy", {"service": "api"})
    assert answers.messages == ["Who is the note on birds for?"]
    assert (text_of(asked), text_of(limited)) == ("A note on birds, for dee.", "A note on tea, for someone.")
    for refused in (first, second):
        assert refused.is_error is False  # the upstream's own result, the notice first
        assert "'ref'" in refused.content[0].text  # type: ignore[union-attr]
        assert refused.content[-1].text == "Nothing deployed (cancel)."  # type: ignore[union-attr]
    told_first, told_second = (r.content[0].text for r in (first, second))  # type: ignore[union-attr]
    assert told_first != told_second  # the full notice once, then a line of reason
    assert "rate limit" in told_second


async def test_a_policys_deny_on_a_prompt_leaves_the_notice_for_the_next_tool_call() -> None:
    denied = Policy(form="deny", url="deny")
    answers = Answers()
    async with (
        http_gateway(config("ref"), policy=denied) as (_, url),
        http_client(url, None, "legacy", answers) as c,
    ):
        prompt = await c.get_prompt("greeting", {})
        first = await c.call_tool("deploy", {"service": "web"})
        second = await c.call_tool("deploy", {"service": "web"})
    assert answers.messages == []
    assert "friend" in prompt_text(prompt)  # the upstream's own fallback, unchanged
    assert (first.is_error, second.is_error) == (False, False)
    assert first.content[-1].text == "Nothing deployed (decline)."  # type: ignore[union-attr]
    told_first, told_second = (r.content[0].text for r in (first, second))  # type: ignore[union-attr]
    assert "'ref'" in told_first
    assert "'ref'" in told_second
    assert told_first != told_second


async def test_a_flood_refused_within_one_tool_call_is_said_once() -> None:
    answers = Answers()
    async with (
        http_gateway(config("sdk")) as (_, url),
        http_client(url, None, "legacy", answers) as c,
    ):
        result = await c.call_tool("flood", {"times": 12})
    actions = result.content[-1].text.split(",")  # type: ignore[union-attr]
    assert "cancel" in actions  # the default burst refused some of the twelve
    assert result.is_error is False
    assert result.content[0].text.count("'sdk'") == 1  # type: ignore[union-attr]


async def test_a_secret_seeking_form_and_a_blocked_url_are_said_naming_the_upstream_server(
    tmp_path: Path,
) -> None:
    answers = Answers()
    trail = tmp_path / "trail.jsonl"
    async with (
        http_gateway(config("sdk"), audit=JsonlAuditSink(trail)) as (_, url),
        http_client(url, None, "legacy", answers) as c,
    ):
        login = await c.call_tool("login", {})
        lookalike = await c.call_tool("lookalike", {})
    assert answers.messages == []
    assert (login.is_error, lookalike.is_error) == (False, False)
    said = login.content[0].text  # type: ignore[union-attr]
    assert "The server 'sdk'" in said
    assert "Password" in said
    assert "'sdk'" in lookalike.content[0].text  # type: ignore[union-attr]
    assert lookalike.content[-1].text == "url decline"  # type: ignore[union-attr]
    recorded = [json.loads(line) for line in trail.read_text().splitlines()]
    assert [(r["decided_by"], r["reason"].split(":")[0]) for r in recorded] == [
        ("secret_guard", "secret_in_form"),
        ("gate", "url_blocked"),  # the gateway refused to show it; nobody was asked
    ]


@pytest.mark.parametrize("era", ERAS)
async def test_without_elicitation_a_read_and_a_prompt_pass_on_the_fallback_and_a_failure_says_why(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="mcp_elicit.gateway"):
        async with (
            http_gateway(config("ref", "sdk")) as (_, url),
            http_client(url, None, era) as c,  # no elicitation capability
        ):
            note = await c.read_resource("notes://birds")
            prompt = await c.get_prompt("greeting", {})
            with pytest.raises(MCPError) as failed:
                await c.get_prompt("strict", {})
    assert text_of(note) == "A note on birds, for someone."  # as the upstream made it
    assert "friend" in prompt_text(prompt)
    message = failed.value.error.message
    assert message.startswith("Error rendering prompt strict")  # the upstream's own error first
    assert "'sdk'" in message  # then what the gateway could not ask, naming the server
    passed = [r.getMessage() for r in caplog.records if "passed on as is" in r.getMessage()]
    assert [line.split()[0] for line in passed] == ["resources/read", "prompts/get"]


def test_a_reason_added_to_an_upstream_error_keeps_its_code_and_data_and_other_errors_stay_as_is() -> None:
    upstream = MCPError(INTERNAL_ERROR, "no reader", {"hint": 1})
    said = sdk.with_reason(upstream, "why")
    assert isinstance(said, MCPError)
    assert (said.error.code, said.error.data) == (INTERNAL_ERROR, {"hint": 1})
    assert said.error.message.startswith("no reader")
    other = OSError("gone")
    assert sdk.with_reason(other, "why") is other

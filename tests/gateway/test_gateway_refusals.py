"""A question the downstream client cannot be asked: the upstream's result relayed as it came.

The FastMCP peer's `book_table` asks "Booking at Luigi: who and how many?" with a dataclass form
and returns "No booking (decline)." when declined (FastMCP wraps it: `structuredContent`
`{"result": ...}`, `isError: false`, `_meta` of its own). A client that declared no elicitation
calls it through an in-process HTTP gateway; the gateway answers decline upstream and puts its
notice first in the result's content, leaving the rest of the upstream's result alone. The
consent record says nobody could be asked (`no_terminal`) and why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fastmcp
import mcp_types as t
import pytest
from mcp.client import Client

from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.gateway.relay import NO_FORM_MODE
from tests.gateway.support import http_client, http_gateway, servers, stdio_gateway

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
DECLINED = "No booking (decline)."


def fm_only() -> str:
    return json.dumps({"mcpServers": {"fm": servers()["fm"]}})


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("era", ERAS)
async def test_a_refused_question_keeps_the_upstreams_result_and_puts_the_notice_first(
    tmp_path: Path, era: str
) -> None:
    trail = tmp_path / "trail.jsonl"
    async with (
        http_gateway(fm_only(), audit=JsonlAuditSink(trail)) as (_, url),
        http_client(url, None, era) as c,  # no elicitation callback: no elicitation capability
    ):
        result = await c.call_tool("book_table", {})
    assert result.is_error is False  # the upstream's flag, not the gateway's
    assert result.structured_content == {"result": DECLINED}
    assert result.meta is not None
    assert result.meta.get("fastmcp") == {"wrap_result": True}
    assert [c.type for c in result.content] == ["text", "text"]
    notice = result.content[0].text  # type: ignore[union-attr]
    assert notice.startswith("The gateway could not relay a question: the server 'fm' asked a question")
    assert "'Booking at Luigi: who and how many?'" in notice
    assert "could not be shown here" in notice
    assert result.content[1].text == DECLINED  # type: ignore[union-attr]
    [record] = records(trail)
    assert (record["action"], record["decided_by"]) == ("decline", "no_terminal")
    assert record["reason"] == NO_FORM_MODE
    assert record["call"] == {"method": "tools/call", "name": "book_table", "request_id": None}
    assert record["person"] == "local"


async def test_fastmcps_client_without_a_handler_gets_the_upstreams_data_and_the_notice() -> None:
    async with http_gateway(fm_only()) as (_, url), fastmcp.Client(url) as c:
        result = await c.call_tool("book_table", {})  # raise_on_error: nothing is raised
    assert result.is_error is False
    assert result.data == DECLINED
    assert result.structured_content == {"result": DECLINED}
    texts = [block.text for block in result.content if isinstance(block, t.TextContent)]
    assert len(texts) == 2
    assert "asked a question ('Booking at Luigi: who and how many?') that could not be shown" in texts[0]
    assert texts[1] == DECLINED


async def test_a_client_that_can_answer_gets_the_upstreams_result_unchanged() -> None:
    async def answer(ctx: Any, params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content={"name": "Ann", "seats": 3})

    async with http_gateway(fm_only()) as (_, url), http_client(url, None, "legacy", answer) as c:
        result = await c.call_tool("book_table", {})
    assert result.is_error is False
    assert result.structured_content == {"result": "Booked Ann x3."}
    assert [block.text for block in result.content] == ["Booked Ann x3."]  # type: ignore[union-attr]


async def test_a_question_the_gateway_could_not_relay_is_recorded_as_shown_to_nobody_keeping_the_mode_asked(
    tmp_path: Path,
) -> None:
    trail = tmp_path / "trail.jsonl"
    async with (
        http_gateway(fm_only(), audit=JsonlAuditSink(trail)) as (_, url),
        http_client(url, None, "legacy") as c,  # no elicitation capability: nobody can be asked
    ):
        await c.call_tool("book_table", {})
    [record] = records(trail)
    assert (record["decided_by"], record["mode"]) == ("no_terminal", "none")
    assert record["details"] == {"requested_mode": "form", "upstream": "fm"}
    assert record["fields"]  # the form it asked for is still named


@pytest.mark.parametrize("era", ERAS)
async def test_a_32042_page_the_gateway_could_not_relay_says_why_in_the_tool_error(
    tmp_path: Path, era: str
) -> None:
    """Found by a new user: the page step's tool error said only "(declined)" (or "(cancelled)"
    after a rate limit), as if the person had turned the page down; the guardrail's reason was lost."""
    config = tmp_path / "f.json"
    config.write_text(json.dumps({"mcpServers": {"sdk": servers()["sdk"]}}))
    async with Client(stdio_gateway(config), mode=era) as c:  # no elicitation: no page can be shown
        result = await c.call_tool("need_page", {})
    assert result.is_error is True
    texts = [block.text for block in result.content]  # type: ignore[union-attr]
    assert len(texts) == 2
    assert texts[0].startswith("The gateway could not relay a question: the server 'sdk' asked")
    assert "could not be shown here" in texts[0]
    assert texts[1].startswith("The upstream server 'sdk' needs a web page step first")

"""Server side of the consent trail: one record per question, chained, failing closed (issue: guardrails)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import fastmcp
import pytest
from mcp.client import Client
from mcp.server.mcpserver import Context, MCPServer

from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.errors import SecretInForm
from mcp_elicit.server import ElicitSettings, ask, confirm, install
from mcp_elicit.testing import MemoryAuditSink
from tests.e2e.servers import serving_app
from tests.server.handoff_support import mcp_client
from tests.support import ScriptedCallback, text_of

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "2026-07-28"]


@dataclasses.dataclass
class Name:
    name: str


@dataclasses.dataclass
class Login:
    password: str


def make_server(sink: Any, fail_closed: bool = True) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("audited", version="1.2.3")
    install(server, ElicitSettings(audit=sink, audit_fail_closed=fail_closed))

    @server.tool()
    async def two(ctx: Context) -> str:
        first = await ask(ctx, "First name?", Name, key="first")
        second = await ask(ctx, "Second name?", Name, key="second")
        return f"{first.action} {second.action}"

    @server.tool()
    async def login(ctx: Context) -> str:
        try:
            await ask(ctx, "Password?", Login)
        except SecretInForm:
            return "refused"
        return "asked"

    return server


@pytest.mark.parametrize("level", ["metadata", "request", "request_response"])
async def test_answer_values_are_recorded_at_request_response_only(level: str) -> None:
    sink = MemoryAuditSink(level=level)  # type: ignore[arg-type]
    cb = ScriptedCallback([{"action": "accept", "content": {"name": "Ada"}}, {"action": "decline"}])
    async with Client(make_server(sink), mode="legacy", elicitation_callback=cb) as c:
        await c.call_tool("two", {})
    first = sink.records[0]
    if level == "request_response":
        assert first["content"] == {"name": "Ada"}
    else:
        assert "content" not in first


@pytest.mark.parametrize("era", ERAS)
async def test_every_question_leaves_exactly_one_record_and_the_chain_verifies(era: str) -> None:
    sink = MemoryAuditSink()
    cb = ScriptedCallback([{"action": "accept", "content": {"name": "Ada"}}, {"action": "decline"}])
    async with Client(make_server(sink), mode=era, elicitation_callback=cb) as c:
        result = await c.call_tool("two", {})
    assert text_of(result) == "accept decline"
    assert [(r["side"], r["action"], r["decided_by"]) for r in sink.records] == [
        ("server", "accept", "person"),
        ("server", "decline", "person"),
    ]
    assert sink.verify().ok
    first = sink.records[0]
    assert first["server"]["name"] == "audited"
    assert first["server"]["version"] == "1.2.3"
    assert first["protocol"]  # the revision the session negotiated
    assert first["client"]["name"]
    assert first["call"]["name"] == "two"
    assert "content" not in first  # metadata level: no answer values


@pytest.mark.parametrize("era", ERAS)
async def test_a_form_stopped_by_the_secret_guard_is_recorded_as_such(era: str) -> None:
    sink = MemoryAuditSink()
    async with Client(make_server(sink), mode=era, elicitation_callback=ScriptedCallback([])) as c:
        result = await c.call_tool("login", {})
    assert text_of(result) == "refused"
    assert [(r["action"], r["decided_by"], r["reason"]) for r in sink.records] == [
        ("cancel", "secret_guard", "secret_in_form")
    ]
    assert sink.records[0]["mode"] == "none"  # never sent: nobody saw a form
    assert [f["name"] for f in sink.records[0]["fields"]] == ["password"]
    assert sink.verify().ok


@pytest.mark.parametrize("era", ERAS)
async def test_a_sink_that_cannot_write_stops_the_tool_instead_of_handing_it_the_answer(era: str) -> None:
    sink = MemoryAuditSink()
    sink.fail_writes = True
    cb = ScriptedCallback([{"action": "accept", "content": {"name": "Ada"}}])
    async with Client(make_server(sink), mode=era, elicitation_callback=cb) as c:
        result = await c.call_tool("two", {})
    assert result.is_error
    assert sink.records == []


async def test_with_fail_closed_off_the_call_goes_on_without_a_record() -> None:
    sink = MemoryAuditSink()
    sink.fail_writes = True
    cb = ScriptedCallback(
        [{"action": "accept", "content": {"name": "Ada"}}, {"action": "accept", "content": {"name": "B"}}]
    )
    async with Client(make_server(sink, fail_closed=False), mode="legacy", elicitation_callback=cb) as c:
        result = await c.call_tool("two", {})
    assert text_of(result) == "accept accept"


async def test_the_sqlite_trail_of_a_session_verifies_and_a_tampered_row_is_found(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "audit.sqlite3"
    sink = SqliteAuditSink(path)
    cb = ScriptedCallback([{"action": "accept", "content": {"name": "Ada"}}, {"action": "cancel"}] * 2)
    async with Client(make_server(sink), mode="2026-07-28", elicitation_callback=cb) as c:
        await c.call_tool("two", {})
        await c.call_tool("two", {})
    assert sink.verify().ok
    assert len(list(sink.iter_records())) == 4
    sink.close()
    with sqlite3.connect(path) as db:
        edit = "UPDATE consent_records SET body = replace(body, '\"accept\"', '\"decline\"') WHERE seq = 1"
        db.execute(edit)
    reopened = SqliteAuditSink(path)
    report = reopened.verify()
    assert not report.ok
    assert report.first_break is not None
    assert report.first_break.index == 0
    reopened.close()


@pytest.mark.parametrize("era", ERAS)
async def test_a_choice_that_means_no_is_recorded_as_a_decline_and_the_tool_still_gets_the_answer(
    era: str,
) -> None:
    sink = MemoryAuditSink()
    server: MCPServer[Any] = MCPServer("audited", version="1.2.3")
    install(server, ElicitSettings(audit=sink))

    @server.tool()
    async def pick(ctx: Context) -> str:
        named = await ask(ctx, "Name?", Name, key="name", declines={"name": "nobody"})
        sure = await confirm(ctx, "Go ahead?", key="sure")
        return f"{named.action} {named.data.name if named.data else ''} {sure}"

    answers = [
        {"action": "accept", "content": {"name": "nobody"}},
        {"action": "accept", "content": {"confirm": False}},
        {"action": "accept", "content": {"name": "Ada"}},
        {"action": "accept", "content": {"confirm": True}},
    ]
    async with Client(server, mode=era, elicitation_callback=ScriptedCallback(answers)) as c:
        assert text_of(await c.call_tool("pick", {})) == "accept nobody False"
        assert text_of(await c.call_tool("pick", {})) == "accept Ada True"
    assert [(r["action"], r["decided_by"], r["reason"]) for r in sink.records] == [
        ("decline", "person", "declined_in_form"),
        ("decline", "person", "declined_in_form"),
        ("accept", "person", ""),
        ("accept", "person", ""),
    ]


def two_questions_on_fastmcp(sink: Any) -> Any:
    server = fastmcp.FastMCP("audited-fastmcp")
    install(server, ElicitSettings(audit=sink))

    async def two(ctx: fastmcp.Context) -> str:
        await ask(ctx, "First name?", Name, key="first")
        await ask(ctx, "Second name?", Name, key="second")
        return "ok"

    server.tool(two, name="two")
    return server


@pytest.mark.parametrize("framework", ["MCPServer", "FastMCP"])
@pytest.mark.parametrize("era", ERAS)
async def test_each_record_names_the_request_that_asked_it_across_calls(framework: str, era: str) -> None:
    """The questions of one call share its request; the next call's records name the next one
    (the identities are worked out once per request, never carried over to another)."""
    sink = MemoryAuditSink()
    server = make_server(sink) if framework == "MCPServer" else two_questions_on_fastmcp(sink)
    cb = ScriptedCallback([{"action": "accept", "content": {"name": "Ada"}}] * 4)
    async with (
        serving_app(
            server.http_app(path="/mcp") if framework == "FastMCP" else server.streamable_http_app()
        ) as origin,
        mcp_client(f"{origin}/mcp", era, cb) as client,
    ):
        await client.call_tool("two", {})
        await client.call_tool("two", {})
    calls = [r["call"]["request_id"] for r in sink.records]
    if era == "legacy":  # the questions are pushed within the call's one request
        assert calls[0] == calls[1] != calls[2] == calls[3]
    else:  # each answer comes back in the call's retry: a request of its own
        assert len(set(calls)) == 4
    assert all(r["call"]["name"] == "two" for r in sink.records)

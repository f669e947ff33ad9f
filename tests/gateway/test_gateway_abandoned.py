"""A held call the downstream client abandons: later records still name their tool call.

A 2026-07-28 client whose elicitation handler returns an invalid answer raises locally and never
retries, so the gateway keeps the upstream call (the reference server's `deploy`, over stdio)
held with its question open. The upstream's next push then arrives while two calls are in flight
on that connection, and the client kit (which never guesses among several) cannot tie it to
either: the gateway ties it to the call it relays the question for, so the record names `deploy`.
An abandoned hold ends once `HOLD_WAIT_SECONDS` pass without a retry (shortened here): its
question is cancelled (recorded as a timeout), the upstream call is cancelled and leaves the
gateway's book, and the next identical call is asked and recorded under `deploy`.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.client.stdio import stdio_client

from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.client.ui_protocol import Purpose
from mcp_elicit.core.consent import ConsentEvent
from mcp_elicit.gateway import holds
from mcp_elicit.gateway.holds import ABANDONED
from mcp_elicit.gateway.relay import CallBook, DownstreamCall
from tests.gateway.support import http_client, http_gateway, servers, stdio_gateway

pytestmark = pytest.mark.anyio

WHERE = "Where should api be deployed?"
STAGING = {"environment": "staging", "region": "eu-west", "replicas": 2}


def ref_only() -> str:
    return json.dumps({"mcpServers": {"ref": servers()["ref"]}})


class Signalling(JsonlAuditSink):
    """The JSONL sink, saying when a record is written (the writer runs in a thread of its own)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.written = threading.Event()

    def append_many(self, events: Iterable[ConsentEvent]) -> list[dict[str, Any]]:
        done = super().append_many(events)
        self.written.set()
        return done


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def invalid(ctx: Any, params: Any) -> t.ElicitResult:
    """An answer the SDK's own client cannot send: it raises before any retry."""
    return t.ElicitResult.model_construct(action="accept", content={"environment": {"nested": object()}})


async def staging(ctx: Any, params: Any) -> t.ElicitResult:
    return t.ElicitResult(action="accept", content=STAGING)


async def abandon_a_deploy(url: str) -> None:
    with pytest.raises(Exception):  # noqa: B017,PT011  (the SDK raises whatever its validation raises)
        async with http_client(url, None, "auto", invalid) as c:
            await c.call_tool("deploy", {"service": "api"})


async def test_a_question_after_an_abandoned_held_call_is_recorded_under_its_tool(tmp_path: Path) -> None:
    trail = tmp_path / "trail.jsonl"
    async with http_gateway(ref_only(), audit=JsonlAuditSink(trail)) as (gw, url):
        await abandon_a_deploy(url)
        book = gw.pools["local"].books["ref"]
        assert [(c.tool, c.asking) for c in book.calls] == [("deploy", 1)]  # held, its question open
        async with http_client(url, None, "auto", staging) as c:
            result = await c.call_tool("deploy", {"service": "api"})
        assert result.is_error is False
        assert result.content[0].text == "Deployed api to staging in eu-west with 2 replicas."  # type: ignore[union-attr]
        assert len(book.calls) == 1  # the abandoned one, still waiting for its retry
        [record] = records(trail)
    assert (record["action"], record["decided_by"], record["reason"]) == ("accept", "person", "")
    assert record["call"] == {"method": "tools/call", "name": "deploy", "request_id": None}


async def test_an_abandoned_held_call_ends_after_the_hold_wait_and_captures_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "mcp_elicit.gateway")
    monkeypatch.setattr(holds, "HOLD_WAIT_SECONDS", 1.0)
    trail = tmp_path / "trail.jsonl"
    sink = Signalling(trail)
    async with http_gateway(ref_only(), audit=sink) as (gw, url):
        await abandon_a_deploy(url)
        book = gw.pools["local"].books["ref"]
        with anyio.fail_after(30):
            await book.idle.wait()  # the abandoned upstream call was cancelled and left the book
            await anyio.to_thread.run_sync(sink.written.wait)  # its question's record
        [abandoned] = records(trail)
        assert "call deploy on ref for local cancelled" in caplog.text  # cancelled, not left to run
        async with http_client(url, None, "auto", staging) as c:
            result = await c.call_tool("deploy", {"service": "api"})
        assert result.content[0].text == "Deployed api to staging in eu-west with 2 replicas."  # type: ignore[union-attr]
        assert gw.holds.held("local") == 0  # its state was dropped: a late retry finds nothing
        _, deployed = records(trail)
    assert (abandoned["action"], abandoned["decided_by"]) == ("cancel", "timeout")
    assert abandoned["reason"] == ABANDONED
    assert abandoned["call"] == {"method": "tools/call", "name": "deploy", "request_id": None}
    assert (deployed["action"], deployed["decided_by"]) == ("accept", "person")
    assert deployed["call"] == {"method": "tools/call", "name": "deploy", "request_id": None}


async def test_an_abandoned_holds_state_answers_no_late_retry_and_its_call_matches_no_question() -> None:
    table = holds.Holds()
    hold = table.new("local")
    assert hold is not None
    state = table.park(hold)
    book = CallBook()
    abandoned = DownstreamCall(None, "local", "ref", "deploy", arguments={"service": "api"}, hold=hold)
    fresh = DownstreamCall(None, "local", "ref", "deploy", arguments={"service": "api"})
    with book.track(abandoned), book.track(fresh):
        assert book.find(Purpose("tools/call", "deploy", {"service": "api"})) is abandoned
        hold.abandoned = True
        assert book.find(Purpose("tools/call", "deploy", {"service": "api"})) is fresh
        assert book.find(Purpose()) is fresh  # a question nobody could tie goes to the live call too
    assert table.take(state, "local") is None
    assert table.held("local") == 0


async def refuse(ctx: Any, params: Any) -> t.ErrorData:
    return t.ErrorData(code=-32602, message="this client does not show such forms")


async def test_a_question_the_client_answers_with_an_error_is_a_cancel_upstream_recorded_as_nobodys_decision(
    tmp_path: Path,
) -> None:
    trail = tmp_path / "trail.jsonl"
    async with http_gateway(ref_only(), audit=Signalling(trail)) as (_, url):
        async with http_client(url, None, "legacy", refuse) as c:
            with anyio.fail_after(30):
                result = await c.call_tool("deploy", {"service": "api"})
        assert result.is_error is not None
        [record] = records(trail)
    assert (record["action"], record["decided_by"], record["reason"]) == ("cancel", "error", "client_refused")
    assert record["call"]["name"] == "deploy"


async def test_a_held_call_open_when_the_client_leaves_is_cancelled_upstream_not_reported_lost(
    tmp_path: Path,
) -> None:
    """Found by a new user: a 2026-07-28 client that gave up on a question and then quit left the
    call held; the gateway then stopped the upstream under it and logged "upstream sdk was lost
    during tools/call greet: its process exited with status 0", as if the server had died."""
    asked = anyio.Event()

    async def never(ctx: Any, params: Any) -> t.ElicitResult:
        asked.set()  # the person walks away: this question is never answered
        await anyio.sleep_forever()
        raise AssertionError  # pragma: no cover

    config = tmp_path / "f.json"
    config.write_text(json.dumps({"mcpServers": {"sdk": servers()["sdk"]}}))
    log = tmp_path / "gateway.log"
    with log.open("w") as errlog:
        transport = stdio_client(stdio_gateway(config), errlog=errlog)
        client = Client(transport, mode="2026-07-28", elicitation_callback=never)
        async with client as c, anyio.create_task_group() as tg:
            tg.start_soon(c.call_tool, "greet", {})
            with anyio.fail_after(30):  # the question reached the client: the call is held
                await asked.wait()
            tg.cancel_scope.cancel()  # the client gives up, then quits (closes the gateway's stdin)
    logged = log.read_text()
    assert "was lost during" not in logged
    assert "call greet on sdk for local cancelled" in logged

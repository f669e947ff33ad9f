"""What the audit page counts of the data server's trail: one answer per question put to the person,
none for a query that ran or was refused without asking anyone. The trail is the real one: the
data server on the sample DuckDB file, in-process, the SDK's client answering from a script."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client

from mcp_elicit.apps.data import build_data_server, open_engine
from mcp_elicit.apps.data.catalog import DataConfig
from mcp_elicit.apps.data.guard import FailClosed
from mcp_elicit.server import ElicitSettings
from mcp_elicit.testing import MemoryAuditSink
from mcp_elicit.ui.browser.audit_view import audit_app, chart_of, counted_answer
from tests.apps.data.stories import CHEAP, EXPENSIVE, PII, WRITES, WalkedAway, query_records
from tests.support import ScriptedCallback

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]

# The person's four answers, in the order `data_server_trail` asks.
ANSWERS = [
    {"action": "accept", "content": {"decision": "run"}},
    {"action": "accept", "content": {"decision": "dont_run"}},  # submitted, choosing not to run it
    {"action": "decline"},
    {"action": "cancel"},
]
# What each query of the trail leaves as the data server's own record (reason, action, decided_by).
DECISIONS = [
    ("user_accepted", "accept", "person"),
    ("user_declined", "decline", "person"),
    ("user_declined", "decline", "person"),
    ("user_cancelled", "cancel", "person"),
    ("ran_unasked", "accept", "policy"),
    ("not_read_only", "decline", "policy"),
    ("cannot_ask", "decline", "policy"),
    ("ran_unguarded", "accept", "policy"),
]


async def data_server_trail(sample_db: Path, sink: Any, era: str = "legacy") -> None:
    """Four questions put to the person (run, don't run, decline, cancel), then four queries decided
    without asking anyone: cheap, a write, and a personal-data query from a client without form
    elicitation, refused (fail closed) and run unguarded (fail open)."""
    settings = ElicitSettings(audit=sink)
    asking = build_data_server(open_engine("duckdb", str(sample_db)), settings=settings)
    cb = ScriptedCallback(list(ANSWERS))
    async with Client(asking, mode=era, elicitation_callback=cb) as c:
        for sql in (EXPENSIVE, PII, PII, PII, CHEAP, WRITES[0]):
            await c.call_tool("query", {"sql": sql})
    assert len(cb.seen) == len(ANSWERS)
    for config in (DataConfig(), DataConfig(fail_closed=FailClosed(elicitation=False))):
        mute = build_data_server(open_engine("duckdb", str(sample_db)), config, settings)
        async with Client(mute, mode=era) as c:
            await c.call_tool("query", {"sql": PII})


@pytest.mark.parametrize("era", ERAS)
async def test_each_question_put_to_the_person_is_one_record_with_the_data_servers_facts(
    sample_db: Path, era: str
) -> None:
    sink = MemoryAuditSink()
    await data_server_trail(sample_db, sink, era)
    decisions = query_records(sink.records)
    assert decisions == sink.records  # no second record of any question
    assert [(r["reason"], r["action"], r["decided_by"]) for r in decisions] == DECISIONS
    asked = decisions[: len(ANSWERS)]
    assert [r["mode"] for r in asked] == ["form"] * len(ANSWERS)
    assert all(r["fields"] and r["details"]["category"] == r["reason"] for r in asked)
    assert asked[0]["details"]["estimate"]["total"] > asked[0]["details"]["threshold"]

    chart = chart_of(sink.records)
    assert chart is not None
    (server,) = chart.servers
    assert server.server == "mcp-elicit-data"
    assert dict(server.totals) == {"accept": 1, "decline": 2, "cancel": 1}
    assert sum(b.count for b in server.bars) == len(ANSWERS)
    counted = ["accept", "decline", "decline", "cancel"]
    assert [counted_answer(r) for r in decisions] == counted + [None] * (len(DECISIONS) - len(counted))


def test_a_trail_with_an_applications_second_record_of_a_question_counts_it_once() -> None:
    # trails written before `ask(record_as=...)`: the kit's record, then the data server's own
    kit = {"action": "decline", "decided_by": "person", "fields": [{"name": "decision"}]}
    second = {"action": "decline", "decided_by": "person", "fields": [], "details": {"category": "x"}}
    assert [counted_answer(kit), counted_answer(second)] == ["decline", None]


async def test_queries_decided_without_asking_are_not_counted_as_answers(sample_db: Path) -> None:
    sink = MemoryAuditSink()
    await data_server_trail(sample_db, sink)
    unasked = [r for r in sink.records if r["decided_by"] == "policy"]
    assert [r["reason"] for r in unasked] == ["ran_unasked", "not_read_only", "cannot_ask", "ran_unguarded"]
    assert chart_of(unasked) is None  # an accept the guard decided is not a person's accept


async def test_a_question_nobody_answers_is_counted_once_as_cancelled(sample_db: Path) -> None:
    away = WalkedAway()
    sink = MemoryAuditSink()
    settings = ElicitSettings(audit=sink, ask_timeout=0.05)
    server = build_data_server(open_engine("duckdb", str(sample_db)), settings=settings)
    async with Client(server, mode="legacy", elicitation_callback=away) as c:
        await c.call_tool("query", {"sql": PII})
        away.release()
    assert [(r["action"], r["decided_by"], r["reason"]) for r in sink.records] == [
        ("cancel", "timeout", "not_answered"),  # one record: the question's, with the query's facts
    ]
    assert sink.records[0]["details"]["failure"] == "timeout"
    chart = chart_of(sink.records)
    assert chart is not None
    assert dict(chart.servers[0].totals) == {"accept": 0, "decline": 0, "cancel": 1}


async def test_the_page_counts_answers_and_still_lists_every_record(sample_db: Path) -> None:
    sink = MemoryAuditSink()
    await data_server_trail(sample_db, sink)
    app = audit_app(lambda: sink, "memory")
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test") as client:
        html = (await client.get("/")).text
    assert len(re.findall(r'<tr id="rec-', html)) == len(sink.records) == len(DECISIONS)
    assert "mcp-elicit-data</strong>: 1 accepted, 2 declined, 1 cancelled" in html
    assert 'id="chart-counts"' in html  # the line saying what the chart counts

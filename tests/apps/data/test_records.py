"""What the consent trail keeps of a query: its digest always, its text only at the request levels."""

from __future__ import annotations

import hashlib

import pytest
from mcp.client import Client

from mcp_elicit.apps.data import build_data_server, open_engine
from mcp_elicit.server import ElicitSettings
from mcp_elicit.testing import MemoryAuditSink
from tests.apps.data.stories import CHEAP, PII, WRITES, query_records
from tests.support import ScriptedCallback

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("level", "keeps_text"), [("metadata", False), ("request", True)])
async def test_the_query_text_is_kept_only_where_the_level_allows(
    sample_db: object, level: str, keeps_text: bool
) -> None:
    sink = MemoryAuditSink(level=level)  # type: ignore[arg-type]
    server = build_data_server(open_engine("duckdb", str(sample_db)), settings=ElicitSettings(audit=sink))
    cb = ScriptedCallback([{"action": "decline"}])
    async with Client(server, mode="2026-07-28", elicitation_callback=cb) as c:
        await c.call_tool("query", {"sql": PII})
    (record,) = query_records(sink.records)
    assert record["message_sha256"] == hashlib.sha256(PII.encode()).hexdigest()
    assert ("message" in record) is keeps_text
    assert PII not in str(record["details"])
    assert record["details"]["estimate"]["largest_table"] == "main.customers"
    assert sink.verify().ok


def test_records_of_other_kinds_keep_their_exact_shape() -> None:
    from mcp_elicit.core.consent import ConsentEvent, make_record

    event = ConsentEvent(time=0.0, side="server", mode="form", action="accept", decided_by="person")
    assert "details" not in (make_record(event, "metadata", "0" * 64, record_id="x") or {})


async def test_a_decision_made_without_asking_is_recorded_as_showing_no_form(sample_db: object) -> None:
    sink = MemoryAuditSink()
    server = build_data_server(open_engine("duckdb", str(sample_db)), settings=ElicitSettings(audit=sink))
    cb = ScriptedCallback([{"action": "accept", "content": {"decision": "run"}}])
    async with Client(server, mode="legacy", elicitation_callback=cb) as c:
        for sql in (CHEAP, WRITES[0], PII):
            await c.call_tool("query", {"sql": sql})
    async with Client(server, mode="legacy") as c:  # no form elicitation: refused without asking
        await c.call_tool("query", {"sql": PII})
    decided = [(r["reason"], r["mode"]) for r in query_records(sink.records)]
    assert decided == [
        ("ran_unasked", "none"),
        ("not_read_only", "none"),
        ("user_accepted", "form"),
        ("cannot_ask", "none"),
    ]
    assert query_records(sink.records) == sink.records  # the question's record is the query's
    assert sink.verify().ok

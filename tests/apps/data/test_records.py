"""What the consent trail keeps of a query: its digest always, its text only at the request levels."""

from __future__ import annotations

import hashlib
import json
import logging

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


async def test_a_refusal_record_keeps_its_detail_cleaned_and_bounded(sample_db: object) -> None:
    from mcp_elicit.apps.data.wording import MAX_RECORDED_DETAIL_CHARS

    sink = MemoryAuditSink(level="request")
    server = build_data_server(open_engine("duckdb", str(sample_db)), settings=ElicitSettings(audit=sink))
    long_name = 'SELECT "a\x1b[2Jb' + "x" * 2 * MAX_RECORDED_DETAIL_CHARS + '" FROM customers'
    told = []
    async with Client(server, mode="legacy") as c:
        for sql in ("SELEC 1", "DELETE FROM customers", long_name):
            result = await c.call_tool("query", {"sql": sql})
            told.append(json.loads(result.content[0].text))  # type: ignore[union-attr]
    records = query_records(sink.records)
    assert [r["reason"] for r in records] == [t["reason"] for t in told]
    assert [r["reason"] for r in records] == ["not_parsed", "not_read_only", "unknown_column"]
    for record, result in zip(records[:2], told[:2], strict=True):
        assert record["details"]["detail"] == result["detail"]  # which statement, why it was not read
    detail = records[2]["details"]["detail"]
    assert "\x1b" not in detail  # the query's own text, cleaned
    assert 0 < len(detail) <= MAX_RECORDED_DETAIL_CHARS
    assert sink.verify().ok


async def test_a_refusal_record_at_the_metadata_level_keeps_no_detail_that_could_quote_the_query(
    sample_db: object,
) -> None:
    sink = MemoryAuditSink(level="metadata")
    server = build_data_server(open_engine("duckdb", str(sample_db)), settings=ElicitSettings(audit=sink))
    async with Client(server, mode="legacy") as c:
        await c.call_tool("query", {"sql": 'SELECT "bob@example.org" FROM customers'})
    (record,) = query_records(sink.records)
    assert record["reason"] == "unknown_column"
    assert "detail" not in record["details"]
    assert "bob@example.org" not in json.dumps(record)


async def test_a_refused_query_is_logged_as_one_inert_line_even_when_it_quotes_escapes(
    sample_db: object, caplog: pytest.LogCaptureFixture
) -> None:
    server = build_data_server(open_engine("duckdb", str(sample_db)), settings=ElicitSettings())
    caplog.set_level(logging.INFO, logger="mcp_elicit")
    async with Client(server, mode="legacy") as c:
        await c.call_tool("query", {"sql": 'SELECT "a\x1b[2J\nb" FROM customers'})
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("mcp_elicit")]
    assert any("unknown_column" in line for line in lines)
    assert not any("\x1b" in line or "\n" in line for line in lines)

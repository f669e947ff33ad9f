"""The guarded data server end to end: the SDK's client in both eras over memory, a stdio subprocess
(`mcp-elicit serve-data`) and streamable HTTP, on DuckDB and the real PostgreSQL."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_elicit.apps.data import build_data_server, open_engine
from mcp_elicit.apps.data.catalog import DataConfig, config_from_mapping
from mcp_elicit.apps.data.guard import CATEGORIES, FailClosed
from mcp_elicit.apps.data.server import MAX_CELL_CHARS, MAX_RESULT_CHARS
from mcp_elicit.audit import SqliteAuditSink
from mcp_elicit.errors import DataEngineError
from mcp_elicit.server import ElicitSettings
from mcp_elicit.testing import MemoryAuditSink
from tests.apps.data import stories
from tests.apps.data.conftest import CATALOG, Target
from tests.apps.data.stories import PII, CountingEngine, Session, payload, query_records
from tests.e2e.servers import serving_http
from tests.support import ScriptedCallback

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


def _shown(cb: ScriptedCallback) -> Any:
    return lambda: [(s["message"], s["requestedSchema"]) for s in cb.seen]


@asynccontextmanager
async def memory_session(
    target: Target, era: str, *, engine: Any = None, config: DataConfig | None = None, elicit: bool = True
) -> AsyncIterator[Session]:
    sink = MemoryAuditSink()
    engine = engine or open_engine(target.engine, target.dsn)
    server = build_data_server(engine, config or target.config, ElicitSettings(audit=sink))
    cb = ScriptedCallback([])
    async with Client(server, mode=era, elicitation_callback=cb if elicit else None) as c:
        yield Session(
            target,
            lambda sql: c.call_tool("query", {"sql": sql}),
            cb.script.append,
            _shown(cb),
            lambda: sink.records,
        )


@asynccontextmanager
async def transport_session(
    target: Target, era: str, transport: str, tmp_path: Path
) -> AsyncIterator[Session]:
    cb = ScriptedCallback([])
    if transport == "stdio":
        audit = tmp_path / "audit.sqlite3"
        args = ["-m", "mcp_elicit", "serve-data", "--engine", target.engine, "--dsn", target.dsn]
        args += ["--catalog", target.catalog_toml, "--audit-db", str(audit)]
        params = StdioServerParameters(command=sys.executable, args=args)

        def records() -> list[dict[str, Any]]:
            sink = SqliteAuditSink(audit, readonly=True)
            try:
                return list(sink.iter_records())
            finally:
                sink.close()

        async with Client(params, mode=era, elicitation_callback=cb) as c:
            yield Session(
                target, lambda sql: c.call_tool("query", {"sql": sql}), cb.script.append, _shown(cb), records
            )
        return
    sink = MemoryAuditSink()
    server = build_data_server(
        open_engine(target.engine, target.dsn), target.config, ElicitSettings(audit=sink)
    )
    async with serving_http(server) as url, Client(url, mode=era, elicitation_callback=cb) as c:
        yield Session(
            target,
            lambda sql: c.call_tool("query", {"sql": sql}),
            cb.script.append,
            _shown(cb),
            lambda: sink.records,
        )


@pytest.mark.parametrize("era", ERAS)
async def test_a_cheap_query_runs_without_asking(target: Target, era: str) -> None:
    async with memory_session(target, era) as s:
        await stories.cheap_runs_unasked(s)


NESTED = {  # per engine: a float that is not a number, an array, a JSON or struct value, bytes
    "postgres": "SELECT 'NaN'::float8 AS f, ARRAY[1, 2] AS a, '{\"k\": [1, 2]}'::jsonb AS j, "
    "'\\xdeadbeef'::bytea AS b",
    "duckdb": "SELECT 'NaN'::DOUBLE AS f, [1, 2] AS a, {'k': [1, 2]} AS j, '\\xDE\\xAD\\xBE\\xEF'::BLOB AS b",
}


async def test_arrays_json_bytes_and_nan_come_back_as_json_values(target: Target) -> None:
    async with memory_session(target, "legacy") as s:
        result = await s.call(NESTED[target.engine])

    def strict(word: str) -> Any:
        raise AssertionError(f"not JSON: {word}")

    text = json.loads("".join(getattr(c, "text", "") for c in result.content), parse_constant=strict)
    assert text["rows"] == [["NaN", [1, 2], {"k": [1, 2]}, "\\xdeadbeef"]]
    assert payload(result)["rows"] == text["rows"]


@pytest.mark.parametrize("era", ERAS)
async def test_a_masked_run_that_fails_does_not_quote_the_engines_error(target: Target, era: str) -> None:
    """The engine's message may quote a masked value ("invalid input syntax: c1@…")."""
    async with memory_session(target, era) as s:
        s.answer({"action": "accept", "content": {"decision": "run_masked"}})
        failed = payload(await s.call("SELECT name FROM customers WHERE CAST(email AS INT) = 1"))
        s.answer({"action": "accept", "content": {"decision": "run"}})
        shown = payload(await s.call("SELECT name FROM customers WHERE CAST(email AS INT) = 1"))
    assert (failed["status"], failed["reason"]) == ("failed", "engine_error")
    assert "@" not in json.dumps(failed)
    assert failed["detail"]
    assert "@" in shown["detail"]  # the person chose to see the values: the engine's words stay


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT array_agg(email) AS emails FROM customers",
        "SELECT id, lag(email) OVER (ORDER BY id) AS before FROM customers ORDER BY id LIMIT 3",
        "SELECT country, max(email) AS top FROM customers GROUP BY country ORDER BY country",
    ],
)
async def test_a_masked_run_of_an_aggregate_or_window_over_a_masked_column_runs_with_nulls(
    target: Target, sql: str
) -> None:
    async with memory_session(target, "legacy") as s:
        s.answer({"action": "accept", "content": {"decision": "run_masked"}})
        done = payload(await s.call(sql))
    assert done["status"] == "ran", done
    assert "@" not in json.dumps(done["rows"])
    assert done["rows"]


async def test_a_result_is_bounded_in_characters_per_cell_and_in_all(target: Target) -> None:
    async with memory_session(target, "legacy") as s:
        one = payload(await s.call("SELECT repeat('x', 150000) AS big"))
        many = payload(await s.call("SELECT repeat('x', 50000) AS big FROM customers"))
    assert one["truncated"]
    assert one["rows"] == [["x" * MAX_CELL_CHARS + "…"]]
    assert many["truncated"]
    assert 0 < many["row_count"] * 50_000 <= MAX_RESULT_CHARS


@pytest.mark.parametrize("era", ERAS)
async def test_an_expensive_query_asks_with_estimate_and_threshold_and_runs_on_accept(
    target: Target, era: str
) -> None:
    async with memory_session(target, era) as s:
        await stories.expensive_asks_then_runs(s)


@pytest.mark.parametrize("era", ERAS)
async def test_a_pii_query_names_each_column_with_its_tag_and_runs_masked_on_that_choice(
    target: Target, era: str
) -> None:
    async with memory_session(target, era) as s:
        await stories.pii_names_columns_and_runs_masked(s)


@pytest.mark.parametrize("action", ["decline", "cancel"])
@pytest.mark.parametrize("era", ERAS)
async def test_a_pii_query_never_runs_on_decline_or_cancel_and_records_which(
    target: Target, era: str, action: str
) -> None:
    engine = CountingEngine(open_engine(target.engine, target.dsn))
    async with memory_session(target, era, engine=engine) as s:
        await stories.pii_not_run_on(s, action)
    assert engine.ran == []


@pytest.mark.parametrize("era", ERAS)
async def test_choosing_dont_run_in_the_form_is_a_decline_and_nothing_runs(target: Target, era: str) -> None:
    engine = CountingEngine(open_engine(target.engine, target.dsn))
    async with memory_session(target, era, engine=engine) as s:
        s.answer({"action": "accept", "content": {"decision": "dont_run"}})
        out = payload(await s.call(PII))
        assert (out["status"], out["outcome"]) == ("not_run", "declined")
        assert s.last_record()["reason"] == "user_declined"
    assert engine.ran == []


@pytest.mark.parametrize("era", ERAS)
async def test_every_write_statement_is_refused_before_the_engine_sees_it(target: Target, era: str) -> None:
    engine = CountingEngine(open_engine(target.engine, target.dsn))
    async with memory_session(target, era, engine=engine) as s:
        await stories.writes_are_refused(s)
    assert engine.ran == []


def test_the_engine_connection_itself_is_read_only(target: Target) -> None:
    engine = open_engine(target.engine, target.dsn)
    try:
        with pytest.raises(DataEngineError) as caught:
            engine.run("CREATE TABLE mcp_elicit_should_not_exist (a int)", 1)
        assert caught.value.engine == target.engine
    finally:
        engine.close()


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_cannot_show_forms_gets_a_refusal_not_an_unasked_run(
    target: Target, era: str
) -> None:
    engine = CountingEngine(open_engine(target.engine, target.dsn))
    async with memory_session(target, era, engine=engine, elicit=False) as s:
        result = await s.call(PII)
        assert result.is_error
        assert payload(result)["reason"] == "cannot_ask"
        assert s.last_record()["reason"] == "cannot_ask"
        await stories.cheap_runs_unasked(s)  # a query that needs no question still runs
    assert engine.ran == [stories.CHEAP]


@pytest.mark.parametrize("era", ERAS)
async def test_whole_rows_and_sql_run_by_name_never_get_personal_data_past_the_guard(
    target: Target, era: str
) -> None:
    engine = CountingEngine(open_engine(target.engine, target.dsn))
    by_name = "SELECT * FROM query('SELECT email FROM customers')"
    if target.engine == "postgres":
        by_name = "SELECT query_to_xml('select email from customers', true, false, '')"
    async with memory_session(target, era, engine=engine, elicit=False) as s:
        whole_rows = ("SELECT c FROM customers c LIMIT 1", "SELECT to_json(c) AS r FROM customers c LIMIT 1")
        for whole_row in whole_rows:
            refused = payload(await s.call(whole_row))
            assert (refused["status"], refused["reason"]) == ("refused", "cannot_ask")  # it reads email
        assert payload(await s.call(by_name))["reason"] == "opaque_source"
    assert engine.ran == []


@pytest.mark.parametrize("era", ERAS)
async def test_fail_open_for_elicitation_is_a_setting_and_is_recorded(target: Target, era: str) -> None:
    config = DataConfig(
        fail_closed=FailClosed(elicitation=False),
        engine_thresholds=target.config.engine_thresholds,
        column_tags=target.config.column_tags,
    )
    async with memory_session(target, era, config=config, elicit=False) as s:
        out = payload(await s.call(PII))
        assert (out["status"], out["category"]) == ("ran", "ran_unguarded")
        assert s.last_record()["reason"] == "ran_unguarded"


@pytest.mark.parametrize(
    ("broken", "reason"), [("estimate_fails", "no_estimate"), ("tables_fail", "no_catalog")]
)
async def test_no_estimate_or_no_catalog_refuses_the_query(target: Target, broken: str, reason: str) -> None:
    engine = CountingEngine(open_engine(target.engine, target.dsn), **{broken: True})
    async with memory_session(target, "2026-07-28", engine=engine) as s:
        result = await s.call(stories.CHEAP)
        assert result.is_error
        assert payload(result)["reason"] == reason
        assert s.last_record()["reason"] == reason
    assert engine.ran == []


# What the query tool can answer that is not a refusal; every other category is one.
NOT_REFUSALS = {
    "ran_unasked",
    "ran_unguarded",
    "user_accepted",
    "user_accepted_masked",
    "user_declined",
    "user_cancelled",
    "not_answered",
}
# Each refusal on the DuckDB sample: (reason, sql, how the session is broken, words the detail holds).
REFUSALS: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("not_read_only", "DELETE FROM customers", "", ("DELETE", "only SELECT")),
    ("not_parsed", "SELEC 1", "", ("Unexpected token",)),
    ("not_parsed", "SHOW ALL", "", ("parser could not read it",)),  # sqlglot's IndexError on DuckDB
    ("not_parsed", "SELECT " + "(" * 60 + "1" + ")" * 60, "", ("nested too deeply",)),  # RecursionError
    ("unknown_column", "SELECT nope FROM customers", "", ("nope",)),
    ("no_estimate", "SELECT abs(name) FROM customers", "", ("not run", "could not plan", "abs(VARCHAR)")),
    ("opaque_source", "SELECT no_such_function(1)", "", ("no_such_function()", "built-in functions")),
    ("opaque_source", "SELECT * FROM read_csv('/etc/passwd')", "", ("table function", "name the tables")),
    ("opaque_source", "SELECT getenv('HOME')", "", ("getenv()", "name the tables")),
    ("no_catalog", stories.CHEAP, "tables_fail", ("catalog could not be read", "refused")),
    (
        "cannot_ask",
        stories.PII,
        "no_elicitation",
        (
            "confirmation",
            "main.customers.email (pii)",
            "main.customers.name (personal)",
            "cannot show the question",
            "client with elicitation",
            "leave out those columns",
        ),
    ),
    (
        "cannot_ask",
        stories.EXPENSIVE,
        "no_elicitation",
        ("over the limit of 1,000,000", "cannot show the question", "client with elicitation", "fewer rows"),
    ),
]


def test_the_refusal_cases_cover_every_refusal_category() -> None:
    assert {r[0] for r in REFUSALS} == set(CATEGORIES) - NOT_REFUSALS


@pytest.mark.parametrize(("reason", "sql", "broken", "words"), REFUSALS)
@pytest.mark.parametrize("era", ERAS)
async def test_every_refusal_has_a_one_line_detail_the_model_can_act_on(
    sample_db: Path, era: str, reason: str, sql: str, broken: str, words: tuple[str, ...]
) -> None:
    target = Target("duckdb", str(sample_db), "main", config_from_mapping(CATALOG), "")
    engine = CountingEngine(open_engine("duckdb", str(sample_db)), tables_fail=broken == "tables_fail")
    async with memory_session(target, era, engine=engine, elicit=broken != "no_elicitation") as s:
        out = payload(await s.call(sql))
        assert (out["status"], out["reason"]) == ("refused", reason)
        assert out["detail"].strip()
        assert "\n" not in out["detail"]
        for word in words:
            assert word in out["detail"]
        assert s.last_record()["reason"] == reason
    assert engine.ran == []


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ERAS)
async def test_the_whole_story_over_a_real_transport(
    target: Target, era: str, transport: str, tmp_path: Path
) -> None:
    async with transport_session(target, era, transport, tmp_path) as s:
        for step in stories.STORY:
            await step(s)
        kinds = [r["reason"] for r in query_records(s.records())]
    assert kinds[:5] == [
        "ran_unasked",
        "user_accepted",
        "user_accepted_masked",
        "user_declined",
        "user_cancelled",
    ]
    assert set(kinds[5:]) == {"not_read_only"}


# -- our own client: ElicitClient in-process, and `mcp-elicit call --answers` as a user runs it --------

STORY_ANSWERS = [
    {"action": "accept", "content": {"decision": "run"}},
    {"action": "accept", "content": {"decision": "run_masked"}},
    {"action": "decline"},
    {"action": "cancel"},
]


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
async def test_the_whole_story_with_our_client(target: Target, protocol: str) -> None:
    from mcp_elicit.client import ElicitClient
    from mcp_elicit.ui.scripted import ScriptedUI

    ui = ScriptedUI(list(STORY_ANSWERS))
    sink = MemoryAuditSink()
    server = build_data_server(
        open_engine(target.engine, target.dsn), target.config, ElicitSettings(audit=sink)
    )
    async with ElicitClient(server, ui=ui, protocol=protocol) as client:
        s = Session(
            target,
            lambda sql: client.call_tool("query", {"sql": sql}),
            lambda answer: None,  # the script above holds the answers, in order
            lambda: [(p.message, p.form.to_wire("2025-11-25")) for p in ui.seen],
            lambda: sink.records,
        )
        for step in stories.STORY:
            await step(s)
    assert [o.action for o in client.outcomes] == ["accept", "accept", "decline", "cancel"]


# -- the catalog tools, and a question nobody answers ----------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_list_and_describe_show_the_personal_data_columns_and_their_tags(
    target: Target, era: str
) -> None:
    server = build_data_server(open_engine(target.engine, target.dsn), target.config)
    async with Client(server, mode=era) as c:
        listed = payload(await c.call_tool("list_tables", {}))
        described = payload(await c.call_tool("describe_table", {"table": "customers"}))
        missing = await c.call_tool("describe_table", {"table": "nope"})
    tables = {t["table"]: t for t in listed["tables"]}
    assert tables[f"{target.schema}.customers"]["personal_data"] == ["name", "email", "phone"]
    assert tables[f"{target.schema}.events"]["personal_data"] == []
    columns = {c["name"]: c for c in described["columns"]}
    assert columns["email"]["personal_data"] == ["pii"]
    assert columns["segment"]["tags"] == ["non-pii: marketing segment"]
    assert columns["segment"]["personal_data"] == []
    assert missing.is_error
    assert payload(missing)["reason"] == "unknown_table"
    # the model learns which name was looked up and where the served tables are listed
    assert f"{target.schema}.nope" in payload(missing)["detail"]
    assert "list_tables" in payload(missing)["detail"]


async def test_a_question_nobody_answers_ends_without_running_and_is_recorded(target: Target) -> None:
    away = stories.WalkedAway()
    sink = MemoryAuditSink()
    engine = CountingEngine(open_engine(target.engine, target.dsn))
    settings = ElicitSettings(audit=sink, ask_timeout=0.05)
    server = build_data_server(engine, target.config, settings)
    async with Client(server, mode="legacy", elicitation_callback=away) as c:
        result = await c.call_tool("query", {"sql": PII})
        away.release()
    assert result.is_error
    assert payload(result)["outcome"] == "not_answered"
    assert query_records(sink.records)[-1]["reason"] == "not_answered"
    assert engine.ran == []


@pytest.mark.parametrize("reply", ["error", "unfit"])
async def test_a_client_that_answers_with_an_error_or_answers_that_never_fit_gets_not_run_and_a_record(
    target: Target, reply: str
) -> None:
    import mcp_types as t

    async def answer(context: Any, params: t.ElicitRequestParams) -> t.ElicitResult | t.ErrorData:
        if reply == "error":  # what FastMCP's client sends when its own check of an answer fails
            return t.ErrorData(code=-32602, message="'maybe' is not one of ['run', 'dont_run']")
        return t.ElicitResult(action="accept", content={"decision": "maybe"})

    sink = MemoryAuditSink()
    engine = CountingEngine(open_engine(target.engine, target.dsn))
    server = build_data_server(engine, target.config, ElicitSettings(audit=sink))
    async with Client(server, mode="legacy", elicitation_callback=answer) as c:
        result = await c.call_tool("query", {"sql": PII})
    assert result.is_error
    assert payload(result)["status"] == "not_run"
    assert payload(result)["outcome"] == "not_answered"
    [record] = sink.records  # the question's one record, with the query's facts
    assert (record["action"], record["decided_by"], record["reason"]) == ("error", "error", "not_answered")
    assert record["details"]["failure"] == ("client_refused" if reply == "error" else "invalid_answers")
    assert engine.ran == []


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT upper(name), Email, id + 1, 1 AS Tally FROM customers ORDER BY id LIMIT 2",
        "SELECT email, count(*) FROM customers GROUP BY 1 UNION ALL SELECT name, 1 FROM customers LIMIT 2",
        "SELECT * FROM customers ORDER BY id LIMIT 2",
    ],
)
async def test_a_masked_run_keeps_the_column_names_of_a_plain_run(target: Target, sql: str) -> None:
    async with memory_session(target, "legacy") as s:
        s.answer({"action": "accept", "content": {"decision": "run"}})
        plain = payload(await s.call(sql))
        s.answer({"action": "accept", "content": {"decision": "run_masked"}})
        masked = payload(await s.call(sql))
    assert (plain["status"], masked["status"]) == ("ran", "ran"), masked
    assert masked["masked"]
    assert masked["columns"] == plain["columns"]
    assert "@" not in json.dumps(masked["rows"])


async def test_describe_table_reports_the_limit_a_scan_of_the_table_is_held_to(sample_db: Path) -> None:
    config = config_from_mapping(
        {"tables": {"events": {"threshold": 5_000_000}, "orders": {"threshold": 2_000}}}
    )
    target = Target("duckdb", str(sample_db), "main", config, "")
    server = build_data_server(open_engine("duckdb", str(sample_db)), config)
    async with Client(server, mode="legacy") as c:
        events = payload(await c.call_tool("describe_table", {"table": "events"}))
        orders = payload(await c.call_tool("describe_table", {"table": "orders"}))
    async with memory_session(target, "legacy") as s:
        s.answer({"action": "decline"})
        scan = await s.call("SELECT kind, count(*) FROM events GROUP BY 1")  # 1,200,000 rows
    assert payload(scan)["status"] == "not_run"  # asked: over the engine's 1,000,000 all the same
    assert events["threshold_rows"] == 1_000_000  # not the table's 5,000,000, which never applies
    assert orders["threshold_rows"] == 2_000  # a table's own lower limit does


async def test_row_estimates_and_thresholds_are_whole_numbers_for_the_model_and_the_trail(
    sample_db: Path,
) -> None:
    target = Target("duckdb", str(sample_db), "main", DataConfig(), "")
    async with memory_session(target, "legacy") as s:
        s.answer({"action": "accept", "content": {"decision": "run"}})
        ran = await s.call(stories.EXPENSIVE)
        record = s.last_record()
    server = build_data_server(open_engine("duckdb", str(sample_db)), DataConfig())
    async with Client(server, mode="legacy") as c:
        described = await c.call_tool("describe_table", {"table": "events"})
    text = json.loads("".join(getattr(c, "text", "") for c in ran.content))
    assert isinstance(text["estimate"]["total"], int)
    assert isinstance(text["estimate"]["largest"][1], int)
    assert isinstance(payload(described)["threshold_rows"], int)
    details = record["details"]
    assert all(isinstance(n, int) for n in (details["threshold"], details["estimate"]["total"]))
    assert all(isinstance(n, int) for n in details["exceeded"][0][1:])
    assert ".0" not in json.dumps([text["estimate"], details["estimate"], details["exceeded"]])

"""The client's consent audit trail: one record per elicitation, every outcome, fail closed (C4, U9)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

from mcp_elicit.client import Elicitation, Outcome, Pipeline, Reply
from mcp_elicit.client.audit import AuditTrail, consent_event
from mcp_elicit.client.connection import ElicitClient
from mcp_elicit.client.guardrails import install_guardrails
from mcp_elicit.client.names import CLEANED_NAME_MARK, cleaned_requester
from mcp_elicit.client.pipeline import INTERRUPTED, WITHDRAWN
from mcp_elicit.client.stages import AnswerWithoutAsking
from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult, UrlPrompt
from mcp_elicit.config import AuditConfig
from mcp_elicit.core.consent import DECIDERS, ClientIdentity
from mcp_elicit.core.policy import Policy, RateLimit, ServerMatch, ServerRule
from mcp_elicit.core.urls import check_url
from mcp_elicit.errors import ConfigError
from mcp_elicit.testing import ManualClock, MemoryAuditSink
from mcp_elicit.ui.scripted import ScriptedUI
from tests.client.test_guardrails import API_KEY_FORM, NAME_FORM, PAGE

pytestmark = pytest.mark.anyio

CLIENT = ClientIdentity("test-client", "9.9")
SERVER = Requester(name="srv", where="python srv.py", version="1.2")
PURPOSE = Purpose("tools/call", "deploy", {"service": "web"})
PROFILE = {
    "message": "Profile",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "token": {"type": "string"},  # warn: never stored, at any level
        },
    },
}


def question(pipeline: Pipeline, params: Any = None, **kw: Any) -> Elicitation:
    kw.setdefault("requester", SERVER)
    kw.setdefault("purpose", PURPOSE)
    kw.setdefault("attribution", "exact")
    return Elicitation(
        params=NAME_FORM if params is None else params,
        protocol=kw.pop("protocol", "2025-11-25"),
        declared_modes=pipeline.modes,
        time=pipeline.clock(),
        **kw,
    )


def audited(ui: Any, sink: Any, policy: Policy | None = None, **trail: Any) -> Pipeline:
    pipeline = Pipeline(ui, clock=ManualClock(), modes=("form", "url"))
    if policy is not None:
        install_guardrails(pipeline, policy)
    pipeline.observers.append(AuditTrail(sink, client=CLIENT, **trail))  # last, as ElicitClient adds it
    return pipeline


class Away:
    """A person who never answers in time: every question ends as a timeout."""

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        return UIResult("cancel", decided_by="timeout")

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        return UIResult("cancel", decided_by="timeout")

    async def notice(self, requester: Requester, text: str) -> None:
        pass


async def test_every_outcome_leaves_exactly_one_record_and_the_chain_verifies_C4() -> None:
    sink = MemoryAuditSink()
    ui = ScriptedUI([{"content": {"name": "Ada"}}])
    policy = Policy(
        form="allow",
        url="allow",
        servers=(ServerRule(ServerMatch(command="denied*"), form="deny"),),
    )
    pipeline = audited(ui, sink, policy)
    nobody = Pipeline(ScriptedUI(), clock=pipeline.clock, observers=[AuditTrail(sink, client=CLIENT)])
    nobody.insert(AnswerWithoutAsking(nobody.ui))
    away = audited(Away(), sink)
    cases = [
        (pipeline, NAME_FORM, {}),  # accepted by the script
        (pipeline, "not an object", {}),  # refused by the mode check
        (pipeline, {"message": "x", "requestedSchema": {"type": "array"}}, {}),  # refused by the gate
        (pipeline, API_KEY_FORM, {}),  # refused by the secret guard
        (pipeline, NAME_FORM, {"requester": Requester("d", "denied-server")}),  # refused by policy
        (pipeline, PAGE, {}),  # URL mode without a URL check: cancelled
        (nobody, NAME_FORM, {}),  # nobody to ask
        (away, NAME_FORM, {}),  # nobody answered in time
    ]
    outcomes: list[Outcome] = []
    for p, params, kw in cases:
        _, outcome = await p.run(question(p, params, **kw))
        outcomes.append(outcome)
    assert len(sink.records) == len(cases)
    assert sink.verify().ok
    assert [(r["action"], r["decided_by"]) for r in sink.records] == [
        ("accept", "script"),
        ("error", "gate"),
        ("error", "gate"),
        ("decline", "secret_guard"),
        ("decline", "policy"),
        ("cancel", "error"),
        ("cancel", "no_terminal"),
        ("cancel", "timeout"),
    ]
    assert [r["reason"] for r in sink.records] == [o.reason for o in outcomes]


async def test_a_question_decided_before_anything_was_shown_records_mode_none_and_the_mode_asked() -> None:
    from mcp_elicit.client.url_stages import CheckUrl

    class Checks:  # the URL check's settings: no trusted domains
        trusted_domains: tuple[str, ...] = ()

    sink = MemoryAuditSink()
    policy = Policy(
        form="allow", url="allow", servers=(ServerRule(ServerMatch(command="denied*"), form="deny"),)
    )
    pipeline = audited(ScriptedUI([{"content": {"name": "Ada"}}]), sink, policy)
    pipeline.insert(CheckUrl(Checks()))  # type: ignore[arg-type]
    limited = audited(
        ScriptedUI.accept_defaults(), sink, Policy(form="allow", rate_limits=(RateLimit(0, 1.0),))
    )
    nobody = Pipeline(ScriptedUI(), clock=pipeline.clock, observers=[AuditTrail(sink, client=CLIENT)])
    nobody.insert(AnswerWithoutAsking(nobody.ui))
    cases = [
        (pipeline, NAME_FORM, {}),  # shown: accepted by the script
        (pipeline, {"message": "x", "requestedSchema": {"type": "array"}}, {}),  # the schema gate
        (pipeline, API_KEY_FORM, {}),  # the secret guard
        (pipeline, NAME_FORM, {"requester": Requester("d", "denied-server")}),  # the policy
        (pipeline, {k: v for k, v in PAGE.items() if k != "elicitationId"}, {}),  # the URL check
        (limited, NAME_FORM, {}),  # a rate limit
        (nobody, NAME_FORM, {}),  # nobody to ask
    ]
    for p, params, kw in cases:
        await p.run(question(p, params, **kw))
    assert [(r["decided_by"], r["mode"], r.get("details")) for r in sink.records] == [
        ("script", "form", None),
        ("gate", "none", {"requested_mode": "form"}),
        ("secret_guard", "none", {"requested_mode": "form"}),
        ("policy", "none", {"requested_mode": "form"}),
        ("gate", "none", {"requested_mode": "url"}),
        ("rate_limit", "none", {"requested_mode": "form"}),
        ("no_terminal", "none", {"requested_mode": "form"}),
    ]
    assert sink.records[4]["url"]["host"] == "example.org"  # a refused page still names its host
    assert [f["name"] for f in sink.records[2]["fields"]] == [
        "account",
        "api_key",
    ]  # a refused form its fields
    assert sink.verify().ok


async def test_a_rate_limited_question_is_recorded_as_cancel_by_rate_limit() -> None:
    sink = MemoryAuditSink()
    nothing_admitted = Policy(form="allow", rate_limits=(RateLimit(0, 1.0),))
    pipeline = audited(ScriptedUI.accept_defaults(), sink, nothing_admitted)
    await pipeline.run(question(pipeline))
    assert (sink.records[0]["action"], sink.records[0]["decided_by"], sink.records[0]["reason"]) == (
        "cancel",
        "rate_limit",
        "rate_limited",
    )


async def test_a_record_says_who_asked_whom_for_what_and_never_the_values_U9() -> None:
    sink = MemoryAuditSink()
    pipeline = audited(ScriptedUI([{"content": {"name": "Ada Lovelace", "token": "s3cr3t"}}]), sink)
    await pipeline.run(question(pipeline, PROFILE))
    record = sink.records[0]
    assert record["side"] == "client"
    assert record["server"] == {"name": "srv", "version": "1.2", "where": "python srv.py"}
    assert record["client"] == {"name": "test-client", "version": "9.9"}
    assert (record["protocol"], record["mode"]) == ("2025-11-25", "form")
    assert record["call"] == {"method": "tools/call", "request_id": None, "name": "deploy"}
    assert [(f["name"], f["type"], f["sensitive"]) for f in record["fields"]] == [
        ("name", "string", "ok"),
        ("token", "string", "warn"),
    ]
    assert record["latency_ms"] >= 0
    assert "Ada Lovelace" not in repr(record)
    assert "s3cr3t" not in repr(record)


async def test_at_the_request_response_level_only_values_of_ordinary_fields_are_kept() -> None:
    sink = MemoryAuditSink(level="request_response")
    pipeline = audited(ScriptedUI([{"content": {"name": "Ada", "token": "s3cr3t"}}]), sink)
    await pipeline.run(question(pipeline, PROFILE))
    record = sink.records[0]
    assert record["content"] == {"name": "Ada"}
    assert record["redacted"] == ["token"]
    assert record["message"] == "Profile"


async def test_a_url_verdict_left_by_the_url_check_is_recorded_as_host_domain_and_verdict() -> None:
    class UrlCheck:
        name = "url_check"

        async def __call__(self, e: Elicitation) -> Reply:
            e.url_verdict = check_url(e.url or "")
            return Reply("decline", "person")

    sink = MemoryAuditSink()
    pipeline = audited(ScriptedUI(), sink)
    pipeline.insert(UrlCheck())
    params = {**PAGE, "url": "https://accounts.example.co.uk/login?token=abc"}
    await pipeline.run(question(pipeline, params))
    url = sink.records[0]["url"]
    assert url == {"host": "accounts.example.co.uk", "domain": "example.co.uk", "verdict": "ok"}


async def test_a_url_without_a_verdict_still_records_its_host_never_its_query() -> None:
    sink = MemoryAuditSink()
    pipeline = audited(ScriptedUI(), sink)
    await pipeline.run(question(pipeline, {**PAGE, "url": "https://x.example/cb?code=123"}))
    assert sink.records[0]["url"]["host"] == "x.example"
    assert "code=123" not in repr(sink.records[0])


def test_every_pipeline_decider_is_a_consent_decider() -> None:
    from typing import get_args

    from mcp_elicit.client.model import DecidedBy

    assert set(get_args(DecidedBy)) <= set(DECIDERS)


def test_an_unknown_decider_is_recorded_as_error() -> None:
    e = Elicitation(params={"message": "m"}, protocol="2025-11-25", requester=SERVER)
    outcome = Outcome.of(e, Reply("decline", "a_plugin_of_mine"))  # type: ignore[arg-type]
    assert consent_event(e, outcome).decided_by == "error"


# -- fail closed ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("on_write_error", "expected"),
    [
        ("decline", Reply("decline", "error", reason="audit_write_failed")),
        ("cancel", Reply("cancel", "error", reason="audit_write_failed")),
        ("proceed", Reply("accept", "script", content={"name": "Ada"})),
    ],
)
async def test_when_the_sink_cannot_write_an_accept_is_not_sent_unless_configured(
    on_write_error: str, expected: Reply, caplog: pytest.LogCaptureFixture
) -> None:
    sink = MemoryAuditSink()
    sink.fail_writes = True
    pipeline = audited(ScriptedUI([{"content": {"name": "Ada"}}]), sink, on_write_error=on_write_error)
    with caplog.at_level(logging.ERROR, logger="mcp_elicit"):
        decision, outcome = await pipeline.run(question(pipeline))
    assert decision == expected
    assert outcome.action == expected.action
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert not errors[0].exc_info  # a sink that cannot write is one line, not a traceback


async def test_a_decline_stays_a_decline_when_the_sink_cannot_write() -> None:
    sink = MemoryAuditSink()
    sink.fail_writes = True
    pipeline = audited(ScriptedUI([{"action": "decline"}]), sink)
    decision, _ = await pipeline.run(question(pipeline))
    assert decision == Reply("decline", "script")


def test_an_unknown_write_error_policy_is_refused() -> None:
    with pytest.raises(ConfigError):
        AuditTrail(MemoryAuditSink(), on_write_error="ignore")  # type: ignore[arg-type]


# -- ElicitClient opens and closes a configured sink ---------------------------------------------


async def test_elicit_client_opens_a_configured_sqlite_trail_and_closes_it(tmp_path: Path) -> None:
    from mcp_elicit.audit.sqlite import SqliteAuditSink
    from mcp_elicit.client import ElicitClient
    from mcp_elicit.reference import build_reference_server

    db = tmp_path / "audit.sqlite3"
    ui = ScriptedUI([{"content": {"name": "Lin"}}])
    client = ElicitClient(build_reference_server(), ui=ui, protocol="legacy", audit=AuditConfig(path=db))
    async with client:
        await client.get_prompt("greeting")
        assert len(client.pipeline.observers) == 1
    assert client.pipeline.observers == []  # the trail leaves with the connection
    with SqliteAuditSink(db, readonly=True) as store:
        records = list(store.iter_records())
        assert store.verify().ok
    assert [(r["action"], r["client"]["name"], r["call"]["name"]) for r in records] == [
        ("accept", "mcp-elicit", "greeting")
    ]


async def test_the_none_level_opens_no_store(tmp_path: Path) -> None:
    from mcp_elicit.client import ElicitClient
    from mcp_elicit.reference import build_reference_server

    db = tmp_path / "audit.sqlite3"
    ui = ScriptedUI([{"content": {"name": "Lin"}}])
    async with ElicitClient(
        build_reference_server(), ui=ui, protocol="legacy", audit=AuditConfig(level="none", path=db)
    ) as client:
        await client.get_prompt("greeting")
    assert not db.exists()


@pytest.mark.parametrize("on_write_error", ["decline", "proceed"])
async def test_a_trail_that_cannot_be_opened_stops_the_connection_unless_configured_to_proceed(
    tmp_path: Path, on_write_error: Any
) -> None:
    from mcp_elicit.client import ElicitClient
    from mcp_elicit.errors import AuditReadError, AuditWriteError
    from mcp_elicit.reference import build_reference_server

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    config = AuditConfig(path=blocked / "audit.sqlite3", on_write_error=on_write_error)  # under a file
    client = ElicitClient(build_reference_server(), ui=ScriptedUI(), protocol="legacy", audit=config)
    if on_write_error == "proceed":
        async with client:
            pass
        return
    with pytest.raises((AuditWriteError, AuditReadError)):
        async with client:
            pass


class Note(BaseModel):
    note: str


class Waiting:
    """A person who has the question on screen and has not answered yet."""

    def __init__(self) -> None:
        self.shown = anyio.Event()

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        self.shown.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        return await self.ask_form(prompt)  # type: ignore[arg-type]

    async def notice(self, requester: Requester, text: str) -> None:
        pass


async def test_a_question_withdrawn_while_open_is_recorded_as_cancel_withdrawn() -> None:
    """The request's cancellation (the server gave up, the call ended) still leaves its record."""
    sink = MemoryAuditSink()
    ui = Waiting()
    pipeline = audited(ui, sink)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(pipeline.run, question(pipeline))
            await ui.shown.wait()
            tg.cancel_scope.cancel()
    [record] = sink.records
    assert (record["action"], record["decided_by"], record["reason"]) == ("cancel", "timeout", WITHDRAWN)
    assert sink.verify().ok


async def test_a_question_open_when_the_person_interrupts_is_recorded_as_their_cancel() -> None:
    """Ctrl-C (`Pipeline.interrupt`) marks the questions open then; a later one is withdrawn as usual."""
    sink = MemoryAuditSink()
    ui = Waiting()
    pipeline = audited(ui, sink)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(pipeline.run, question(pipeline))
            await ui.shown.wait()
            pipeline.interrupt()
            tg.cancel_scope.cancel()
        ui.shown = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(pipeline.run, question(pipeline))
            await ui.shown.wait()
            tg.cancel_scope.cancel()
    assert [(r["action"], r["decided_by"], r["reason"]) for r in sink.records] == [
        ("cancel", "person", INTERRUPTED),
        ("cancel", "timeout", WITHDRAWN),
    ]


async def test_a_question_the_servers_tool_gives_up_on_is_recorded_through_the_sdk() -> None:
    """A raw SDK server whose tool stops waiting (its `ctx.elicit` cancelled): the SDK tells the
    client, whose open question is withdrawn and recorded."""
    ui = Waiting()
    server = MCPServer("impatient")

    @server.tool()
    async def impatient(ctx: Context) -> str:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ctx.elicit, "A note?", Note)
            await ui.shown.wait()
            tg.cancel_scope.cancel()
        return "gave up"

    sink = MemoryAuditSink()
    told = anyio.Event()
    with anyio.fail_after(10):
        async with ElicitClient(server, ui=ui, audit=sink) as client:
            client.pipeline.observers.append(lambda e, outcome: told.set())  # after the trail
            result = await client.call_tool("impatient", {})
            await told.wait()
    assert result.is_error is False
    [record] = sink.records
    assert (record["action"], record["decided_by"], record["reason"]) == ("cancel", "timeout", WITHDRAWN)
    # what `call` reports (its question lines, `--json`) lists it as the trail does
    [outcome] = client.outcomes
    assert (outcome.action, outcome.decided_by, outcome.reason) == ("cancel", "timeout", WITHDRAWN)


HOSTILE = Requester(
    name="x\x1b[1A\x1b[2K\rtrusted\u202e-server", where="python evil.py\x1b[2J", version="1\x07"
)


async def test_a_question_refused_by_the_gate_records_the_servers_name_cleaned_and_marked() -> None:
    """The transport guard screens a request (`Pipeline.screen`: the mode check and the gate only)
    before `Identify` cleans the requester: the record cleans it itself, as every prompt and
    `audit list` must show server text inert."""
    sink = MemoryAuditSink()
    pipeline = audited(ScriptedUI([]), sink)
    nested = {"message": "x", "requestedSchema": {"type": "object", "properties": {"o": {"type": "object"}}}}
    screened = await pipeline.screen(question(pipeline, nested, requester=HOSTILE))
    assert screened is not None
    assert screened[0].decided_by == "gate"
    [record] = sink.records
    server = record["server"]
    assert server["name"] == cleaned_requester(HOSTILE).name
    assert server["name"].endswith(CLEANED_NAME_MARK)
    assert not any(ord(c) < 32 or c == "\u202e" for c in server["name"] + server["version"])


@given(
    name=st.text(max_size=40),
    where=st.text(max_size=40),
    version=st.none() | st.text(max_size=20),
    title=st.none() | st.text(max_size=20),
)
def test_cleaning_a_cleaned_requester_changes_nothing(
    name: str, where: str, version: str | None, title: str | None
) -> None:
    once = cleaned_requester(Requester(name=name, where=where, version=version, title=title))
    assert cleaned_requester(once) == once


async def test_the_connections_server_is_named_as_its_questions_and_records_name_it() -> None:
    """`ElicitClient.server` (what `call` and `connect` print) marks a cleaned name as the prompts
    and the trail do, so one server never shows under two names."""
    server = MCPServer("evil\x1b[31m-server")

    @server.tool()
    async def ask_once(ctx: Context) -> str:
        await ctx.elicit("A note?", Note)
        return "ok"

    sink = MemoryAuditSink()
    with anyio.fail_after(10):
        async with ElicitClient(server, ui=ScriptedUI([{"content": {"note": "hi"}}]), audit=sink) as client:
            await client.call_tool("ask_once", {})
            shown = client.server.name
    assert shown.endswith(CLEANED_NAME_MARK)
    assert [r["server"]["name"] for r in sink.records] == [shown]

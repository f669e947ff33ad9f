"""Guardrails end to end: secret forms stopped on both sides (F5), floods rate limited (C4), and one
client consent record per elicitation whose chain verifies, and whose tampering is found (C4, U9).

Servers: the raw SDK (`MCPServer` with `ctx.session.elicit_form` or a `Resolve` dependency: no
server-side guard), the server kit (`mcp_elicit.server.questions`: refuses before sending) and the
reference server over stdio and streamable HTTP, in both protocol eras.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from click.testing import CliRunner
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel

from mcp_elicit.audit.sqlite import TABLE, SqliteAuditSink
from mcp_elicit.cli import main
from mcp_elicit.client import ElicitClient, Pipeline
from mcp_elicit.core.policy import RATE_BURST, Policy
from mcp_elicit.errors import SecretInForm
from mcp_elicit.reference import build_reference_server
from mcp_elicit.server import ask, install
from mcp_elicit.testing import ManualClock, MemoryAuditSink
from mcp_elicit.ui.scripted import ScriptedUI
from tests.audit.conftest import POSTGRES_DEFAULT, POSTGRES_ENV, postgres_url
from tests.e2e.servers import reference_over_stdio, serving_http
from tests.support import text_of

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "modern"]
BOUND_SECONDS = 60.0
API_KEY_SCHEMA = {
    "type": "object",
    "properties": {"account": {"type": "string"}, "api_key": {"type": "string", "title": "API key"}},
    "required": ["api_key"],
}


class ApiAccess(BaseModel):
    account: str
    api_key: str


async def ask_for_key() -> Elicit[ApiAccess]:
    return Elicit("Paste your API key", ApiAccess)


def raw_sdk_server() -> MCPServer[Any]:
    """Asks for an API key through a form: the raw SDK has no guard against it."""
    server: MCPServer[Any] = MCPServer("raw-secrets")

    @server.tool()
    async def connect_push(ctx: Context) -> str:
        result = await ctx.session.elicit_form("Paste your API key", API_KEY_SCHEMA)  # type: ignore[arg-type]
        return result.action

    @server.tool()
    async def connect_resolved(access: Annotated[ElicitationResult[ApiAccess], Resolve(ask_for_key)]) -> str:
        return access.action

    return server


@dataclass
class KeyForm:
    account: str
    api_key: str


@dataclass
class Reader:
    name: str


def kit_server(caught: list[SecretInForm]) -> MCPServer[Any]:
    """The server kit: `ask` refuses a secret form before sending; the override sends it anyway."""
    server: MCPServer[Any] = MCPServer("kit-secrets")
    install(server)

    @server.tool()
    async def connect(ctx: Context) -> str:
        try:
            await ask(ctx, "Paste your API key", KeyForm)
        except SecretInForm as exc:
            caught.append(exc)
            return "refused: use URL mode"
        return "sent"

    @server.tool()
    async def connect_anyway(ctx: Context) -> str:
        return (await ask(ctx, "Paste your API key", KeyForm, allow_secret_fields=True)).action

    @server.tool()
    async def flood(ctx: Context, times: int) -> str:
        return ",".join([(await ask(ctx, f"Question {i}", Reader)).action for i in range(times)])

    return server


def client(server: Any, ui: Any, era: str, **options: Any) -> ElicitClient:
    return ElicitClient(server, ui=ui, protocol=era, **options)


# -- secrets in forms: stopped on both sides (F5) ---------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_raw_sdk_server_asking_for_an_api_key_is_stopped_by_the_client_F5(era: str) -> None:
    ui = ScriptedUI.accept_defaults()
    sink = MemoryAuditSink()
    tool = "connect_push" if era == "legacy" else "connect_resolved"
    with anyio.fail_after(BOUND_SECONDS):
        async with client(raw_sdk_server(), ui, era, audit=sink) as c:
            result = await c.call_tool(tool)
    assert text_of(result) == "decline"  # what the server got
    assert ui.seen == []  # the person never saw the form
    assert len(ui.notices) == 1  # but was told
    assert [(o.action, o.decided_by) for o in c.outcomes] == [("decline", "secret_guard")]
    (record,) = sink.records
    assert (record["decided_by"], record["reason"]) == ("secret_guard", "secret_in_form")
    assert {f["name"]: f["sensitive"] for f in record["fields"]}["api_key"] == "block"


async def test_a_raw_sdk_server_over_http_is_stopped_too_F5() -> None:
    ui = ScriptedUI.accept_defaults()
    with anyio.fail_after(BOUND_SECONDS):
        async with serving_http(raw_sdk_server()) as url, client(url, ui, "legacy") as c:
            result = await c.call_tool("connect_push")
    assert text_of(result) == "decline"
    assert [o.decided_by for o in c.outcomes] == ["secret_guard"]
    assert ui.seen == []


@pytest.mark.parametrize("era", ERAS)
async def test_a_server_kit_server_refuses_before_sending_so_the_client_sees_nothing_F5(era: str) -> None:
    caught: list[SecretInForm] = []
    ui = ScriptedUI.accept_defaults()
    sink = MemoryAuditSink()
    with anyio.fail_after(BOUND_SECONDS):
        async with client(kit_server(caught), ui, era, audit=sink) as c:
            result = await c.call_tool("connect")
    assert text_of(result) == "refused: use URL mode"
    assert list(caught[0].fields) == ["api_key"]
    assert c.outcomes == []
    assert sink.records == []  # nothing was asked, so nothing is recorded on the client


@pytest.mark.parametrize("era", ERAS)
async def test_a_server_overriding_its_own_guard_is_still_stopped_by_the_client_F5(era: str) -> None:
    ui = ScriptedUI.accept_defaults()
    with anyio.fail_after(BOUND_SECONDS):
        async with client(kit_server([]), ui, era) as c:
            result = await c.call_tool("connect_anyway")
    assert text_of(result) == "decline"
    assert [o.decided_by for o in c.outcomes] == ["secret_guard"]
    assert ui.seen == []


# -- a flood of questions is rate limited (C4) -----------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_a_server_that_floods_questions_is_rate_limited_C4(era: str) -> None:
    burst, _ = RATE_BURST
    # Bounded: the loop ends whatever the client answers; below the SDK's 10 rounds of 2026-07-28.
    times = burst + 4
    ui = ScriptedUI([{"content": {"name": "Ada"}, "repeat": True}])
    pipeline = Pipeline(ui, clock=ManualClock())  # every question arrives at the same instant
    sink = MemoryAuditSink()
    with anyio.fail_after(BOUND_SECONDS):
        async with client(
            kit_server([]), None, era, pipeline=pipeline, policy=Policy(form="allow"), audit=sink
        ) as c:
            result = await c.call_tool("flood", {"times": times})
    assert text_of(result).split(",") == ["accept"] * burst + ["cancel"] * (times - burst)
    assert [o.decided_by for o in c.outcomes] == ["script"] * burst + ["rate_limit"] * (times - burst)
    assert len(ui.seen) == burst
    assert len(sink.records) == times
    assert sink.verify().ok


# -- one client record per elicitation; verify passes; tampering is found --------------------------

DEPLOY = [
    {"match": {"fields": ["environment"]}, "content": {"environment": "production", "replicas": 3}},
    {"match": {"message": "affects live traffic"}, "content": {"confirm": True}},
]
SIGNUP = [
    {"match": {"fields": ["username"]}, "content": {"username": "ada", "email": "ada@example.org"}},
    {"match": {"message": "Step 2"}, "accept_defaults": True},
    {"match": {"message": "Step 3"}, "content": {"confirm": True}},
]


@asynccontextmanager
async def reference(transport: str, era: str, ui: Any, **options: Any) -> AsyncIterator[ElicitClient]:
    with anyio.fail_after(BOUND_SECONDS):
        if transport == "stdio":
            async with client(reference_over_stdio(), ui, era, **options) as c:
                yield c
        else:
            async with serving_http(build_reference_server()) as url, client(url, ui, era, **options) as c:
                yield c


async def run_reference(transport: str, era: str, sink: Any) -> list[Any]:
    """deploy and signup on the reference server, with the default policy (ask first, by notice)."""
    ui = ScriptedUI([*DEPLOY, *SIGNUP])
    async with reference(transport, era, ui, policy=Policy(), approval="notice", audit=sink) as c:
        deployed = await c.call_tool("deploy", {"service": "checkout"})
        signed_up = await c.call_tool("signup")
    assert text_of(deployed) == "Deployed checkout to production in eu-west with 3 replicas."
    assert text_of(signed_up).startswith("Created ada <ada@example.org>")
    return c.outcomes


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("era", ERAS)
async def test_every_elicitation_leaves_exactly_one_client_record_and_verify_passes_C4(
    era: str, transport: str, tmp_path: Path
) -> None:
    db = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(db) as sink:
        outcomes = await run_reference(transport, era, sink)
        records = list(sink.iter_records())
        assert sink.verify().ok
    assert len(outcomes) == 5  # deploy asks twice, signup three times
    assert len(records) == len(outcomes)
    assert [(r["action"], r["decided_by"]) for r in records] == [(o.action, o.decided_by) for o in outcomes]
    assert {(r["side"], r["server"]["name"], r["client"]["name"]) for r in records} == {
        ("client", "mcp-elicit-reference", "mcp-elicit")
    }
    assert {r["protocol"] for r in records} == {"2026-07-28" if era == "modern" else "2025-11-25"}
    assert [r["call"]["name"] for r in records] == ["deploy"] * 2 + ["signup"] * 3
    assert CliRunner().invoke(main, ["audit", "verify", "--db", str(db)]).exit_code == 0


async def test_editing_a_record_in_the_sqlite_file_is_found(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(db) as sink:
        await run_reference("stdio", "legacy", sink)
    with sqlite3.connect(db) as conn:  # the record says "accept": make it say "decline"
        conn.execute(f"UPDATE {TABLE} SET body = replace(body, '\"accept\"', '\"decline\"') WHERE seq = 2")
    with SqliteAuditSink(db, readonly=True) as sink:
        report = sink.verify()
    assert not report.ok
    assert {(b.seq, b.kind) for b in report.breaks} >= {(2, "hash_mismatch")}
    assert CliRunner().invoke(main, ["audit", "verify", "--db", str(db)]).exit_code == 1


async def test_deleting_a_record_from_the_sqlite_file_is_found(tmp_path: Path) -> None:
    db = tmp_path / "audit.sqlite3"
    with SqliteAuditSink(db) as sink:
        await run_reference("http", "modern", sink)
    with sqlite3.connect(db) as conn:
        conn.execute(f"DELETE FROM {TABLE} WHERE seq = 3")
    with SqliteAuditSink(db, readonly=True) as sink:
        report = sink.verify()
    assert [(b.seq, b.kind) for b in report.breaks] == [(4, "deleted")]


_POSTGRES = postgres_url()


@pytest.fixture
def pg_table() -> Iterator[tuple[str, str]]:
    if _POSTGRES is None:
        pytest.skip(f"no PostgreSQL: {POSTGRES_ENV} is unset and nothing answers at {POSTGRES_DEFAULT}")
    import psycopg
    from psycopg import sql

    table = f"audit_e2e_{uuid.uuid4().hex[:12]}"
    yield _POSTGRES, table
    with psycopg.connect(_POSTGRES, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {t}").format(t=sql.Identifier(table)))


@pytest.mark.postgres
async def test_a_run_recorded_in_postgresql_verifies_and_editing_the_table_is_found(
    pg_table: tuple[str, str],
) -> None:
    import psycopg
    from psycopg import sql

    from mcp_elicit.audit.postgres import PostgresAuditSink

    url, table = pg_table
    with PostgresAuditSink(url, table=table) as sink:
        outcomes = await run_reference("http", "legacy", sink)
        assert sink.verify().ok
        assert len(list(sink.iter_records())) == len(outcomes)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("UPDATE {t} SET body = replace(body, '\"accept\"', '\"decline\"') WHERE seq = 1").format(
                t=sql.Identifier(table)
            )
        )
        conn.execute(
            sql.SQL("UPDATE {t} SET action = 'decline' WHERE seq = 4").format(t=sql.Identifier(table))
        )
    with PostgresAuditSink(url, table=table, create=False) as sink:
        report = sink.verify()
    kinds = {(b.seq, b.kind) for b in report.breaks}
    assert (1, "hash_mismatch") in kinds  # the body was edited
    assert (4, "column_mismatch") in kinds  # an indexed column was edited


# -- URL mode: the record keeps host, registrable domain and the URL check's verdict ---------------


def raw_url_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("raw-url")

    @server.tool()
    async def sign_in(ctx: Context, url: str) -> str:
        return (await ctx.session.elicit_url("Sign in to continue", url, "e-1")).action

    return server


async def test_url_requests_are_recorded_with_host_domain_and_verdict_never_the_query_U9() -> None:
    from mcp_elicit.client.url import UrlMode

    async def never_opened(url: str) -> None:
        raise AssertionError(f"nothing is opened on a decline: {url}")

    ui = ScriptedUI([{"match": {"mode": "url"}, "action": "decline", "repeat": True}])
    sink = MemoryAuditSink()
    urls = ["https://accounts.example.co.uk/connect?state=s3cr3t", "https://paypa1.com/login"]
    with anyio.fail_after(BOUND_SECONDS):
        async with client(
            raw_url_server(), ui, "legacy", url_mode=UrlMode(opener=never_opened), audit=sink
        ) as c:
            for url in urls:
                await c.call_tool("sign_in", {"url": url})
    assert [(r["mode"], r["url"]) for r in sink.records] == [
        ("url", {"host": "accounts.example.co.uk", "domain": "example.co.uk", "verdict": "ok"}),
        ("url", {"host": "paypa1.com", "domain": "paypa1.com", "verdict": "block"}),
    ]
    assert "s3cr3t" not in repr(sink.records)
    assert sink.verify().ok

"""`mcp-elicit serve-data` from the command line, driven by `mcp-elicit call` as a new user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_elicit.audit import SqliteAuditSink
from tests.apps.data.conftest import Target
from tests.apps.data.stories import PII, WRITES, query_records

CALL_BOUND_SECONDS = 60


def call(
    target: Target, tmp_path: Path, sql: str, answers: list[dict[str, object]] | None
) -> dict[str, object]:
    server = [
        sys.executable,
        "-m",
        "mcp_elicit",
        "serve-data",
        "--engine",
        target.engine,
        "--dsn",
        target.dsn,
    ]
    server += ["--catalog", target.catalog_toml, "--audit-db", str(tmp_path / "server-audit.sqlite3")]
    args = [sys.executable, "-m", "mcp_elicit", "call", "--server", " ".join(_quote(a) for a in server)]
    args += ["--tool", "query", "--args", json.dumps({"sql": sql}), "--json", "--no-audit"]
    if answers is not None:
        script = tmp_path / "answers.json"
        script.write_text(json.dumps({"steps": answers}))
        args += ["--answers", str(script)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=CALL_BOUND_SECONDS, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert isinstance(report, dict)
    return report


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def _payload(report: dict[str, object]) -> dict[str, object]:
    result = report["result"]
    assert isinstance(result, dict)
    return json.loads(result["content"][0]["text"])  # type: ignore[no-any-return]


def test_serve_data_runs_masked_on_the_scripted_choice(target: Target, tmp_path: Path) -> None:
    report = call(target, tmp_path, PII, [{"action": "accept", "content": {"decision": "run_masked"}}])
    out = _payload(report)
    assert (out["status"], out["category"]) == ("ran", "user_accepted_masked")
    assert [e["action"] for e in report["elicitations"]] == ["accept"]  # type: ignore[union-attr, index]
    sink = SqliteAuditSink(tmp_path / "server-audit.sqlite3", readonly=True)
    try:
        records = query_records(list(sink.iter_records()))
        assert [r["reason"] for r in records] == ["user_accepted_masked"]
        assert sink.verify().ok
    finally:
        sink.close()


def test_serve_data_without_answers_or_terminal_cancels_and_nothing_runs(
    target: Target, tmp_path: Path
) -> None:
    out = _payload(call(target, tmp_path, PII, None))
    assert (out["status"], out["outcome"]) == ("not_run", "cancelled")


def test_serve_data_refuses_a_write(target: Target, tmp_path: Path) -> None:
    report = call(target, tmp_path, WRITES[0], None)
    assert report["result"]["isError"] is True  # type: ignore[index]
    assert _payload(report)["reason"] == "not_read_only"


@pytest.mark.anyio
async def test_serve_data_with_no_arguments_creates_and_serves_the_sample(tmp_path: Path) -> None:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    from tests.apps.data.stories import payload

    sample = tmp_path / "fresh" / "sample.duckdb"
    env = {"MCP_ELICIT_DATA_SAMPLE": str(sample), "HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_elicit", "serve-data"], env=env)
    async with Client(params, mode="legacy") as c:
        listed = payload(await c.call_tool("list_tables", {}))
    assert [t["table"] for t in listed["tables"]] == ["main.customers", "main.events", "main.orders"]
    assert sample.exists()
    assert (tmp_path / "fresh" / "data-server-audit.sqlite3").exists()


def test_call_shows_the_server_command_without_the_password_in_its_dsn(postgres_dsn: tuple[str, str]) -> None:
    dsn, _ = postgres_dsn
    secret = dsn.replace("://postgres@", "://postgres:s3cret-pw@")  # trust: the password goes unused
    assert "s3cret-pw" in secret
    server = f"{sys.executable} -m mcp_elicit serve-data --engine postgres --dsn {_quote(secret)} --no-audit"
    args = [
        sys.executable,
        "-m",
        "mcp_elicit",
        "call",
        "--server",
        server,
        "--tool",
        "list_tables",
        "--no-audit",
    ]
    done = subprocess.run(args, capture_output=True, text=True, timeout=CALL_BOUND_SECONDS, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("server: mcp-elicit-data")
    assert "s3cret-pw" not in done.stdout + done.stderr

"""What is recorded about where a server runs keeps no credentials (same rules as forms)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.core.consent import ConsentEvent, ServerIdentity, make_record
from mcp_elicit.core.redact import REDACTED, redact_where

SECRET = "sk-live-0123456789"


@pytest.mark.parametrize(
    "where",
    [
        f"uvx deployer --api-key={SECRET} --port 80",
        f"uvx deployer --api-key {SECRET}",
        f"uvx deployer -token {SECRET}",
        f"OPENAI_API_KEY={SECRET} node server.js",
        f"https://api.example.com/mcp?access_token={SECRET}&region=eu",
        f"https://api.example.com/mcp#access_token={SECRET}",
        f"https://ada:{SECRET}@api.example.com/mcp",
        f"npx mcp-remote 'https://api.example.com/mcp?api_key={SECRET}'",
        f"python -m srv --password '{SECRET} with spaces'",
    ],
)
def test_credentials_in_a_command_line_or_url_are_redacted(where: str) -> None:
    redacted = redact_where(where)
    assert SECRET not in redacted
    assert REDACTED in redacted


@pytest.mark.parametrize(
    "where",
    ["uvx deployer-mcp --port 8080 -v", "https://api.example.com/mcp?region=eu", "in-process demo", ""],
)
def test_a_location_without_credentials_is_kept_as_is(where: str) -> None:
    assert redact_where(where) == where


def test_the_consent_record_stores_the_redacted_location_at_every_level() -> None:
    event = ConsentEvent(
        time=0.0,
        side="client",
        mode="form",
        action="accept",
        decided_by="person",
        server=ServerIdentity("s", "1", f"uvx s --api-key={SECRET}"),
        record_id="r1",
    )
    for level in ("metadata", "request", "request_response"):
        record = make_record(event, level, "0" * 64)  # type: ignore[arg-type]
        assert record is not None
        assert SECRET not in record["server"]["where"]


@given(st.text(max_size=60))
def test_redaction_never_fails_and_never_grows_a_secret(where: str) -> None:
    out = redact_where(where)
    assert isinstance(out, str)
    assert SECRET not in out or SECRET in where

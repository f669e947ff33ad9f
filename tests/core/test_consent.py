"""The consent record (C4, U9): redaction levels, never a sensitive value, and the hash chain."""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_elicit.core.chain import verify_chain
from mcp_elicit.core.consent import (
    GENESIS_HASH,
    CallRef,
    ClientIdentity,
    ConsentEvent,
    ServerIdentity,
    canonical_json,
    format_time,
    make_record,
    make_sealed_record,
    record_hash,
    time_bound,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "target": {"type": "string", "title": "Target", "default": "staging"},
        "replicas": {"type": "integer"},
        "api_key": {"type": "string", "default": "sk-live-123"},
        "token": {"type": "string"},
    },
    "required": ["target"],
}


def event(**changes: Any) -> ConsentEvent:
    base: dict[str, Any] = {
        "time": 1_800_000_000.25,
        "side": "client",
        "mode": "form",
        "action": "accept",
        "decided_by": "person",
        "server": ServerIdentity("deployer", "1.2.0", "uvx deployer-mcp"),
        "client": ClientIdentity("mcp-elicit", "0.1.0"),
        "protocol_revision": "2025-11-25",
        "person": "user-42",
        "message": "Where should this go? Señor",
        "requested_schema": SCHEMA,
        "reason": "",
        "latency_ms": 1234.6,
        "call": CallRef("tools/call", 17, "deploy"),
        "content": {
            "target": "prod",
            "replicas": 3,
            "api_key": "sk-live-999",
            "token": "t0k3n",
            "extra": "x",
        },
        "record_id": "rec-1",
    }
    base.update(changes)
    return ConsentEvent(**base)


def chain(n: int) -> list[dict[str, Any]]:
    records, prev = [], GENESIS_HASH
    for i in range(n):
        record = make_record(
            event(record_id=f"rec-{i + 1}", time=1_800_000_000.0 + i), "metadata", prev, seq=i + 1
        )
        assert record is not None
        records.append(record)
        prev = record["hash"]
    return records


# -- levels ---------------------------------------------------------------------------------------


def test_level_none_records_nothing() -> None:
    assert make_record(event(), "none", GENESIS_HASH) is None


def test_metadata_keeps_who_what_when_and_the_outcome_but_no_text_or_values() -> None:
    record = make_record(event(), "metadata", GENESIS_HASH)
    assert record is not None
    assert record["time"] == "2027-01-15T08:00:00.250000Z"
    assert record["server"] == {"name": "deployer", "version": "1.2.0", "where": "uvx deployer-mcp"}
    assert record["client"] == {"name": "mcp-elicit", "version": "0.1.0"}
    assert (record["side"], record["mode"], record["protocol"]) == ("client", "form", "2025-11-25")
    assert record["call"] == {"method": "tools/call", "request_id": 17, "name": "deploy"}
    assert (record["action"], record["decided_by"], record["latency_ms"]) == ("accept", "person", 1235)
    assert record["message_sha256"] == hashlib.sha256("Where should this go? Señor".encode()).hexdigest()
    assert record["fields"] == [
        {"name": "target", "type": "string", "sensitive": "ok"},
        {"name": "replicas", "type": "integer", "sensitive": "ok"},
        {"name": "api_key", "type": "string", "sensitive": "block"},
        {"name": "token", "type": "string", "sensitive": "warn"},
    ]
    text = json.dumps(record)
    for leaked in ("Where should", "prod", "sk-live", "t0k3n", "staging"):
        assert leaked not in text
    assert not {"message", "schema", "content"} & record.keys()


def test_request_adds_the_message_and_schema_with_sensitive_defaults_redacted() -> None:
    record = make_record(event(), "request", GENESIS_HASH)
    assert record is not None
    assert record["message"] == "Where should this go? Señor"
    properties = record["schema"]["properties"]
    assert properties["target"]["default"] == "staging"
    assert properties["api_key"]["default"] == "<redacted>"
    assert "content" not in record
    assert "sk-live" not in json.dumps(record)


def test_request_response_adds_values_except_sensitive_and_unknown_fields() -> None:
    record = make_record(event(), "request_response", GENESIS_HASH)
    assert record is not None
    assert record["content"] == {"target": "prod", "replicas": 3}
    assert record["redacted"] == ["api_key", "extra", "token"]
    text = json.dumps(record)
    assert "sk-live-999" not in text
    assert "t0k3n" not in text


def test_url_mode_metadata_keeps_host_domain_and_verdict_but_not_the_path() -> None:
    url = "https://login.example.co.uk/connect?state=SECRET"
    e = event(
        mode="url", requested_schema=None, content=None, url=url, url_domain="example.co.uk", url_verdict="ok"
    )
    record = make_record(e, "metadata", GENESIS_HASH)
    assert record is not None
    assert record["url"] == {"host": "login.example.co.uk", "domain": "example.co.uk", "verdict": "ok"}
    assert record["fields"] == []
    assert "SECRET" not in json.dumps(record)
    full = make_record(e, "request", GENESIS_HASH)
    assert full is not None
    assert full["url"]["full"] == url


def test_an_unparseable_url_records_an_empty_host() -> None:
    record = make_record(
        event(mode="url", url="http://[::1", requested_schema=None), "metadata", GENESIS_HASH
    )
    assert record is not None
    assert record["url"]["host"] == ""


def test_a_long_message_is_cut_and_marked_at_the_request_level() -> None:
    record = make_record(event(message="x" * 20_000), "request", GENESIS_HASH)
    assert record is not None
    assert len(record["message"]) == 16_000
    assert record["message_truncated"] is True


def test_an_unknown_level_or_a_missing_id_is_the_callers_bug() -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - a caller bug, no evidence fields
        make_record(event(), "everything", GENESIS_HASH)  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # noqa: PT011 - a caller bug, no evidence fields
        make_record(event(record_id=""), "metadata", GENESIS_HASH)


# -- hashing --------------------------------------------------------------------------------------


def test_canonical_json_sorts_keys_drops_whitespace_and_keeps_utf8() -> None:
    assert canonical_json({"b": 1, "a": ["é", None]}) == '{"a":["é",null],"b":1}'.encode()


def test_a_precomputed_form_verdict_is_used_as_given() -> None:
    from mcp_elicit.core.sensitive import FieldVerdict, FormVerdict

    verdict = FormVerdict("block", (FieldVerdict("target", "block", ("password",)),))
    record = make_record(event(form_verdict=verdict), "request_response", GENESIS_HASH)
    assert record is not None
    assert record["fields"][0] == {"name": "target", "type": "string", "sensitive": "block"}
    assert "target" not in record["content"]


def test_the_hash_covers_everything_but_itself() -> None:
    record = make_record(event(), "metadata", GENESIS_HASH)
    assert record is not None
    body = {k: v for k, v in record.items() if k != "hash"}
    assert record["hash"] == hashlib.sha256(canonical_json(body)).hexdigest() == record_hash(record)
    assert record["prev_hash"] == "0" * 64


# -- verification ------------------------------------------------------------------------------


def test_an_intact_chain_verifies_and_reports_its_head() -> None:
    records = chain(5)
    report = verify_chain(records)
    assert report.ok
    assert report.count == 5
    assert report.head_hash == records[-1]["hash"]
    assert verify_chain(records, expected_head=records[-1]["hash"]).ok


def test_an_empty_chain_is_intact_with_the_genesis_head() -> None:
    report = verify_chain([])
    assert report.ok
    assert report.count == 0
    assert report.head_hash == GENESIS_HASH


def test_an_edited_record_is_one_hash_mismatch_at_its_index() -> None:
    records = chain(5)
    records[2]["action"] = "decline"
    report = verify_chain(records)
    assert [(b.index, b.record_id, b.seq, b.kind) for b in report.breaks] == [
        (2, "rec-3", 3, "hash_mismatch")
    ]


def test_an_edit_with_a_recomputed_hash_breaks_the_next_link() -> None:
    records = chain(5)
    records[2]["action"] = "decline"
    records[2]["hash"] = record_hash(records[2])
    report = verify_chain(records)
    assert [(b.index, b.kind) for b in report.breaks] == [(3, "broken_link")]


def test_a_deleted_record_is_reported_at_the_record_after_the_gap() -> None:
    records = chain(5)
    del records[2]
    report = verify_chain(records)
    assert [(b.index, b.seq, b.kind) for b in report.breaks] == [(2, 4, "deleted")]
    assert "3..3" in report.breaks[0].detail


def test_deleting_the_first_record_is_caught_too() -> None:
    report = verify_chain(chain(3)[1:])
    assert [(b.index, b.kind) for b in report.breaks] == [(0, "deleted")]


def test_an_inserted_record_is_reported_where_it_sits() -> None:
    records = chain(4)
    forged = copy.deepcopy(records[1])
    forged["id"] = "forged"
    forged["hash"] = record_hash(forged)
    records.insert(2, forged)
    kinds = [(b.index, b.kind) for b in verify_chain(records).breaks]
    assert (2, "inserted") in kinds


def test_a_repeated_record_id_is_reported() -> None:
    records = chain(3)
    records.append(copy.deepcopy(records[-1]))
    kinds = {b.kind for b in verify_chain(records).breaks}
    assert "duplicate_id" in kinds
    assert "inserted" in kinds


def test_a_cut_off_tail_needs_the_expected_head_to_be_seen() -> None:
    records = chain(5)
    head = records[-1]["hash"]
    assert verify_chain(records[:-1]).ok  # the limit of any hash chain on its own
    report = verify_chain(records[:-1], expected_head=head)
    assert [b.kind for b in report.breaks] == ["head_mismatch"]


@pytest.mark.parametrize(
    "junk", ["not a record", None, 3, {"seq": "1", "id": "x", "prev_hash": "", "hash": ""}, {}]
)
def test_junk_in_the_chain_is_malformed_and_the_walk_goes_on(junk: Any) -> None:
    records: list[Any] = chain(3)
    records.insert(1, junk)
    report = verify_chain(records)
    assert [(b.index, b.kind) for b in report.breaks] == [(1, "malformed")]


def test_a_record_that_cannot_be_encoded_is_malformed() -> None:
    records = chain(2)
    records[1]["reason"] = float("nan")
    assert [b.kind for b in verify_chain(records).breaks] == ["malformed"]


# -- time ------------------------------------------------------------------------------------------


def test_times_are_fixed_width_utc_and_bounds_accept_several_forms() -> None:
    assert format_time(0) == "1970-01-01T00:00:00.000000Z"
    assert time_bound("2027-01-15") == "2027-01-15T00:00:00.000000Z"
    assert time_bound("2027-01-15T10:00:00+02:00") == "2027-01-15T08:00:00.000000Z"
    assert time_bound(datetime(2027, 1, 15, 8, tzinfo=UTC)) == "2027-01-15T08:00:00.000000Z"
    assert time_bound(1_800_000_000.25) == "2027-01-15T08:00:00.250000Z"
    with pytest.raises(ValueError):  # noqa: PT011 - datetime.fromisoformat's own error
        time_bound("yesterday")


# -- properties ----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(
    message=st.text(max_size=60),
    schema=st.one_of(st.none(), st.dictionaries(st.text(max_size=8), json_values, max_size=4)),
    content=st.one_of(st.none(), st.dictionaries(st.text(max_size=8), json_values, max_size=4)),
    name=st.text(max_size=20),
    level=st.sampled_from(["metadata", "request", "request_response"]),
)
def test_any_event_makes_a_record_that_verifies(
    message: str, schema: dict[str, Any] | None, content: dict[str, Any] | None, name: str, level: Any
) -> None:
    e = event(message=message, requested_schema=schema, content=content, server=ServerIdentity(name, "", ""))
    sealed = make_sealed_record(e, level, GENESIS_HASH)
    assert sealed is not None
    record, body = sealed
    assert body == canonical_json(record).decode("utf-8")  # the one-pass encoding is the canonical one
    assert record["hash"] == record_hash(record)
    assert verify_chain([json.loads(body)]).ok


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 4), st.sampled_from(["action", "time", "person", "message_sha256", "seq", "prev_hash"]))
def test_changing_any_one_value_of_any_record_is_detected(index: int, key: str) -> None:
    records = chain(5)
    value = records[index][key]
    records[index][key] = value + 1 if isinstance(value, int) else value + "x"
    assert not verify_chain(records).ok

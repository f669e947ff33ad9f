"""A record journaled unchained and sealed later is exactly the record sealed at once."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_elicit.audit.base import row_of
from mcp_elicit.core.chain import verify_chain
from mcp_elicit.core.consent import (
    GENESIS_HASH,
    CallRef,
    ServerIdentity,
    format_time,
    make_sealed_record,
)
from mcp_elicit.core.unchained import make_unchained_record, seal_unchained, unchained_id

from .test_consent import event

# Keys that name the record's own keys, so a nested object could be mistaken for the record.
TRICKY_KEYS = ["protocol", "server", "id", "hash", "seq", "prev_hash", "fields", "v", ',"server":']
keys = st.sampled_from(TRICKY_KEYS) | st.text(max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(keys, children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    message=st.text(max_size=40),
    schema=st.one_of(st.none(), st.dictionaries(keys, json_values, max_size=4)),
    content=st.one_of(st.none(), st.dictionaries(keys, json_values, max_size=4)),
    details=st.one_of(st.none(), st.dictionaries(keys, json_values, max_size=3)),
    name=st.text(max_size=12) | st.just("lone \ud800 surrogate") | st.just("100%d %%"),
    person=st.text(max_size=12) | st.just("\udfff"),
    url=st.one_of(st.none(), st.just('https://example.com/a?"server":{"name":1}')),
    mode=st.sampled_from(["form", "url", "none"]),
    request_id=st.none() | st.integers() | st.text(max_size=8) | json_values | st.just("%d"),
    has_call=st.booleans(),
    latency=st.floats(),
    when=st.floats(0, 4_102_444_800),
    reason=st.text(max_size=12) | st.just("50% off %s %%b"),
    level=st.sampled_from(["metadata", "metadata", "request", "request_response"]),
    seq=st.integers(1, 10**12),
)
def test_a_line_sealed_later_is_the_record_sealed_at_once(
    message: str,
    schema: dict[str, Any] | None,
    content: dict[str, Any] | None,
    details: dict[str, Any] | None,
    name: str,
    person: str,
    url: str | None,
    mode: str,
    request_id: Any,
    has_call: bool,
    latency: float,
    when: float,
    reason: str,
    level: Any,
    seq: int,
) -> None:
    e = event(
        message=message,
        requested_schema=schema,
        content=content,
        details=details,
        server=ServerIdentity(name, "2.0", f"uvx {name} --token=abc"),
        person=person,
        url=url,
        mode=mode,
        call=CallRef("tools/call", request_id, "deploy") if has_call else None,
        latency_ms=latency,
        time=when,
        reason=reason,
    )
    prev = "ab" * 32
    line = make_unchained_record(e, level, "r1")
    assert line is not None
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1  # one record, one line
    assert unchained_id(line) == "r1"
    assert make_unchained_record(e, level, "r1") == line  # again, from what was remembered
    direct = make_sealed_record(e, level, prev, seq=seq, record_id="r1")
    assert direct is not None
    sealed = seal_unchained(line, seq, prev)
    assert sealed is not None
    values, text = sealed
    assert text == direct[1]
    assert row_of(values, text) == row_of(direct[0], direct[1])


def test_the_first_record_of_a_trail_sealed_from_a_line_verifies() -> None:
    line = make_unchained_record(event(), "metadata", "r1")
    assert line is not None
    sealed = seal_unchained(line, 1, GENESIS_HASH)
    assert sealed is not None
    assert verify_chain([json.loads(sealed[1])]).ok


def test_level_none_journals_nothing() -> None:
    assert make_unchained_record(event(), "none", "r1") is None


@given(st.binary(max_size=200))
def test_a_line_that_is_not_a_journaled_record_never_seals(junk: bytes) -> None:
    assert seal_unchained(junk, 1, GENESIS_HASH) is None


def test_a_line_whose_offsets_were_moved_does_not_seal() -> None:
    line = make_unchained_record(event(), "metadata", "r1")
    assert line is not None
    head, at_protocol, at_server, body = line.split(b" ", 3)
    for moved in (
        b" ".join((str(int(head) + 1).encode(), at_protocol, at_server, body)),
        b" ".join((head, str(int(at_protocol) - 2).encode(), at_server, body)),
        b" ".join((head, at_protocol, str(int(at_server) + 3).encode(), body)),
    ):
        assert seal_unchained(moved, 1, GENESIS_HASH) is None


@settings(max_examples=500, deadline=None)
@given(
    st.floats(0, 253_402_300_799.0)
    | st.integers(0, 253_402_300_799).map(float)
    | st.sampled_from([0.9999995, 1.0000005, 1_800_000_000.9999996, 0.0000005, 2.5e-7])
)
def test_times_are_formatted_as_datetime_formats_them(ts: float) -> None:
    expected = datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="microseconds")[:-6] + "Z"
    assert format_time(ts) == expected

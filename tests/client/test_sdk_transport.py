"""The HTTP event-stream guard: bad requests become answerable stand-ins, everything else passes untouched."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.client.sdk import MALFORMED_METHOD
from mcp_elicit.client.sdk_transport import rewrite_event


def event(payload: object, extra: bytes = b"event: message\nid: 7") -> bytes:
    return extra + b"\ndata: " + json.dumps(payload).encode()


def data_of(raw: bytes) -> dict[str, object]:
    line = next(x for x in raw.split(b"\n") if x.startswith(b"data:"))
    parsed: dict[str, object] = json.loads(line[5:])
    return parsed


def test_a_request_whose_params_is_a_string_becomes_a_stand_in_with_the_same_id() -> None:
    bad = {"jsonrpc": "2.0", "id": "bad-1", "method": "elicitation/create", "params": "x"}
    out = rewrite_event(event(bad))
    assert data_of(out) == {
        "jsonrpc": "2.0",
        "id": "bad-1",
        "method": MALFORMED_METHOD,
        "params": {"method": "elicitation/create", "paramsIsObject": False},
    }
    assert out.startswith(b"event: message\nid: 7\n")


def test_a_request_whose_method_is_not_a_string_keeps_its_id() -> None:
    out = rewrite_event(event({"jsonrpc": "2.0", "id": 3, "method": 5, "params": {}}))
    assert data_of(out)["id"] == 3
    assert data_of(out)["params"] == {"method": None, "paramsIsObject": True}


def test_valid_messages_and_non_requests_pass_byte_for_byte() -> None:
    valid = event({"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {"message": "m"}})
    response = event({"jsonrpc": "2.0", "id": 1, "result": {}})
    garbage = b"data: {not json"
    priming = b"id: 0\ndata:"
    for raw in (valid, response, garbage, priming):
        assert rewrite_event(raw) == raw


@given(st.binary(max_size=300))
def test_rewriting_never_raises_and_leaves_non_request_bytes_alone(raw: bytes) -> None:
    out = rewrite_event(raw)
    if MALFORMED_METHOD.encode() not in out:
        assert out == raw

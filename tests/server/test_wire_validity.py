"""Everything the server kit puts on the wire is valid for the revision it speaks (official JSON schemas)."""

from __future__ import annotations

from typing import Any

import mcp_types as t
import pytest
from mcp.client import Client

from mcp_elicit.reference import build_reference_server
from tests.support import ScriptedCallback
from tests.wire import require_spec, validate_wire

pytestmark = pytest.mark.anyio

ANSWERS = [
    {"action": "accept", "content": {"username": "ada", "email": "ada@example.org"}},
    {"action": "accept", "content": {"newsletter": True, "topics": ["events"]}},
    {"action": "accept", "content": {"confirm": True}},
]


async def test_pushed_requests_are_valid_2025_11_25_elicit_requests() -> None:
    require_spec()
    cb = ScriptedCallback(list(ANSWERS))
    async with Client(build_reference_server(), mode="legacy", elicitation_callback=cb) as c:
        await c.call_tool("signup", {})
        await c.call_tool("test_elicitation_sep1330_enums", {})
    assert len(cb.seen) == 4
    for params in cb.seen:
        validate_wire("2025-11-25", "ElicitRequestParams", params)


async def test_every_round_is_a_valid_2026_07_28_input_required_result() -> None:
    require_spec()
    results: list[dict[str, Any]] = []
    async with Client(
        build_reference_server(), mode="2026-07-28", elicitation_callback=ScriptedCallback([])
    ) as c:
        state: str | None = None
        responses: dict[str, Any] | None = None
        for answer in ANSWERS:
            result = await c.session.call_tool(
                "signup", {}, input_responses=responses, request_state=state, allow_input_required=True
            )
            assert isinstance(result, t.InputRequiredResult)
            wire = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            results.append(wire)
            assert result.input_requests is not None
            (key,) = result.input_requests
            state, responses = result.request_state, {key: t.ElicitResult.model_validate(answer)}
    for wire in results:
        validate_wire("2026-07-28", "InputRequiredResult", wire)
        for request in wire["inputRequests"].values():
            assert set(request) == {"method", "params"}  # M1: no id, no jsonrpc

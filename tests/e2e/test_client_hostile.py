"""The client kit against a hostile server (tests/client/hostile_server.py), both eras, over stdio.

Every hostile request gets the right answer (an error reply with -32602, or a refusal that ends a
2026-07-28 call), the client never crashes or hangs (every wait is bounded), and the UI never
receives a raw escape sequence, control or bidi character from the server (C1, F1, F2, F8, C3, C4).
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_elicit.client import ElicitClient, Pipeline
from mcp_elicit.client.ui_protocol import FormPrompt
from mcp_elicit.ui.scripted import ScriptedUI
from tests.support import text_of

pytestmark = pytest.mark.anyio

HOSTILE = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).resolve().parents[1] / "client" / "hostile_server.py")]
)
BOUND_SECONDS = 60.0

# What must never reach a UI: C0 controls but \n, DEL, C1, bidi controls, zero-width characters.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b-\u200f\u061c]")


def strings(value: Any) -> Iterator[str]:
    """Every string inside a prompt: dataclass fields, mapping keys and values, sequences."""
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from strings(getattr(value, f.name))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def assert_nothing_raw_reached(ui: ScriptedUI) -> None:
    found = [s for s in strings([ui.seen, ui.notices]) if RAW.search(s)]
    assert found == []


async def legacy(tool: str, ui: ScriptedUI | None = None) -> tuple[dict[str, Any], ScriptedUI, ElicitClient]:
    ui = ui or ScriptedUI.accept_defaults()
    with anyio.fail_after(BOUND_SECONDS):
        async with ElicitClient(HOSTILE, ui=ui, protocol="legacy") as client:
            result = await client.call_tool(tool)
    return json.loads(text_of(result)), ui, client


async def test_an_undeclared_url_request_is_answered_with_invalid_params_and_never_shown_C1() -> None:
    replies, ui, client = await legacy("undeclared_url")
    assert replies["url"]["error"]["code"] == -32602
    assert ui.seen == []
    assert [(o.mode, o.action, o.decided_by, o.reason) for o in client.outcomes] == [
        ("url", "error", "gate", "undeclared_mode")
    ]


async def test_an_unknown_mode_is_answered_with_invalid_params() -> None:
    replies, ui, _ = await legacy("unknown_mode")
    assert replies["mode"]["error"]["code"] == -32602
    assert ui.seen == []


async def test_nested_oversized_and_hidden_schemas_are_refused_naming_the_field_F1_F2() -> None:
    replies, ui, client = await legacy("bad_schemas")
    assert set(replies) == {
        "nested",
        "ref",
        "objects",
        "fields",
        "options",
        "title",
        "hidden_value",
        "no_schema",
    }
    assert {r["error"]["code"] for r in replies.values()} == {-32602}
    assert "'address'" in replies["nested"]["error"]["message"]
    assert "'a'" in replies["ref"]["error"]["message"]
    assert ui.seen == []
    assert {o.reason for o in client.outcomes} == {"schema"}


async def test_wrong_types_in_params_are_answered_with_invalid_params() -> None:
    replies, ui, _ = await legacy("wrong_types")
    assert len(replies) == 6
    assert {r["error"]["code"] for r in replies.values()} == {-32602}
    assert ui.seen == []


async def test_requests_whose_params_are_not_an_object_still_get_an_error_reply() -> None:
    # The SDK's transport drops these today (the server would wait forever); the guard answers.
    replies, ui, client = await legacy("params_not_object")
    assert set(replies) == {"list", "string", "number", "true", "null"}
    assert {r["error"]["code"] for r in replies.values()} == {-32602}
    assert ui.seen == []
    assert {o.reason for o in client.outcomes} == {"params_not_object"}


async def test_escape_sequences_and_bidi_tricks_never_reach_the_ui_F8() -> None:
    replies, ui, client = await legacy("escapes")
    assert replies["form"] == {
        "result": {
            "action": "accept",
            "content": {"name": "Ada", "plan": "free", "size": "m", "topics": ["a"], "age": 30, "ok": True},
        }
    }
    assert_nothing_raw_reached(ui)
    prompt = ui.seen[0]
    assert isinstance(prompt, FormPrompt)
    # The escape sequence was removed without a trace, so the name says it was cleaned.
    assert prompt.requester.name == "bankclick⟨U+202E⟩evil⟨U+202C⟩⟨U+0007⟩⟨U+200B⟩ [name cleaned]"
    assert "note" not in prompt.values  # its default carried an escape sequence: not pre-filled
    assert prompt.warnings
    assert client.outcomes[0].server.name == prompt.requester.name


async def test_a_megabyte_message_is_cut_for_display() -> None:
    replies, ui, _ = await legacy("huge_message")
    assert replies["big"]["result"]["action"] == "accept"
    assert isinstance(ui.seen[0], FormPrompt)
    assert len(ui.seen[0].message) == 4_000


async def test_a_flood_of_questions_is_answered_one_by_one_and_the_overflow_cancelled_C4() -> None:
    replies, ui, client = await legacy("flood")
    assert len(replies) == 100
    actions = [r["result"]["action"] for r in replies.values()]
    assert set(actions) <= {"accept", "cancel"}
    assert "accept" in actions
    cancelled = [o for o in client.outcomes if o.action == "cancel"]
    assert all((o.decided_by, o.reason) == ("rate_limit", "queue_full") for o in cancelled)
    assert len(ui.seen) == actions.count("accept")


async def test_a_flood_of_malformed_requests_gets_an_error_reply_each() -> None:
    replies, _, _ = await legacy("flood_garbage")
    assert len(replies) == 300
    assert {r["error"]["code"] for r in replies.values()} == {-32602}


@pytest.mark.parametrize(
    ("modes", "declared"), [(("form",), {"form": {}}), (("form", "url"), {"form": {}, "url": {}})]
)
@pytest.mark.parametrize("protocol", ["legacy", "modern"])
async def test_the_client_declares_only_the_modes_its_pipeline_honours_C1_C2(
    protocol: str, modes: tuple[str, ...], declared: dict[str, Any]
) -> None:
    with anyio.fail_after(BOUND_SECONDS):
        async with ElicitClient(
            HOSTILE, pipeline=Pipeline(ScriptedUI(), modes=modes), protocol=protocol
        ) as client:
            result = await client.call_tool("capabilities")
    assert json.loads(text_of(result))["elicitation"] == declared


# -- 2026-07-28: the questions ride inside InputRequiredResult ----------------------------------------


async def modern(tool: str, ui: ScriptedUI | None = None) -> tuple[Any, ScriptedUI, ElicitClient]:
    ui = ui or ScriptedUI.accept_defaults()
    with anyio.fail_after(BOUND_SECONDS):
        async with ElicitClient(HOSTILE, ui=ui, protocol="modern") as client:
            try:
                result: Any = json.loads(text_of(await client.call_tool(tool)))
            except MCPError as err:
                result = err
    return result, ui, client


@pytest.mark.parametrize("tool", ["undeclared_url", "nested_schema", "hidden_value"])
async def test_a_refused_embedded_question_ends_the_call_with_invalid_params_and_is_never_shown(
    tool: str,
) -> None:
    # 2026-07-28 has no per-question error slot: the refusal ends the call on the client.
    result, ui, client = await modern(tool)
    assert isinstance(result, MCPError)
    assert result.error.code == -32602
    assert ui.seen == []
    assert [o.action for o in client.outcomes] == ["error"]
    assert client.outcomes[0].delivery == "embedded"


async def test_an_embedded_question_with_escapes_is_cleaned_and_answered() -> None:
    result, ui, client = await modern("escapes")
    assert result == {
        "e": {
            "action": "accept",
            "content": {"name": "Ada", "plan": "free", "size": "m", "topics": ["a"], "age": 30, "ok": True},
        }
    }
    assert_nothing_raw_reached(ui)
    assert client.outcomes[0].attribution == "exact"
    assert client.outcomes[0].purpose.target == "escapes"
    assert client.outcomes[0].server.name == "bankclick⟨U+202E⟩evil⟨U+202C⟩⟨U+0007⟩⟨U+200B⟩ [name cleaned]"


async def test_a_flood_of_embedded_questions_is_answered_without_hanging() -> None:
    result, ui, _ = await modern("flood")
    assert len(result) == 40
    assert {r["action"] for r in result.values()} <= {"accept", "cancel"}
    assert len(ui.seen) == [r["action"] for r in result.values()].count("accept")

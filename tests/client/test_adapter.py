"""The SDK adapter (client/sdk.py) and call attribution (CallRegistry): the seams with the SDK."""

from __future__ import annotations

import contextvars
import json
from typing import Any

import mcp_types as t
import pytest
from pydantic import ValidationError

from mcp_elicit.client import CallRegistry, ElicitationHandler, Pipeline, Refuse, Reply
from mcp_elicit.client.connection import ServerSpec, parse_server_spec
from mcp_elicit.client.sdk import _recover_request, capability, to_result
from mcp_elicit.client.ui_protocol import Purpose
from mcp_elicit.errors import ConfigError
from mcp_elicit.ui.scripted import ScriptedUI

pytestmark = pytest.mark.anyio


def validation_error(line: str) -> ValidationError:
    try:
        t.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as err:
        return err
    raise AssertionError("the line validated")


@pytest.mark.parametrize("params", [[1], "x", 3, True])
def test_a_request_with_non_object_params_is_recovered_from_the_validation_error(params: Any) -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": params})
    assert _recover_request(validation_error(line)) == {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "elicitation/create",
        "params": params,
    }


@pytest.mark.parametrize(
    "line",
    [
        "not json",
        json.dumps({"jsonrpc": "2.0", "method": "x", "params": [1]}),  # a notification: no reply
        json.dumps({"jsonrpc": "2.0", "id": True, "method": "x", "params": [1]}),  # no usable id
        json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "x", "params": [1]}),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": 5, "params": [1]}),
    ],
)
def test_nothing_is_recovered_from_what_cannot_be_answered(line: str) -> None:
    assert _recover_request(validation_error(line)) is None


def test_a_refusal_becomes_an_error_and_an_answer_a_result() -> None:
    assert to_result(Refuse("schema", "bad")) == t.ErrorData(code=-32602, message="bad")
    assert to_result(Reply("accept", "person", {"a": 1})) == t.ElicitResult(action="accept", content={"a": 1})
    assert to_result(Reply("decline", "person", {"a": 1})) == t.ElicitResult(action="decline")


def test_the_declared_capability_names_exactly_the_modes_C1() -> None:
    assert capability(frozenset({"form"})).model_dump(exclude_none=True) == {"form": {}}
    assert capability(frozenset({"form", "url"})).model_dump(exclude_none=True) == {"form": {}, "url": {}}


async def test_a_handler_built_on_a_ui_gets_the_default_pipeline() -> None:
    handler = ElicitationHandler(ScriptedUI())
    assert isinstance(handler.pipeline, Pipeline)
    e = handler.elicitation({"message": "m"})
    assert (e.protocol, e.requester.name, e.attribution) == ("2025-11-25", "", "none")


def test_a_call_in_its_own_context_is_attributed_exactly() -> None:
    calls = CallRegistry()
    with calls.track("tools/call", "deploy", {"service": "web"}):
        assert calls.attribute() == (Purpose("tools/call", "deploy", {"service": "web"}), "exact")
        context = contextvars.copy_context()
    assert calls.attribute(context) == (Purpose("tools/call", "deploy", {"service": "web"}), "exact")
    assert len(calls) == 0


def test_a_question_from_elsewhere_is_attributed_only_to_a_sole_call_in_flight() -> None:
    calls = CallRegistry()
    outside = contextvars.copy_context()
    with calls.track("tools/call", "a", None):
        assert calls.attribute(outside) == (Purpose("tools/call", "a", {}), "sole_call_in_flight")
        with calls.track("resources/read", "notes://b", None):
            assert calls.attribute(outside) == (Purpose(), "none")
    assert calls.attribute(outside) == (Purpose(), "none")


def test_another_connections_call_is_not_this_ones() -> None:
    mine, theirs = CallRegistry(), CallRegistry()
    with theirs.track("tools/call", "x", None):
        assert mine.attribute() == (Purpose(), "none")


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("http://127.0.0.1:8765/mcp", ServerSpec(url="http://127.0.0.1:8765/mcp")),
        ("https://mcp.example/mcp", ServerSpec(url="https://mcp.example/mcp")),
        ("python -m srv --name 'two words'", ServerSpec(argv=("python", "-m", "srv", "--name", "two words"))),
        ("srv; rm -rf /", ServerSpec(argv=("srv;", "rm", "-rf", "/"))),  # no shell: `;` is an argument
    ],
)
def test_a_server_spec_is_a_url_or_a_command_split_like_a_shell_never_run_by_one(
    spec: str, parsed: ServerSpec
) -> None:
    assert parse_server_spec(spec) == parsed


def test_an_empty_server_spec_is_refused() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_server_spec("  ")
    assert raised.value.key == "server"

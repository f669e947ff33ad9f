"""What the relay skips to stay cheap still holds: one check of the answer, cached names and wire.

The relay pushes the pipeline's already checked form as is (no second pass through the server
kit), so the pipeline alone checks the downstream's answer; offered names are worked out once per
listing; a form's wire request is built once per message, form and revision.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as t
import pytest
from mcp.client import Client

from mcp_elicit.core.forms import parse_schema
from mcp_elicit.errors import OutOfOrder
from mcp_elicit.gateway import Gateway, parse_config
from mcp_elicit.gateway.pool import Pool
from mcp_elicit.gateway.relay import _form_wire, _ui_result
from tests.gateway.support import PEERS

pytestmark = pytest.mark.anyio

CONFIG = json.dumps({"mcpServers": {"sdk": {"command": sys.executable, "args": [PEERS, "sdk"]}}})


class Tool:
    def __init__(self, name: str) -> None:
        self.name = name


async def test_an_invalid_downstream_answer_is_asked_again_and_then_cancelled_upstream() -> None:
    asked: list[str] = []

    async def wrong(ctx: Any, params: Any) -> t.ElicitResult:
        asked.append(params.message)
        return t.ElicitResult(action="accept", content={"name": 5})  # a number for a text field

    async with Gateway(parse_config(CONFIG)) as gw:
        await gw.pool_for("local")
        async with Client(gw.server, mode="legacy", elicitation_callback=wrong) as c:
            result = await c.call_tool("greet", {})
        for pool in gw.pools.values():
            pool.stop()
    said, upstream = [x.text for x in result.content]  # type: ignore[union-attr]
    assert upstream == "cancel"
    assert "(name)" in said  # the model learns which field did not fit, not a silent cancel
    assert len(asked) > 1  # asked again after the invalid answer, never accepted
    assert asked[0] == "Who are you?"
    assert all(again.startswith("Who are you?\n\n") for again in asked[1:])  # and why (test below)


def test_a_malformed_downstream_reply_is_a_cancel_and_only_an_accept_carries_content() -> None:
    assert _ui_result(None).action == "cancel"
    assert _ui_result({"action": "maybe"}).action == "cancel"
    assert _ui_result({"action": "decline", "content": {"a": 1}}).content is None
    assert _ui_result({"action": "accept", "content": "text"}).content is None
    accepted = _ui_result({"action": "accept", "content": {"a": 1}})
    assert (accepted.action, accepted.content) == ("accept", {"a": 1})


def test_a_relayed_form_is_built_once_per_message_form_and_revision() -> None:
    form = parse_schema({"type": "object", "properties": {"n": {"type": "string", "title": "N"}}})
    prompt: Any = type("P", (), {"message": "Name?", "form": form})()
    first = _form_wire(prompt, "2025-11-25")
    assert _form_wire(prompt, "2025-11-25") is first
    assert first["params"]["requestedSchema"] == form.to_wire("2025-11-25")
    assert _form_wire(prompt, "2026-07-28") is not first


def test_offered_names_follow_the_listings_when_an_upstream_joins_or_leaves() -> None:
    pool = Pool(parse_config(CONFIG), "local")
    pool.tools["a"] = [Tool("read")]
    assert set(pool.offered()) == {"read"}
    assert pool.offered() is pool.offered()  # worked out once while nothing changed
    pool.tools["b"] = [Tool("read")]
    assert set(pool.offered()) == {"a__read", "b__read"}
    del pool.tools["b"]
    assert set(pool.offered()) == {"read"}
    pool.tools["a"] = [Tool("write")]
    assert set(pool.offered()) == {"write"}


async def test_a_gateway_refuses_more_users_at_once_than_its_max_pools(tmp_path: Path) -> None:
    async with Gateway(parse_config(CONFIG), max_pools=0) as gw:
        with pytest.raises(OutOfOrder):
            await gw.pool_for("alice")


async def test_an_answer_that_fits_after_one_that_did_not_reaches_the_upstream_with_no_notice() -> None:
    """Found by a new user: the result began "The gateway could not relay a question: … did not fit
    the form", though the second answer fitted and the upstream used it."""
    answers = [{"name": 5}, {"name": "ann"}]  # a number for a text field, then a name

    async def second_fits(ctx: Any, params: Any) -> t.ElicitResult:
        return t.ElicitResult(action="accept", content=answers.pop(0))

    async with Gateway(parse_config(CONFIG)) as gw:
        await gw.pool_for("local")
        async with Client(gw.server, mode="legacy", elicitation_callback=second_fits) as c:
            result = await c.call_tool("greet", {})
        for pool in gw.pools.values():
            pool.stop()
    assert answers == []  # asked twice
    assert [x.text for x in result.content] == ["hello ann"]  # type: ignore[union-attr]


async def test_a_form_asked_again_after_an_answer_that_did_not_fit_says_which_field_and_why() -> None:
    """Found by a new user with mcpdo: the same form came back with nothing saying what was wrong."""
    asked: list[str] = []
    answers = [{"name": 5}, {"name": "ann"}]

    async def second_fits(ctx: Any, params: Any) -> t.ElicitResult:
        asked.append(params.message)
        return t.ElicitResult(action="accept", content=answers.pop(0))

    async with Gateway(parse_config(CONFIG)) as gw:
        await gw.pool_for("local")
        async with Client(gw.server, mode="legacy", elicitation_callback=second_fits) as c:
            await c.call_tool("greet", {})
        for pool in gw.pools.values():
            pool.stop()
    first, again = asked
    assert first == "Who are you?"
    assert again.startswith("Who are you?\n\n")
    assert "name: " in again.split("\n\n", 1)[1]  # the field, then why

"""Resource templates, and the questions of prompts and resource reads, through the gateway.

`resources/templates/list` offers the upstreams' templates (one per template: the first server
in key order wins a shared one, as for resources), and a read of a URI that fits a template
reaches the server that offers it. A read's or a prompt's question reaches the client in both
eras (pushed on 2025-11-25, a round of the held request on 2026-07-28).

Upstreams: the reference server (`notes://{topic}`, whose read asks who the note is for) and two
FastMCP servers offering the same `fm://greetings/{name}` (each says the label it was started
with), behind `mcp-elicit gateway --config f.json` over stdio, and an in-process gateway over HTTP.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import mcp_types as t
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from mcp_elicit.core.wire_codes import INVALID_PARAMS
from mcp_elicit.gateway import parse_config
from mcp_elicit.gateway.holds import Holds
from mcp_elicit.gateway.pool import Pool
from tests.gateway.support import PEERS, Answers, http_client, http_gateway, servers, stdio_gateway

pytestmark = pytest.mark.anyio


def templates_file(path: Path) -> Path:
    fm = {"command": sys.executable, "args": [PEERS, "fastmcp"]}
    found = {"ref": servers()["ref"], "fm": fm, "fm2": {**fm, "env": {"PEER_LABEL": "fm2"}}}
    path.write_text(json.dumps({"mcpServers": found}))
    return path


def text_of_read(result: t.ReadResourceResult) -> str:
    return "".join(getattr(c, "text", "") for c in result.contents)


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_the_upstreams_templates_are_listed_once_each_and_a_fitting_uri_reaches_the_first_server(
    tmp_path: Path, era: str
) -> None:
    """Also: an upstream's error for a prompt reaches the client as that error (held or not)."""
    gateway = stdio_gateway(templates_file(tmp_path / "f.json"))
    async with Client(gateway, mode=era) as c:
        listed = (await c.list_resource_templates()).resource_templates
        greeting = await c.read_resource("fm://greetings/ann")
        with pytest.raises(MCPError) as unknown:
            await c.read_resource("elsewhere://greetings/ann")
        with pytest.raises(MCPError) as refused:
            await c.get_prompt("fm__summary", {})  # its `topic` is required
    # What the FastMCP server itself answers, asked directly (its code changed between releases).
    direct = StdioServerParameters(command=sys.executable, args=[PEERS, "fastmcp"], env=dict(os.environ))
    async with Client(direct, mode=era) as c:
        with pytest.raises(MCPError) as upstream:
            await c.get_prompt("summary", {})
    assert sorted(x.uri_template for x in listed) == ["fm://greetings/{name}", "notes://{topic}"]
    assert text_of_read(greeting) == "greetings, ann, from fm"  # "fm" before "fm2" in key order
    assert unknown.value.error.code == INVALID_PARAMS
    assert refused.value.error.code == upstream.value.error.code  # FastMCP's own code, passed on
    assert upstream.value.error.message in refused.value.error.message


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_a_templated_reads_question_and_a_prompts_question_reach_the_client_in_both_eras(
    tmp_path: Path, era: str
) -> None:
    """2025-11-25: pushed on the client's request; 2026-07-28: a round of the held read (or
    prompt), which the client answers by retrying it."""
    answers = Answers({"name": "dee"})
    gateway = stdio_gateway(templates_file(tmp_path / "f.json"))
    async with Client(gateway, mode=era, elicitation_callback=answers) as c:
        note = await c.read_resource("notes://birds")
        prompt = await c.get_prompt("greeting", {})
    assert answers.messages == ["Who is the note on birds for?", "Who is reading?"]
    assert text_of_read(note) == "A note on birds, for dee."
    assert "dee" in prompt.messages[0].content.text  # type: ignore[union-attr]


async def test_over_http_the_templates_are_listed_and_a_templated_read_asks_the_client(
    tmp_path: Path,
) -> None:
    answers = Answers({"name": "eve"})
    async with (
        http_gateway(templates_file(tmp_path / "f.json").read_text()) as (_, url),
        http_client(url, None, "legacy", answers) as c,
    ):
        listed = (await c.list_resource_templates()).resource_templates
        note = await c.read_resource("notes://tea")
        greeting = await c.read_resource("fm://greetings/eve")
    assert sorted(x.uri_template for x in listed) == ["fm://greetings/{name}", "notes://{topic}"]
    assert (text_of_read(note), text_of_read(greeting)) == (
        "A note on tea, for eve.",
        "greetings, eve, from fm",
    )
    assert answers.messages == ["Who is the note on tea for?"]


async def test_a_state_handed_out_for_one_kind_of_request_does_not_answer_another() -> None:
    holds = Holds()
    hold = holds.new("ann")
    assert hold is not None
    hold.method = "prompts/get"
    state = holds.park(hold)
    assert holds.take(state, "ann", "tools/call") is None  # refused, and the hold stays
    assert holds.take(state, "bob", "prompts/get") is None
    assert holds.take(state, "ann", "prompts/get") is hold
    assert holds.take(state, "ann", "prompts/get") is None  # single use


def resource(uri: str) -> Any:
    return t.Resource(uri=uri, name=uri)


def template(uri_template: str) -> Any:
    return t.ResourceTemplate(uri_template=uri_template, name=uri_template)


def test_a_listed_resource_wins_over_an_earlier_servers_template_and_templates_go_by_key_order() -> None:
    config = parse_config(json.dumps({"mcpServers": {k: {"command": "x"} for k in ("a", "b", "c")}}))
    pool = Pool(config, "local")
    pool.resources = {"a": [], "b": [resource("notes://today")], "c": []}
    pool.templates = {"a": [template("notes://{topic}")], "b": [], "c": [template("notes://{topic}")]}
    assert pool.resource_server("notes://today") == "b"
    assert pool.resource_server("notes://birds") == "a"
    assert pool.resource_server("notes://birds/and/bees") is None

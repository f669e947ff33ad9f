"""The tools and prompt that the official conformance suite's elicitation scenarios call.

Names, keys, messages and schemas are the suite's (`@modelcontextprotocol/conformance`
0.2.0-alpha.12, scenarios `tools-call-elicitation`, `elicitation-sep1034-defaults`,
`elicitation-sep1330-enums` and `input-required-result-*`). They are written with the project's
public API only, so the suite exercises `ask`, `gather` and the round middleware as they ship.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

from mcp_elicit.core.forms import Field, Form, Option
from mcp_elicit.server import Question, RawRequest, ask, client_supports, gather

__all__ = ["add_conformance_tools"]

USER_INFO = Form(
    (
        Field.string("username", description="User's response"),
        Field.string("email", description="User's email address"),
    )
)
DEFAULTS = Form(
    (
        Field.string("name", required=False, description="User name", default="John Doe"),
        Field.integer("age", required=False, description="User age", default=30),
        Field.number("score", required=False, description="User score", default=95.5),
        Field.single_select(
            "status",
            ["active", "inactive", "pending"],
            required=False,
            description="User status",
            default="active",
        ),
        Field.boolean("verified", required=False, description="Verification status", default=True),
    )
)
ENUMS = Form(
    (
        Field.single_select(
            "untitledSingle",
            ["option1", "option2", "option3"],
            required=False,
            description="Select one option",
        ),
        Field.single_select(
            "titledSingle",
            [("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")],
            required=False,
            description="Select one option with titles",
        ),
        Field(
            "legacyEnum",
            "single_select",
            required=False,
            description="Select one option (legacy)",
            options=(
                Option("opt1", "Option One"),
                Option("opt2", "Option Two"),
                Option("opt3", "Option Three"),
            ),
            titled=True,
            legacy_enum_names=True,
        ),
        Field.multi_select(
            "untitledMulti",
            ["option1", "option2", "option3"],
            required=False,
            description="Select multiple options",
            min_items=1,
            max_items=3,
        ),
        Field.multi_select(
            "titledMulti",
            [("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")],
            required=False,
            description="Select multiple options with titles",
            min_items=1,
            max_items=3,
        ),
    )
)
NAME = Form((Field.string("name"),))
COLOR = Form((Field.string("color"),))
OK = Form((Field.boolean("ok"),))
CONTEXT = Form((Field.string("context"),))
VALUE = Form((Field.string("value"),))


def _sampling(text: str, max_tokens: int) -> RawRequest:
    messages = [{"role": "user", "content": {"type": "text", "text": text}}]
    return RawRequest("sampling/createMessage", {"messages": messages, "maxTokens": max_tokens})


def _summary(answer: Any) -> str:
    content = json.dumps(answer.data, separators=(",", ":"), default=list) if answer.accepted else "null"
    return f"action={answer.action}, content={content}"


def add_conformance_tools(server: MCPServer[Any]) -> None:
    """Register the conformance fixtures on `server`."""
    _add_2025_11_25(server)
    _add_2026_07_28(server)


def _add_2025_11_25(server: MCPServer[Any]) -> None:
    @server.tool(description="Conformance: asks for a username and an email address.")
    async def test_elicitation(ctx: Context, message: str) -> str:
        return f"User response: {_summary(await ask(ctx, message, USER_INFO))}"

    @server.tool(description="Conformance (SEP-1034): a form whose every field has a default.")
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        answer = await ask(ctx, "Please review and update the form fields with defaults", DEFAULTS)
        return f"Elicitation completed: {_summary(answer)}"

    @server.tool(description="Conformance (SEP-1330): the five enum shapes.")
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        answer = await ask(ctx, "Please select options from the enum fields", ENUMS)
        return f"Elicitation completed: {_summary(answer)}"


def _add_2026_07_28(server: MCPServer[Any]) -> None:
    @server.tool(description="Conformance (SEP-2322): one elicitation under the key user_name.")
    async def test_input_required_result_elicitation(ctx: Context) -> str:
        answer = await ask(ctx, "What is your name?", NAME, key="user_name")
        return (
            f"Hello, {answer.data['name']}!"
            if answer.accepted and answer.data
            else f"No name ({answer.action})."
        )

    @server.tool(description="Conformance (SEP-2322): a confirmation that round-trips requestState.")
    async def test_input_required_result_request_state(ctx: Context) -> str:
        answer = await ask(ctx, "Please confirm", OK, key="confirm")
        return "state-ok: requestState validated" if answer.accepted else f"not confirmed ({answer.action})"

    @server.tool(description="Conformance (SEP-2322): elicitation, sampling and roots in one round.")
    async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
        got = await gather(
            ctx,
            {
                "user_name": Question("What is your name?", NAME),
                "greeting": _sampling("Generate a greeting", 50),
                "client_roots": RawRequest("roots/list", {}),
            },
        )
        name = got["user_name"].data["name"] if got["user_name"].accepted else "?"
        return f"multiple-inputs-ok: {name}, {len(got['client_roots'].get('roots', []))} root(s)"

    @server.tool(description="Conformance (SEP-2322): two questions over three rounds.")
    async def test_input_required_result_multi_round(ctx: Context) -> str:
        name = await ask(ctx, "Step 1: What is your name?", NAME, key="step1")
        color = await ask(ctx, "Step 2: What is your favorite color?", COLOR, key="step2")
        if not (name.accepted and color.accepted and name.data and color.data):
            return "Multi-round stopped."
        return f"Multi-round complete for {name.data['name']} who likes {color.data['color']}"

    @server.tool(description="Conformance (SEP-2322): state that must be rejected when tampered with.")
    async def test_input_required_result_tampered_state(ctx: Context) -> str:
        answer = await ask(ctx, "Please confirm", OK, key="confirm")
        return f"tampered-state check passed ({answer.action})"

    @server.tool(description="Conformance (SEP-2322): asks only what the client declared.")
    async def test_input_required_result_capabilities(ctx: Context) -> str:
        items: dict[str, Question | RawRequest] = {}
        if client_supports(ctx, "sampling"):
            items["sample_input"] = _sampling("Sample request", 50)
        if client_supports(ctx, "elicitation.form"):
            items["elicit_input"] = Question("Elicitation input", VALUE)
        got = await gather(ctx, items) if items else {}
        return f"capabilities-ok: received {', '.join(sorted(got)) or 'nothing'}"

    @server.tool(description="Conformance (SEP-2322): one sampling request.")
    async def test_input_required_result_sampling(ctx: Context) -> str:
        got = await gather(ctx, {"capital_question": _sampling("What is the capital of France?", 100)})
        return f"sampling-ok: {got['capital_question'].get('content', {}).get('text', '')}"

    @server.tool(description="Conformance (SEP-2322): one roots request.")
    async def test_input_required_result_list_roots(ctx: Context) -> str:
        got = await gather(ctx, {"client_roots": RawRequest("roots/list", {})})
        return f"roots-ok: {len(got['client_roots'].get('roots', []))} root(s)"

    @server.prompt(description="Conformance (SEP-2322): a prompt that asks for its context.")
    async def test_input_required_result_prompt(ctx: Context) -> str:
        answer = await ask(ctx, "What context should the prompt use?", CONTEXT, key="user_context")
        context = answer.data["context"] if answer.accepted and answer.data else "none"
        return f"Prompt with context: {context}"

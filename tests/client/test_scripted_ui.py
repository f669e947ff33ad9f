"""ScriptedUI: the answers file format, matching, the unscripted default, and what it records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult, UrlPrompt
from mcp_elicit.core.forms import Field, Form
from mcp_elicit.errors import ConfigError
from mcp_elicit.testing import ScriptedUI as ExportedScriptedUI
from mcp_elicit.ui.scripted import ScriptedUI, Step

pytestmark = pytest.mark.anyio

FORM = Form((Field.string("name", default="Ada"), Field.integer("age", required=False)))
SERVER = Requester(name="shop", where="python shop.py")


def form_prompt(message: str = "Who?", tool: str | None = "order", **kw: Any) -> FormPrompt:
    kw.setdefault("values", {"name": "Ada"})
    return FormPrompt(SERVER, Purpose("tools/call", tool, {}), message, FORM, **kw)


def url_prompt() -> UrlPrompt:
    return UrlPrompt(SERVER, Purpose("tools/call", "pay", {}), "Pay here", "https://pay.example")


def test_scripted_ui_is_exported_by_the_testing_module() -> None:
    assert ExportedScriptedUI is ScriptedUI


async def test_steps_are_taken_in_order_each_once() -> None:
    ui = ScriptedUI([{"content": {"name": "Bo"}}, {"action": "decline"}])
    assert await ui.ask_form(form_prompt()) == UIResult("accept", {"name": "Bo"}, decided_by="script")
    assert await ui.ask_form(form_prompt()) == UIResult("decline", decided_by="script")
    assert await ui.ask_form(form_prompt()) == UIResult("decline", decided_by="script")  # unscripted
    assert len(ui.notices) == 1


async def test_a_step_matches_by_tool_message_server_mode_and_fields() -> None:
    ui = ScriptedUI(
        [
            {"match": {"tool": "refund"}, "action": "cancel"},
            {
                "match": {"message": "Who", "server": "shop", "mode": "form", "fields": ["age"]},
                "content": {"age": 3},
            },
        ]
    )
    assert (await ui.ask_form(form_prompt())).content == {"age": 3}
    assert (await ui.ask_form(form_prompt(tool="refund"))).action == "cancel"


async def test_a_step_that_does_not_fit_stays_for_a_later_question() -> None:
    ui = ScriptedUI([{"match": {"tool": "refund"}, "action": "cancel"}, {"action": "decline"}])
    assert (await ui.ask_form(form_prompt(tool="order"))).action == "decline"
    assert (await ui.ask_form(form_prompt(tool="refund"))).action == "cancel"


async def test_accept_defaults_takes_the_prefilled_values_and_overrides_some() -> None:
    ui = ScriptedUI([{"accept_defaults": True, "content": {"age": 9}}])
    assert (await ui.ask_form(form_prompt())).content == {"name": "Ada", "age": 9}


async def test_a_repeating_step_answers_every_matching_question() -> None:
    ui = ScriptedUI([{"match": {"mode": "url"}, "action": "accept", "repeat": True}])
    for _ in range(3):
        assert await ui.ask_url(url_prompt()) == UIResult("accept", decided_by="script")


async def test_otherwise_accept_defaults_answers_everything_with_defaults() -> None:
    ui = ScriptedUI.accept_defaults()
    assert (await ui.ask_form(form_prompt())).content == {"name": "Ada"}
    assert ui.notices == []


async def test_an_unscripted_question_is_declined_and_the_ui_says_so() -> None:
    ui = ScriptedUI()
    assert (await ui.ask_form(form_prompt("Card number?"))).action == "decline"
    assert ui.notices == ["No scripted answer for 'Card number?': declined."]


async def test_a_retry_after_a_refused_answer_cancels_without_using_another_step() -> None:
    ui = ScriptedUI([{"content": {"age": "x"}}, {"content": {"age": 1}}])
    result = await ui.ask_form(form_prompt(errors={"age": "type: must be an integer"}))
    assert (result.action, result.decided_by) == ("cancel", "script")
    assert result.reason == "scripted_answer_refused: age: type: must be an integer"  # kept for --json
    assert (await ui.ask_form(form_prompt())).content == {"age": "x"}


async def test_a_callable_script_may_return_a_step_a_result_or_nothing() -> None:
    answers: list[Any] = [{"action": "cancel"}, UIResult("accept", {"name": "Cy"}, decided_by="script"), None]

    async def script(prompt: Any) -> Any:
        return answers.pop(0)

    ui = ScriptedUI(script)
    assert (await ui.ask_form(form_prompt())).action == "cancel"
    assert (await ui.ask_form(form_prompt())).content == {"name": "Cy"}
    assert (await ui.ask_form(form_prompt())).action == "decline"


async def test_everything_shown_is_recorded() -> None:
    ui = ScriptedUI([Step(action="decline")])
    prompt = form_prompt()
    await ui.ask_form(prompt)
    await ui.notice(SERVER, "hello")
    assert ui.seen == [prompt]
    assert ui.notices == ["hello"]


async def test_an_answers_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text(
        json.dumps(
            {"steps": [{"match": {"tool": "order"}, "content": {"name": "Di"}}], "otherwise": "cancel"}
        )
    )
    ui = ScriptedUI.from_file(path)
    assert (await ui.ask_form(form_prompt())).content == {"name": "Di"}
    assert (await ui.ask_form(form_prompt())).action == "cancel"


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"steps": [], "extra": 1}, "extra"),
        ({"otherwise": "accept"}, "otherwise"),
        ({"steps": {}}, "steps"),
        (["not a step"], "steps[0]"),
        ([{"action": "maybe"}], "steps[0].action"),
        ([{"content": [1]}], "steps[0].content"),
        ([{"repeat": "yes"}], "steps[0].repeat"),
        ([{"action": "decline", "accept_defaults": True}], "steps[0].accept_defaults"),
        ([{"match": {"tool": 3}}], "steps[0].match.tool"),
        ([{"match": {"mode": "sms"}}], "steps[0].match.mode"),
        ([{"match": {"fields": "name"}}], "steps[0].match.fields"),
        ([{"match": {"colour": "red"}}], "steps[0].match.colour"),
        ([{"ation": "accept"}], "steps[0].ation"),
    ],
)
def test_a_bad_answers_file_names_the_bad_key(data: Any, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ScriptedUI.from_json(data, source="answers.json")
    assert (caught.value.key, caught.value.path) == (key, "answers.json")


def test_an_unreadable_answers_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError) as caught:
        ScriptedUI.from_file(path)
    assert caught.value.path == str(path)


async def test_a_script_remembers_only_its_most_recent_prompts() -> None:
    from mcp_elicit.ui.scripted import MAX_REMEMBERED

    ui = ScriptedUI(otherwise="accept_defaults")
    form = Form((Field.string("name", default="Ada"),))
    for i in range(MAX_REMEMBERED + 5):
        await ui.ask_form(FormPrompt(Requester("srv", "here"), Purpose(), f"question {i}", form))
    assert len(ui.seen) == MAX_REMEMBERED
    assert ui.seen[-1].message == f"question {MAX_REMEMBERED + 4}"

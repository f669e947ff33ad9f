"""Each stage of the client pipeline on its own, and the pipeline that chains them (F2-F7, C1, C3)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_elicit.client import (
    AnswerWithoutAsking,
    AskThroughUI,
    CheckMode,
    CleanText,
    Elicitation,
    GateSchema,
    Identify,
    Outcome,
    Pipeline,
    Refuse,
    Reply,
)
from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult, UrlPrompt
from mcp_elicit.core.forms import MISSING
from mcp_elicit.errors import ConfigError
from mcp_elicit.ui.scripted import ScriptedUI

pytestmark = pytest.mark.anyio

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "default": "Ada"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "plan": {"type": "string", "enum": ["free", "pro"], "default": "free"},
    },
    "required": ["age"],
}


DEFAULT = object()


def elicitation(params: Any = DEFAULT, *, protocol: str = "2025-11-25", **kw: Any) -> Elicitation:
    if params is DEFAULT:
        params = {"message": "Who are you?", "requestedSchema": SCHEMA}
    kw.setdefault("requester", Requester(name="srv", where="python srv.py"))
    return Elicitation(params=params, protocol=protocol, **kw)


async def through(e: Elicitation, *stages: Any) -> Any:
    for stage in stages:
        decision = await stage(e)
        if decision is not None:
            return decision
    return None


# -- identify ---------------------------------------------------------------------------------------


async def test_identify_cleans_the_server_identity_and_the_target_C4() -> None:
    e = elicitation(
        requester=Requester(name="bank\x1b[2J\u202e", where="srv\x07", title="T\u200b", version="1\n2"),
        purpose=Purpose("tools/call", "pay\x1b[31m", {"x": 1}),
        attribution="exact",
    )
    assert await Identify()(e) is None
    assert e.requester == Requester(
        name="bank⟨U+202E⟩ [name cleaned]", where="srv⟨U+0007⟩", title="T⟨U+200B⟩", version="1 2"
    )
    assert e.purpose == Purpose("tools/call", "pay", {"x": 1})
    assert e.warnings == []


async def test_identify_warns_when_the_question_cannot_be_tied_to_a_request() -> None:
    e = elicitation(attribution="none")
    await Identify()(e)
    assert len(e.warnings) == 1


async def test_identify_does_not_defang_where_the_person_said_the_server_runs() -> None:
    e = elicitation(requester=Requester(name="s", where="https://mcp.example/mcp"), attribution="exact")
    await Identify()(e)
    assert e.requester.where == "https://mcp.example/mcp"


# -- check_mode --------------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [[1, 2], "text", None, 42])
async def test_params_that_are_not_an_object_are_refused(params: Any) -> None:
    decision = await CheckMode()(elicitation(params))
    assert isinstance(decision, Refuse)
    assert (decision.code, decision.reason) == (-32602, "params_not_object")


async def test_a_request_without_mode_is_a_form_F4() -> None:
    e = elicitation({"message": "hi", "requestedSchema": SCHEMA})
    assert await CheckMode()(e) is None
    assert e.mode == "form"


async def test_an_undeclared_url_mode_is_refused_with_invalid_params_C1() -> None:
    e = elicitation({"mode": "url", "message": "go", "url": "https://x.example", "elicitationId": "1"})
    decision = await CheckMode()(e)
    assert isinstance(decision, Refuse)
    assert (decision.code, decision.reason) == (-32602, "undeclared_mode")
    assert e.mode == "url"


async def test_a_declared_url_mode_passes_with_its_url() -> None:
    e = elicitation(
        {"mode": "url", "message": "go", "url": "https://x.example"},
        declared_modes=frozenset({"form", "url"}),
    )
    assert await CheckMode()(e) is None
    assert e.url == "https://x.example"


@pytest.mark.parametrize("mode", ["telepathy", 3, None, ["form"]])
async def test_an_unknown_mode_is_refused(mode: Any) -> None:
    decision = await CheckMode()(elicitation({"mode": mode, "message": "m", "requestedSchema": SCHEMA}))
    assert isinstance(decision, Refuse)
    assert decision.reason == "unknown_mode"


@pytest.mark.parametrize(
    "params",
    [
        {"requestedSchema": SCHEMA},
        {"message": 5, "requestedSchema": SCHEMA},
        {"mode": "url", "message": "m", "url": 7},
    ],
)
async def test_wrong_types_in_params_are_refused(params: dict[str, Any]) -> None:
    e = elicitation(params, declared_modes=frozenset({"form", "url"}))
    decision = await CheckMode()(e)
    assert isinstance(decision, Refuse)
    assert decision.reason == "bad_params"


# -- gate_schema -------------------------------------------------------------------------------------


async def gate(schema: Any, protocol: str = "2025-11-25") -> tuple[Elicitation, Any]:
    e = elicitation({"message": "m", "requestedSchema": schema}, protocol=protocol)
    return e, await through(e, CheckMode(), GateSchema())


async def test_a_spec_valid_schema_becomes_a_form() -> None:
    e, decision = await gate(SCHEMA)
    assert decision is None
    assert e.form is not None
    assert e.form.names == ("name", "age", "plan")


@pytest.mark.parametrize(
    ("schema", "field", "keyword"),
    [
        ({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}, "a", "type"),
        ({"type": "object", "properties": {"a": {"type": "string", "$ref": "#/defs/x"}}}, "a", "$ref"),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object"}}}},
            "a",
            "items",
        ),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}, "a", "pattern"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "enum": [str(i) for i in range(999)]}}},
            "a",
            "enum",
        ),
        ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 10**9}}}, "a", "maxLength"),
    ],
)
async def test_a_schema_the_spec_does_not_allow_is_refused_naming_field_and_problem_F1_F2(
    schema: dict[str, Any], field: str, keyword: str
) -> None:
    e, decision = await gate(schema)
    assert isinstance(decision, Refuse)
    assert (decision.code, decision.reason) == (-32602, "schema")
    assert f"field {field!r}" in decision.message
    assert keyword in decision.message
    assert e.form is None


@pytest.mark.parametrize(
    "prop",
    [
        {"tag\u3164": {"type": "string"}},
        {"tag": {"type": "string", "enum": ["x\u200by", "z"]}},
        {"tag": {"type": "string", "enum": ["\x1b[2J"]}},
        {"tag": {"type": "array", "items": {"anyOf": [{"const": "a\u202e", "title": "A"}]}}},
    ],
)
async def test_hidden_characters_in_names_or_option_values_are_refused(prop: dict[str, Any]) -> None:
    # They travel back in the answer unchanged, so they cannot be cleaned: the form is refused.
    _, decision = await gate({"type": "object", "properties": prop})
    assert isinstance(decision, Refuse)
    assert decision.reason == "schema"
    assert "\x1b" not in decision.message


async def test_a_schema_seen_before_is_served_from_the_cache_and_a_look_alike_is_not() -> None:
    stage = GateSchema()
    good = {"type": "object", "properties": {"n": {"type": "integer", "default": 1}}}
    bad = {"type": "object", "properties": {"n": {"type": "integer", "default": True}}}  # == good in Python
    first, second = (
        elicitation({"message": "m", "requestedSchema": good}),
        elicitation({"message": "m", "requestedSchema": dict(good)}),
    )
    for e in (first, second):
        e.mode = "form"
        assert await stage(e) is None
    assert first.form is second.form
    look_alike = elicitation({"message": "m", "requestedSchema": bad})
    look_alike.mode = "form"
    assert await stage(look_alike) is None
    assert look_alike.form is not None
    assert look_alike.form is not first.form
    assert look_alike.form.field("n").default is MISSING  # True is no integer: not pre-filled
    assert first.form is not None
    assert first.form.field("n").default == 1


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "string", "format": "uri", "default": ""},  # FastMCP: an optional `str = ""` as a uri
        {"type": "integer", "minimum": 1, "maximum": 20, "default": 0},
        {"type": "string", "enum": ["a", "b"], "default": "c"},
        {"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": ["z"]},
    ],
)
async def test_a_default_that_does_not_fit_its_field_is_not_pre_filled_and_the_form_is_still_asked_F6(
    prop: dict[str, Any],
) -> None:
    schema = {"type": "object", "properties": {"site": prop, "name": {"type": "string", "default": "Ada"}}}
    for _ in range(2):  # the second time from the cache, with the same warning
        e, decision = await gate(schema)
        assert decision is None
        assert e.form is not None
        assert e.form.field("site").default is MISSING
        assert e.form.field("name").default == "Ada"
        assert sum("'site'" in w and "pre-filled" in w for w in e.warnings) == 1


async def test_a_form_with_an_unfit_default_and_another_problem_is_still_refused() -> None:
    prop = {"type": "string", "format": "uri", "default": "", "pattern": "x"}
    _, decision = await gate({"type": "object", "properties": {"site": prop}})
    assert isinstance(decision, Refuse)
    assert "pattern" in decision.message


async def test_a_form_request_without_a_schema_is_refused_F4() -> None:
    e = elicitation({"message": "m"})
    decision = await through(e, CheckMode(), GateSchema())
    assert isinstance(decision, Refuse)
    assert decision.reason == "schema"


async def test_too_many_fields_are_refused_and_the_message_stays_short() -> None:
    schema = {"type": "object", "properties": {f"f{i}": {"type": "object"} for i in range(5000)}}
    _, decision = await gate(schema)
    assert isinstance(decision, Refuse)
    assert len(decision.message) <= 1000


async def test_a_multi_select_is_refused_on_2025_06_18() -> None:
    schema = {
        "type": "object",
        "properties": {"t": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}},
    }
    assert (await gate(schema, "2025-11-25"))[1] is None
    assert isinstance((await gate(schema, "2025-06-18"))[1], Refuse)


# -- clean_text --------------------------------------------------------------------------------------


HOSTILE_SCHEMA = {
    "type": "object",
    "properties": {
        "plan": {
            "type": "string",
            "title": "Plan\x1b[8m hidden",
            "description": "Pick\u202e one\x07",
            "oneOf": [
                {"const": "a", "title": "A\x1b]8;;https://evil\x1b\\link\x1b]8;;\x1b\\"},
                {"const": "b", "title": "B"},
            ],
        },
        "tag": {"type": "string", "title": "Tag\u3164", "enum": ["xy", "z"]},
        "note": {"type": "string", "default": "ok\x1b[2Jwiped"},
        "site": {"type": "string", "format": "uri", "default": "https://example.org"},
    },
}


async def cleaned(schema: dict[str, Any], message: str = "Hello") -> Elicitation:
    e = elicitation({"message": message, "requestedSchema": schema})
    assert await through(e, CheckMode(), GateSchema(), CleanText()) is None
    return e


async def test_every_text_of_a_hostile_form_is_cleaned_before_a_ui_sees_it() -> None:
    e = await cleaned(HOSTILE_SCHEMA, message="Server says\x1b[1A\rPAY NOW\u202e")
    assert e.message == "Server says\nPAY NOW⟨U+202E⟩"
    assert e.prompt_form is not None
    plan = e.prompt_form.field("plan")
    assert plan.title == "Plan hidden"
    assert plan.description == "Pick⟨U+202E⟩ one⟨U+0007⟩"
    assert [o.title for o in plan.options] == ["Alink", "B"]
    tag = e.prompt_form.field("tag")
    assert tag.title == "Tag⟨U+3164⟩"
    assert [(o.value, o.title) for o in tag.options] == [("xy", "xy"), ("z", "z")]
    assert any("hidden characters" in w for w in e.warnings)


async def test_a_default_with_control_characters_is_not_pre_filled_nor_applied_F6() -> None:
    e = await cleaned(HOSTILE_SCHEMA)
    assert e.prompt_form is not None
    assert e.prompt_form.field("note").default is MISSING
    assert "note" not in e.values
    assert e.values["site"] == "https://example.org"
    assert e.prompt_form.validate({}) == {"site": "https://example.org"}


async def test_clean_defaults_are_pre_filled_F6() -> None:
    e = await cleaned(SCHEMA)
    assert e.values == {"name": "Ada", "plan": "free"}
    assert e.warnings == []


async def test_a_long_message_is_cut_and_the_person_is_told() -> None:
    e = await cleaned(SCHEMA, message="x" * 10_000)
    assert len(e.message) == 4_000
    assert any("cut" in w for w in e.warnings)


async def test_urls_in_the_message_are_never_clickable_F8() -> None:
    e = await cleaned(SCHEMA, message="See https://evil.example/login")
    assert "://" not in e.message


# -- ask ---------------------------------------------------------------------------------------------


async def asked(ui: Any, e: Elicitation | None = None, **options: Any) -> tuple[Elicitation, Any]:
    e = e or elicitation()
    decision = await through(
        e, Identify(), CheckMode(), GateSchema(), CleanText(), AskThroughUI(ui, **options)
    )
    return e, decision


async def test_an_accepted_answer_is_validated_and_typed_with_defaults_applied_F7() -> None:
    ui = ScriptedUI([{"content": {"age": 36.0}}])
    _, decision = await asked(ui)
    assert decision == Reply("accept", "script", content={"name": "Ada", "age": 36, "plan": "free"})
    prompt = ui.seen[0]
    assert isinstance(prompt, FormPrompt)
    assert prompt.values == {"name": "Ada", "plan": "free"}
    assert prompt.requester.name == "srv"


class Person:
    """A UI that answers with the given results in turn and keeps every prompt it was shown."""

    def __init__(self, *results: UIResult) -> None:
        self.results = list(results)
        self.prompts: list[FormPrompt] = []

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        self.prompts.append(prompt)
        return self.results.pop(0) if len(self.results) > 1 else self.results[0]

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        raise AssertionError("no URL here")

    async def notice(self, requester: Requester, text: str) -> None:
        pass


async def test_an_invalid_answer_goes_back_to_the_person_with_the_fields_error_F7() -> None:
    ui = Person(UIResult("accept", {"age": -4}), UIResult("accept", {"age": 40}))
    prompts = ui.prompts
    _, decision = await asked(ui)
    assert decision == Reply("accept", "person", content={"name": "Ada", "age": 40, "plan": "free"})
    assert prompts[0].errors == {}
    assert set(prompts[1].errors) == {"age"}
    assert prompts[1].values["age"] == -4


async def test_answers_that_stay_invalid_end_as_cancel_after_the_bounded_reasks() -> None:
    ui = Person(UIResult("accept", {"age": "old"}))
    _, decision = await asked(ui, max_reasks=2)
    assert decision == Reply("cancel", "person", reason="invalid_answers")
    assert len(ui.prompts) == 3


async def test_a_scripted_answer_that_is_invalid_is_cancelled_without_asking_the_script_again() -> None:
    ui = ScriptedUI([{"content": {"age": "old"}}, {"content": {"age": 3}}])
    _, decision = await asked(ui)
    assert isinstance(decision, Reply)
    assert (decision.action, decision.decided_by) == ("cancel", "script")
    assert decision.reason.startswith("scripted_answer_refused: age")
    assert len(ui.seen) == 2
    assert len(ui.notices) == 1


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_pass_through_without_content_C3(action: str) -> None:
    _, decision = await asked(ScriptedUI([{"action": action}]))
    assert decision == Reply(action, "script")  # type: ignore[arg-type]


class Forgetful:
    """A person who never answers."""

    def __init__(self) -> None:
        self.asked = anyio.Event()

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        self.asked.set()
        await anyio.Event().wait()
        raise AssertionError("unreachable")

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        raise AssertionError("no URL here")

    async def notice(self, requester: Requester, text: str) -> None:
        pass


async def test_a_forgotten_prompt_ends_as_cancel_by_timeout_C3() -> None:
    with anyio.fail_after(5):
        _, decision = await asked(Forgetful(), idle_timeout=0.01)
    assert decision == Reply("cancel", "timeout", reason="idle_timeout")


class Broken(Forgetful):
    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        raise self.error


async def test_a_failing_ui_cancels_the_question_instead_of_crashing() -> None:
    _, decision = await asked(Broken(RuntimeError("boom")))
    assert decision == Reply("cancel", "error", reason="ui_failed")


async def test_ctrl_c_in_the_ui_is_a_cancel_C3() -> None:
    _, decision = await asked(Broken(KeyboardInterrupt()))
    assert decision == Reply("cancel", "person", reason="interrupted")


async def test_a_ui_returning_garbage_cancels() -> None:
    _, decision = await asked(ScriptedUI(lambda prompt: UIResult("maybe")))  # type: ignore[arg-type]
    assert decision == Reply("cancel", "error", reason="ui_failed")


async def test_questions_are_shown_one_at_a_time_and_a_flood_beyond_the_queue_is_cancelled_C4() -> None:
    ui = Forgetful()
    ask = AskThroughUI(ui, idle_timeout=None, max_waiting=2)
    results: list[Any] = []

    async def one() -> None:
        e = await cleaned(SCHEMA)
        results.append(await ask(e))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            await ui.asked.wait()  # the first question is on screen
            for _ in range(2):
                tg.start_soon(one)  # these two wait their turn
            await anyio.wait_all_tasks_blocked()
            for _ in range(3):
                await one()  # no room left: cancelled at once
            assert results == [Reply("cancel", "rate_limit", reason="queue_full")] * 3
            tg.cancel_scope.cancel()


async def test_url_mode_without_the_url_check_stage_is_cancelled_not_shown_U3() -> None:
    ui = ScriptedUI.accept_defaults()
    e = elicitation(
        {"mode": "url", "message": "go", "url": "https://x.example"},
        declared_modes=frozenset({"form", "url"}),
    )
    _, decision = await asked(ui, e)
    assert decision == Reply("cancel", "error", reason="url_unchecked")
    assert ui.seen == []
    assert len(ui.notices) == 1


async def test_url_mode_shows_the_prompt_a_url_stage_prepared() -> None:
    class UrlCheck:
        name = "url_check"

        async def __call__(self, e: Elicitation) -> None:
            e.url_prompt = UrlPrompt(e.requester, e.purpose, e.message, e.url or "", {"domain": "x.example"})

    ui = ScriptedUI([{"match": {"mode": "url"}, "action": "accept"}])
    pipeline = Pipeline(ui, modes=("form", "url"))
    pipeline.insert(UrlCheck())
    e = elicitation(
        {"mode": "url", "message": "go", "url": "https://x.example"},
        declared_modes=frozenset({"form", "url"}),
    )
    decision, outcome = await pipeline.run(e)
    assert decision == Reply("accept", "script")
    assert isinstance(ui.seen[0], UrlPrompt)
    assert (outcome.mode, outcome.action) == ("url", "accept")


# -- the pipeline ------------------------------------------------------------------------------------


async def test_the_default_chain_has_the_documented_stages_in_order() -> None:
    pipeline = Pipeline(ScriptedUI())
    assert [s.name for s in pipeline.stages] == [
        "identify",
        "check_mode",
        "gate_schema",
        "clean_text",
        "secret_guard",
        "ask",
    ]


async def test_a_stage_inserted_before_ask_can_deny_and_the_denial_becomes_a_decline() -> None:
    class Deny:
        name = "policy"

        async def __call__(self, e: Elicitation) -> Reply:
            return Reply("decline", "policy", reason="denied_by_rule")

    ui = ScriptedUI.accept_defaults()
    pipeline = Pipeline(ui)
    pipeline.insert(Deny())
    decision, outcome = await pipeline.run(elicitation())
    assert decision == Reply("decline", "policy", reason="denied_by_rule")
    assert (outcome.action, outcome.decided_by, outcome.reason) == ("decline", "policy", "denied_by_rule")
    assert ui.seen == []


async def test_a_stage_can_be_replaced_by_name() -> None:
    class NoGate:
        name = "gate_schema"

        async def __call__(self, e: Elicitation) -> Refuse:
            return Refuse("custom", "no forms today")

    pipeline = Pipeline(ScriptedUI())
    pipeline.replace(NoGate())
    decision, _ = await pipeline.run(elicitation())
    assert decision == Refuse("custom", "no forms today")


async def test_a_stage_that_raises_cancels_the_question() -> None:
    class Buggy:
        name = "buggy"

        async def __call__(self, e: Elicitation) -> None:
            raise ValueError("bug")

    pipeline = Pipeline(ScriptedUI.accept_defaults())
    pipeline.insert(Buggy())
    decision, _ = await pipeline.run(elicitation())
    assert decision == Reply("cancel", "error", reason="stage_failed:buggy")


async def test_an_observer_sees_every_outcome_and_a_failing_one_turns_accept_into_decline() -> None:
    seen: list[Outcome] = []

    def record(e: Elicitation, outcome: Outcome) -> None:
        seen.append(outcome)

    async def audit_down(e: Elicitation, outcome: Outcome) -> None:
        raise OSError("disk full")

    pipeline = Pipeline(ScriptedUI([{"content": {"age": 3}}]), observers=[record, audit_down])
    decision, outcome = await pipeline.run(elicitation())
    assert seen[0].action == "accept"
    assert decision == Reply("decline", "error", reason="observer_failed")
    assert outcome.action == "decline"


async def test_the_outcome_names_fields_but_never_values() -> None:
    _, outcome = await Pipeline(ScriptedUI([{"content": {"age": 3, "name": "Secret Name"}}])).run(
        elicitation()
    )
    assert outcome.fields == ("name", "age", "plan")
    assert "Secret Name" not in repr(outcome.to_json())


async def test_screening_runs_only_mode_and_schema_and_records_a_refusal() -> None:
    ui = ScriptedUI.accept_defaults()
    pipeline = Pipeline(ui)
    assert await pipeline.screen(elicitation()) is None
    refused = await pipeline.screen(
        elicitation({"message": "m", "requestedSchema": {"type": "object", "$ref": "x"}})
    )
    assert refused is not None
    assert refused[0].reason == "schema"
    assert refused[1].action == "error"
    assert ui.seen == []


@pytest.mark.parametrize("modes", [(), ("form", "sms")])
def test_a_pipeline_declares_at_least_one_known_mode_C1(modes: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError) as raised:
        Pipeline(ScriptedUI(), modes=modes)
    assert raised.value.key == "modes"


async def test_answer_without_asking_cancels_and_says_so() -> None:
    ui = ScriptedUI.accept_defaults()
    pipeline = Pipeline(ui)
    pipeline.insert(AnswerWithoutAsking(ui))
    decision, outcome = await pipeline.run(elicitation())
    assert decision == Reply("cancel", "no_terminal", reason="no_terminal")
    assert outcome.decided_by == "no_terminal"
    assert ui.seen == []
    assert len(ui.notices) == 1


async def test_an_empty_form_can_be_accepted() -> None:
    e = elicitation({"message": "Continue?", "requestedSchema": {"type": "object", "properties": {}}})
    decision, _ = await Pipeline(ScriptedUI([{}])).run(e)
    assert decision == Reply("accept", "script", content={})


def test_a_stage_goes_in_right_after_or_right_before_the_named_one() -> None:
    ui = ScriptedUI()
    pipeline = Pipeline(ui)
    pipeline.insert(AnswerWithoutAsking(ui, name="first"), after="identify")
    pipeline.insert(AnswerWithoutAsking(ui, name="second"), before="ask")
    pipeline.insert(AnswerWithoutAsking(ui, name="third"))
    names = pipeline.names
    assert names[:2] == ["identify", "first"]
    assert names[-3:] == ["second", "third", "ask"]


def test_inserting_next_to_a_stage_that_is_not_there_names_it() -> None:
    pipeline = Pipeline(ScriptedUI())
    with pytest.raises(KeyError) as raised:
        pipeline.insert(AnswerWithoutAsking(ScriptedUI()), after="no_such_stage")
    assert raised.value.args == ("no_such_stage",)
    with pytest.raises(ConfigError) as both:
        pipeline.insert(AnswerWithoutAsking(ScriptedUI()), after="identify", before="ask")
    assert both.value.key == "insert"

"""The client guardrails in the pipeline: secret guard (F5), per-server policy, rate limits, embargo
and ask-first approval (C4). Time comes from an injected clock; nothing sleeps."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_elicit.client import Elicitation, Pipeline, Reply
from mcp_elicit.client.guardrails import (
    NOTICE_FIELDS,
    Guardrails,
    SecretGuard,
    install_guardrails,
    server_ref,
)
from mcp_elicit.client.stages import AskThroughUI, CheckMode, CleanText, GateSchema, Identify
from mcp_elicit.client.ui_protocol import FormPrompt, Requester, UIResult, UrlPrompt
from mcp_elicit.core.policy import (
    RATE_BURST,
    Policy,
    PolicyState,
    RateLimit,
    ServerMatch,
    ServerRule,
    load_policy,
)
from mcp_elicit.errors import ConfigError
from mcp_elicit.testing import ManualClock
from mcp_elicit.ui.scripted import ScriptedUI

pytestmark = pytest.mark.anyio

NAME_FORM = {
    "message": "Who is reading?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}}},
}
API_KEY_FORM = {
    "message": "Connect your account",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "account": {"type": "string", "title": "Account"},
            "api_key": {"type": "string", "title": "API key"},
        },
        "required": ["api_key"],
    },
}
TOKEN_FORM = {  # a field named just "token": a weak signal, shown with a warning
    "message": "Pair the device",
    "requestedSchema": {"type": "object", "properties": {"token": {"type": "string", "title": "Token"}}},
}
BENIGN_FORM = {  # words that look like secrets but are not (false alarms must stay rare)
    "message": "Tune the summary",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "secretary_email": {"type": "string", "format": "email", "title": "Secretary's email"},
            "token_count": {"type": "integer", "title": "Token count"},
        },
    },
}
PAGE = {"mode": "url", "message": "Sign in", "url": "https://example.org/login", "elicitationId": "e1"}

SERVER = Requester(name="srv", where="python srv.py")
ALLOW = Policy(form="allow", url="allow")


class PersonUI:
    """A person who answers every form with `action` (and the given content); keeps what was shown."""

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.seen: list[FormPrompt | UrlPrompt] = []
        self.notices: list[str] = []

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        self.seen.append(prompt)
        if not prompt.form.fields:  # an approval: this person lets servers ask
            return UIResult("accept")
        return UIResult(self.action, self.content if self.action == "accept" else None)  # type: ignore[arg-type]

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        self.seen.append(prompt)
        return UIResult(self.action)  # type: ignore[arg-type]

    async def notice(self, requester: Requester, text: str) -> None:
        self.notices.append(text)


def question(
    pipeline: Pipeline, params: Any = None, *, requester: Requester = SERVER, **kw: Any
) -> Elicitation:
    """An elicitation arriving now (on the pipeline's clock), as the SDK adapter makes one."""
    return Elicitation(
        params=dict(NAME_FORM if params is None else params),
        protocol="2025-11-25",
        requester=requester,
        declared_modes=pipeline.modes,
        time=pipeline.clock(),
        **kw,
    )


async def run(pipeline: Pipeline, params: Any = None, **kw: Any) -> Any:
    decision, outcome = await pipeline.run(question(pipeline, params, **kw))
    return decision, outcome


def guarded(ui: Any, policy: Policy = ALLOW, clock: ManualClock | None = None, **options: Any) -> Pipeline:
    pipeline = Pipeline(ui, clock=clock or ManualClock(), modes=options.pop("modes", ("form",)))
    install_guardrails(pipeline, policy, **options)
    return pipeline


# -- the secret guard (F5) ------------------------------------------------------------------------


async def test_a_form_asking_for_an_api_key_is_never_shown_and_the_server_gets_decline_F5() -> None:
    ui = ScriptedUI.accept_defaults()
    pipeline = Pipeline(ui)
    decision, outcome = await pipeline.run(question(pipeline, API_KEY_FORM))
    assert decision == Reply("decline", "secret_guard", reason="secret_in_form")
    assert (outcome.action, outcome.decided_by, outcome.reason) == (
        "decline",
        "secret_guard",
        "secret_in_form",
    )
    assert ui.seen == []
    assert len(ui.notices) == 1  # the person is told, briefly
    assert "“API key”" in ui.notices[0]  # by the field's title, not its wire name


async def test_the_secret_guard_is_part_of_the_default_chain_before_ask() -> None:
    names = [s.name for s in Pipeline(ScriptedUI()).stages]
    assert names.index("clean_text") < names.index("secret_guard") < names.index("ask")


async def test_a_form_with_a_weak_signal_is_shown_with_a_warning_naming_the_field_F5() -> None:
    ui = ScriptedUI([{"content": {"token": "abc"}}])
    pipeline = Pipeline(ui)
    decision, _ = await pipeline.run(question(pipeline, TOKEN_FORM))
    assert decision.action == "accept"
    shown = ui.seen[0]
    assert isinstance(shown, FormPrompt)
    assert [w for w in shown.warnings if "“Token”" in w] != []


async def test_a_benign_form_with_secret_looking_words_is_shown_without_a_guard_warning() -> None:
    ui = ScriptedUI.accept_defaults()
    pipeline = Pipeline(ui)
    decision, _ = await pipeline.run(question(pipeline, BENIGN_FORM, attribution="exact"))
    assert decision.action == "accept"
    assert ui.seen[0].warnings == ()


async def test_a_repeated_form_reuses_its_verdict_but_a_new_message_is_classified_again_F5() -> None:
    ui = ScriptedUI.accept_defaults()
    pipeline = Pipeline(ui)
    for _ in range(2):
        decision, _ = await pipeline.run(question(pipeline, BENIGN_FORM, attribution="exact"))
        assert decision.action == "accept"
    asking_for_a_password = {**BENIGN_FORM, "message": "Type your password in the token count field"}
    await pipeline.run(question(pipeline, asking_for_a_password, attribution="exact"))
    assert [prompt.warnings for prompt in ui.seen[:2]] == [(), ()]
    assert ui.seen[2].warnings != ()  # same schema, new message: not the cached verdict


async def test_the_verdict_is_kept_on_the_elicitation_for_the_audit_record() -> None:
    e = question(Pipeline(ScriptedUI()), API_KEY_FORM)
    for stage in (Identify(), CheckMode(), GateSchema(), CleanText()):
        assert await stage(e) is None
    await SecretGuard(ScriptedUI())(e)
    assert e.form_verdict.blocked == ("api_key",)


async def test_a_notice_names_a_few_fields_and_counts_the_rest() -> None:
    properties = {f"api_key_{i}": {"type": "string"} for i in range(NOTICE_FIELDS + 2)}
    ui = ScriptedUI()
    pipeline = Pipeline(ui)
    await pipeline.run(
        question(
            pipeline, {"message": "keys", "requestedSchema": {"type": "object", "properties": properties}}
        )
    )
    assert ui.notices[0].count("“") == NOTICE_FIELDS
    assert "and 2 more" in ui.notices[0]


async def test_a_notice_the_ui_cannot_show_does_not_change_the_decline() -> None:
    class Broken(ScriptedUI):
        async def notice(self, requester: Requester, text: str) -> None:
            raise RuntimeError("screen gone")

    pipeline = Pipeline(Broken())
    decision, _ = await pipeline.run(question(pipeline, API_KEY_FORM))
    assert decision == Reply("decline", "secret_guard", reason="secret_in_form")


# -- policy: allow, ask first, deny (C4) -----------------------------------------------------------


async def test_a_server_the_policy_denies_never_reaches_the_person_and_gets_decline_C4() -> None:
    ui = PersonUI()
    pipeline = guarded(ui, load_policy('[default]\nform = "deny"'))
    decision, outcome = await run(pipeline)
    assert decision == Reply("decline", "policy", reason="policy_deny")
    assert outcome.decided_by == "policy"
    assert ui.seen == []
    assert len(ui.notices) == 1


async def test_rules_match_servers_by_command_line_and_url() -> None:
    policy = Policy(
        form="allow",
        servers=(
            ServerRule(ServerMatch(command="npx *evil*"), form="deny"),
            ServerRule(ServerMatch(url="https://*.corp.example/*"), form="deny"),
        ),
    )
    ui = PersonUI(content={"name": "Ada"})
    pipeline = guarded(ui, policy)
    evil = Requester(name="friendly", where="npx -y evil-server")
    corp = Requester(name="friendly", where="https://mcp.corp.example/mcp")
    fine = Requester(name="evil", where="python fine.py")  # the declared name alone is not matched
    assert (await run(pipeline, requester=evil))[0].decided_by == "policy"
    assert (await run(pipeline, requester=corp))[0].decided_by == "policy"
    assert (await run(pipeline, requester=fine))[0] == Reply("accept", "person", content={"name": "Ada"})


def test_server_ref_reads_an_http_location_as_a_url_and_anything_else_as_a_command() -> None:
    assert server_ref(Requester("a", "https://x.example/mcp")).url == "https://x.example/mcp"
    assert server_ref(Requester("a", "uvx tool")).command == "uvx tool"


async def test_url_mode_has_its_own_permission() -> None:
    ui = PersonUI()
    pipeline = guarded(ui, Policy(form="allow", url="deny"), modes=("form", "url"))
    decision, outcome = await run(pipeline, PAGE)
    assert decision == Reply("decline", "policy", reason="policy_deny")
    assert outcome.mode == "url"
    assert ui.seen == []


async def test_ask_first_shows_an_approval_before_the_first_question_and_remembers_it_C4() -> None:
    ui = PersonUI(content={"name": "Ada"})
    pipeline = guarded(ui, Policy(form="ask"))
    for _ in range(2):
        decision, _ = await run(pipeline)
        assert decision == Reply("accept", "person", content={"name": "Ada"})
    approval, first, second = ui.seen
    assert isinstance(approval, FormPrompt)
    assert approval.form.fields == ()
    assert approval.requester == SERVER  # the approval says which server is asking
    assert [p.form.names for p in (first, second)] == [("name",), ("name",)]  # type: ignore[union-attr]


async def test_ask_first_without_remembering_asks_before_every_question() -> None:
    ui = PersonUI(content={"name": "Ada"})
    pipeline = guarded(ui, Policy(form="ask"), remember_approval=False)
    await run(pipeline)
    await run(pipeline)
    assert [len(p.form.fields) for p in ui.seen] == [0, 1, 0, 1]  # type: ignore[union-attr]


async def test_refusing_the_approval_declines_and_the_form_is_never_shown() -> None:
    class Refuses(PersonUI):
        async def ask_form(self, prompt: FormPrompt) -> UIResult:
            self.seen.append(prompt)
            return UIResult("decline")

    ui = Refuses()
    pipeline = guarded(ui, Policy(form="ask"))
    decision, _ = await run(pipeline)
    assert decision == Reply("decline", "person", reason="not_approved")
    assert [len(p.form.fields) for p in ui.seen] == [0]  # type: ignore[union-attr]


async def test_ask_first_by_notice_tells_the_person_once_and_goes_on() -> None:
    ui = ScriptedUI([{"content": {"name": "Ada"}, "repeat": True}])
    pipeline = guarded(ui, Policy(form="ask"), approval="notice")
    for _ in range(3):
        assert (await run(pipeline))[0].action == "accept"
    assert len(ui.notices) == 1
    assert all(p.form.fields for p in ui.seen)  # type: ignore[union-attr]


async def test_an_approval_nobody_answers_is_cancelled_as_a_timeout() -> None:
    class Away(PersonUI):
        async def ask_form(self, prompt: FormPrompt) -> UIResult:
            await anyio.Event().wait()  # never answers; the idle timeout ends it
            raise AssertionError("unreachable")

    pipeline = guarded(Away(), Policy(form="ask"), idle_timeout=0.01)
    with anyio.fail_after(10):
        decision, _ = await run(pipeline)
    assert decision == Reply("cancel", "timeout", reason="idle_timeout")


def test_an_unknown_approval_style_is_refused() -> None:
    with pytest.raises(ConfigError) as raised:
        Guardrails(approval="maybe")  # type: ignore[arg-type]
    assert raised.value.key == "approval"


async def test_a_pipeline_gets_one_policy_only_and_the_stages_land_in_order() -> None:
    pipeline = Pipeline(ScriptedUI())
    install_guardrails(pipeline)
    assert [s.name for s in pipeline.stages] == [
        "identify",
        "check_mode",
        "gate_schema",
        "clean_text",
        "policy",
        "secret_guard",
        "approve",
        "ask",
    ]
    with pytest.raises(ConfigError) as raised:
        install_guardrails(pipeline)
    assert raised.value.key == "policy"


async def test_a_custom_chain_without_a_secret_guard_gets_one() -> None:
    ui = ScriptedUI()
    pipeline = Pipeline(ui, stages=[Identify(), CheckMode(), GateSchema(), CleanText(), AskThroughUI(ui)])
    install_guardrails(pipeline)
    assert "secret_guard" in [s.name for s in pipeline.stages]


# -- rate limits and the embargo ----------------------------------------------------------------


async def test_a_server_that_floods_questions_is_rate_limited_with_cancel_and_one_notice_C4() -> None:
    clock = ManualClock()
    ui = ScriptedUI([{"content": {"name": "Ada"}, "repeat": True}])
    pipeline = guarded(ui, ALLOW, clock)
    burst, window = RATE_BURST
    decisions = [(await run(pipeline))[0] for _ in range(3 * burst)]  # all within one instant
    assert [d.action for d in decisions] == ["accept"] * burst + ["cancel"] * (2 * burst)
    assert {d.decided_by for d in decisions[burst:]} == {"rate_limit"}
    assert {d.reason for d in decisions[burst:]} == {"rate_limited"}
    assert len(ui.seen) == burst  # refused questions never reach the person
    assert len(ui.notices) == 1  # one notice for the streak, not one per refused question
    clock.advance(window)
    assert (await run(pipeline))[0].action == "accept"  # the window moved on
    for _ in range(burst):
        await run(pipeline)
    assert len(ui.notices) == 2  # a new streak is told again


async def test_a_rate_limit_that_ends_within_a_second_is_told_as_the_next_second() -> None:
    clock = ManualClock()
    ui = ScriptedUI([{"content": {"name": "Ada"}, "repeat": True}])
    pipeline = guarded(ui, ALLOW, clock)
    burst, window = RATE_BURST
    for _ in range(burst):
        await run(pipeline)
    clock.advance(window - 0.5)  # the burst's first admission leaves the window in half a second
    assert (await run(pipeline))[0].reason == "rate_limited"
    assert ui.notices[-1].endswith(" for the next second.")  # not "the next 1 seconds"


async def test_a_flood_of_secret_forms_is_rate_limited_too() -> None:
    ui = ScriptedUI()
    pipeline = guarded(ui, ALLOW)
    burst, _ = RATE_BURST
    decided = [(await run(pipeline, API_KEY_FORM))[0].decided_by for _ in range(burst + 3)]
    assert decided == ["secret_guard"] * burst + ["rate_limit"] * 3
    assert len(ui.notices) == burst + 1  # each refused secret form, then one for the rate limit


async def test_declines_by_the_person_start_an_embargo_and_the_server_is_then_refused() -> None:
    clock = ManualClock()
    ui = PersonUI("decline")
    policy = Policy(form="allow", rate_limits=())
    pipeline = guarded(ui, policy, clock)
    for _ in range(policy.embargo.declines):
        assert (await run(pipeline))[0] == Reply("decline", "person")
        clock.advance(1)
    decision, _ = await run(pipeline)
    assert decision == Reply("decline", "policy", reason="embargo")
    assert len(ui.seen) == policy.embargo.declines
    clock.advance(policy.embargo.duration)
    assert (await run(pipeline))[0].decided_by == "person"  # the embargo ended


async def test_timeouts_count_towards_the_embargo_like_dismissals() -> None:
    class Away(PersonUI):
        async def ask_form(self, prompt: FormPrompt) -> UIResult:
            self.seen.append(prompt)
            return UIResult("cancel", decided_by="timeout")

    policy = Policy(form="allow", rate_limits=())
    pipeline = guarded(Away(), policy)
    for _ in range(policy.embargo.cancels):
        assert (await run(pipeline))[0].decided_by == "timeout"
    assert (await run(pipeline))[0].reason == "embargo"


async def test_scripted_answers_and_refusals_by_the_client_never_feed_the_embargo() -> None:
    policy = Policy(form="allow", rate_limits=())
    scripted = guarded(ScriptedUI([{"action": "decline", "repeat": True}]), policy)
    secret = guarded(ScriptedUI(), policy)
    for _ in range(3 * policy.embargo.declines):
        assert (await run(scripted))[0].decided_by == "script"
        assert (await run(secret, API_KEY_FORM))[0].decided_by == "secret_guard"


async def test_an_accept_forgives_earlier_declines() -> None:
    ui = PersonUI("decline", content={"name": "Ada"})
    policy = Policy(form="allow", rate_limits=())
    pipeline = guarded(ui, policy)
    for action in ["decline", "decline", "accept", "decline", "decline"]:
        ui.action = action
        assert (await run(pipeline))[0].decided_by == "person"


async def test_the_policy_state_can_be_shared_between_pipelines() -> None:
    state = PolicyState()
    policy = Policy(form="allow", rate_limits=(RateLimit(1, 60.0),))
    clock = ManualClock()
    first = guarded(ScriptedUI.accept_defaults(), policy, clock, state=state)
    second = guarded(ScriptedUI.accept_defaults(), policy, clock, state=state)
    assert (await run(first))[0].decided_by == "script"
    assert (await run(second))[0].decided_by == "rate_limit"

"""Ask-first approval with several questions of one server at once: one approval on screen, its
accept lets the others ask (an approval lasts for the session); a refusal lets nothing through."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_elicit.client import Reply
from mcp_elicit.client.ui_protocol import FormPrompt, Requester, UIResult, UrlPrompt
from mcp_elicit.core.policy import Policy
from tests.client.test_guardrails import guarded, run

pytestmark = pytest.mark.anyio

ASK = Policy(form="ask")


class Desk:
    """A person at a page: approvals wait until the test answers them (in order); forms are
    answered at once with a name."""

    def __init__(self) -> None:
        self.approvals: list[tuple[FormPrompt, anyio.Event, list[UIResult]]] = []
        self.forms: list[FormPrompt] = []
        self.changed = anyio.Event()

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        if prompt.form.fields:
            self.forms.append(prompt)
            return UIResult("accept", {"name": "Ada"})
        answered, answer = anyio.Event(), []  # type: ignore[var-annotated]
        self.approvals.append((prompt, answered, answer))
        self.changed.set()
        self.changed = anyio.Event()
        await answered.wait()
        return answer[0]

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        return UIResult("cancel")

    async def notice(self, requester: Requester, text: str) -> None:
        pass

    async def approvals_shown(self, n: int) -> None:
        with anyio.fail_after(5):
            while len(self.approvals) < n:
                await self.changed.wait()

    def answer(self, index: int, result: UIResult) -> None:
        _, answered, answer = self.approvals[index]
        answer.append(result)
        answered.set()


async def _both(pipeline: Any, desk: Desk, *answers: UIResult) -> list[Any]:
    """Two questions of the same server at once; the approvals on screen get `answers` in turn."""
    decisions: list[Any] = [None, None]

    async def one(i: int) -> None:
        decisions[i] = (await run(pipeline))[0]

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, 0)
            await desk.approvals_shown(1)
            tg.start_soon(one, 1)
            await anyio.wait_all_tasks_blocked()  # the second question has reached its approval
            for i, result in enumerate(answers):
                await desk.approvals_shown(i + 1)
                desk.answer(i, result)
    return decisions


async def test_one_allow_lets_every_waiting_question_of_that_server_ask() -> None:
    desk = Desk()
    pipeline = guarded(desk, ASK)
    decisions = await _both(pipeline, desk, UIResult("accept"))
    assert decisions == [Reply("accept", "person", content={"name": "Ada"})] * 2
    assert len(desk.approvals) == 1
    assert len(desk.forms) == 2


async def test_a_refused_approval_refuses_only_its_own_question_and_the_next_one_is_asked() -> None:
    desk = Desk()
    pipeline = guarded(desk, ASK)
    decisions = await _both(pipeline, desk, UIResult("decline"), UIResult("decline"))
    assert decisions == [Reply("decline", "person", reason="not_approved")] * 2
    assert len(desk.approvals) == 2  # the second question was never let through by the first refusal
    assert desk.forms == []


async def test_after_a_refusal_the_next_question_may_still_be_allowed_by_its_own_approval() -> None:
    desk = Desk()
    pipeline = guarded(desk, ASK)
    decisions = await _both(pipeline, desk, UIResult("cancel"), UIResult("accept"))
    assert decisions == [
        Reply("cancel", "person", reason="not_approved"),
        Reply("accept", "person", content={"name": "Ada"}),
    ]
    assert len(desk.forms) == 1


async def test_without_remembering_each_waiting_question_asks_for_its_own_approval() -> None:
    desk = Desk()
    pipeline = guarded(desk, ASK, remember_approval=False)
    decisions = await _both(pipeline, desk, UIResult("accept"), UIResult("accept"))
    assert [d.action for d in decisions] == ["accept", "accept"]
    assert len(desk.approvals) == 2


async def test_an_approval_withdrawn_with_its_call_lets_the_next_question_ask_for_its_own() -> None:
    desk = Desk()
    pipeline = guarded(desk, ASK)
    second: list[Any] = []

    async def later() -> None:
        second.append((await run(pipeline))[0])

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            async with anyio.create_task_group() as first:
                first.start_soon(run, pipeline)
                await desk.approvals_shown(1)
                tg.start_soon(later)
                await anyio.wait_all_tasks_blocked()
                first.cancel_scope.cancel()  # the first call ended: its approval is withdrawn
            await desk.approvals_shown(2)
            desk.answer(1, UIResult("accept"))
    assert second == [Reply("accept", "person", content={"name": "Ada"})]

"""The pipeline: the stages in order, the modes the client declares, and who hears of each outcome.

`Pipeline.run` passes an `Elicitation` through the stages until one decides, turns the decision
into an `Outcome` and tells the observers (the audit sink, `mcp-elicit call`, tests). A stage that
raises, or a chain where no stage decides, cancels the question: the pipeline never crashes the
session and never answers accept by accident. An observer that raises turns an accept into a
decline (fail closed: an answer that could not be recorded is not sent), or into what its
`OutcomeNotRecorded` says. Observers find the decision in `e.decision`.

The default chain includes the secret guard (`client/secret_guard.py`, F5) before `ask`.
`insert(stage, after=...)` / `insert(stage, before=...)` and `replace(stage)` compose a chain.

A question withdrawn while it is open (the request cancelled: the server's tool gave up, the call
ended, the session closed) is told to the observers too, as ``cancel`` by ``timeout`` with the
reason ``withdrawn``, so the trail holds a record of every question a person was shown; that
record is written shielded from the cancellation, for at most `WITHDRAWN_RECORD_SECONDS`. A question
open when the person stopped the client (Ctrl-C: `Pipeline.interrupt`) is recorded when withdrawn
as ``cancel`` by ``person`` with the reason ``interrupted``: it was the person, not a clock.

`Pipeline.screen` runs only the screening stages (`check_mode`, `gate_schema`) on raw params; the
transport guard uses it to refuse requests the SDK would otherwise reject without our reasons.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

import anyio

from mcp_elicit.client.model import Decision, Elicitation, Outcome, Refuse, Reply
from mcp_elicit.client.secret_guard import SecretGuard
from mcp_elicit.client.stages import MODES, Stage, default_stages
from mcp_elicit.client.ui_protocol import UserInterface
from mcp_elicit.core import limits
from mcp_elicit.errors import ConfigError, OutcomeNotRecorded

__all__ = [
    "INTERRUPTED",
    "SCREENING_STAGES",
    "WITHDRAWN",
    "WITHDRAWN_RECORD_SECONDS",
    "Observer",
    "Pipeline",
]

logger = logging.getLogger(__name__)

SCREENING_STAGES: Final = ("check_mode", "gate_schema")

# The reason recorded for a question withdrawn while it was open.
WITHDRAWN: Final = "withdrawn"
# The reason recorded for a question the person withdrew by stopping the client (Ctrl-C); the one
# a UI that raised KeyboardInterrupt gets too (client/asking.py).
INTERRUPTED: Final = "interrupted"
# Seconds the observers (the audit trail) get to record a withdrawn question, shielded from the
# cancellation that withdrew it: a sink's own bounds end a write sooner; this keeps a hung one from
# holding up the session's shutdown.
WITHDRAWN_RECORD_SECONDS: Final = 5.0

Observer = Callable[[Elicitation, Outcome], Awaitable[None] | None]


class Pipeline:
    """The stages of the client side, bound to one UI.

    `modes` are the elicitation modes the client declares (C1): form only by default; add "url"
    only with a UI that can show URLs and the URL check stage in the chain.
    """

    def __init__(
        self,
        ui: UserInterface,
        *,
        modes: Iterable[str] = ("form",),
        stages: Iterable[Stage] | None = None,
        observers: Iterable[Observer] = (),
        idle_timeout: float | None = limits.ELICITATION_IDLE_TIMEOUT_SECONDS,
        max_reasks: int = limits.MAX_REASKS,
        max_waiting: int = limits.MAX_WAITING_ELICITATIONS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ui = ui
        self.modes = frozenset(modes)
        if not self.modes or not self.modes <= MODES:
            raise ConfigError(
                "modes", f"must be a non-empty subset of {sorted(MODES)} (C1), not {sorted(self.modes)}"
            )
        self.stages: list[Stage] = list(
            stages
            if stages is not None
            else default_stages(ui, idle_timeout=idle_timeout, max_reasks=max_reasks, max_waiting=max_waiting)
        )
        self.observers: list[Observer] = list(observers)
        self.clock = clock
        self._open: set[int] = set()  # id() of each question in `run` now
        self._interrupted: set[int] = set()  # those of them the person stopped the client on
        if stages is None:
            self.insert(SecretGuard(ui), before="ask")

    # -- composing ----------------------------------------------------------------------------

    def stage(self, name: str) -> Stage:
        """The stage called `name`; KeyError if there is none."""
        return self.stages[self._index(self.names, name)]

    @property
    def names(self) -> list[str]:
        """The stage names, in order."""
        return [s.name for s in self.stages]

    def insert(self, stage: Stage, *, after: str | None = None, before: str | None = None) -> None:
        """Add `stage` right after the stage called `after`, or right before `before`.

        With neither, before `ask` (the extension point) or, in a chain without one, at the end.
        KeyError when the named stage is not in the chain; ConfigError when both are given.
        """
        names = self.names
        if after is not None and before is not None:
            raise ConfigError("insert", "give after or before, not both")
        if after is not None:
            at = self._index(names, after) + 1
        elif before is not None:
            at = self._index(names, before)
        else:
            at = names.index("ask") if "ask" in names else len(names)
        self.stages.insert(at, stage)

    def replace(self, stage: Stage) -> None:
        """Put `stage` in place of the stage with the same name; KeyError when there is none."""
        self.stages[self._index(self.names, stage.name)] = stage

    @staticmethod
    def _index(names: list[str], name: str) -> int:
        try:
            return names.index(name)
        except ValueError:
            raise KeyError(name) from None

    # -- running ------------------------------------------------------------------------------

    def interrupt(self) -> None:
        """The person stopped the client (Ctrl-C) while questions may be open: each question open
        now is recorded, when it is withdrawn, as ``cancel`` by ``person`` with the reason
        ``interrupted`` rather than as withdrawn by ``timeout``. Questions asked later are not
        affected. Safe to call from a signal handler (it only marks)."""
        self._interrupted.update(self._open)

    async def run(self, e: Elicitation) -> tuple[Decision, Outcome]:
        started = time.perf_counter()
        self._open.add(id(e))
        try:
            decision = await self._through(e, self.stages)
        except anyio.get_cancelled_exc_class():
            withdrawn = (
                Reply("cancel", "person", reason=INTERRUPTED)
                if id(e) in self._interrupted
                else Reply("cancel", "timeout", reason=WITHDRAWN)
            )
            with anyio.CancelScope(shield=True), anyio.move_on_after(WITHDRAWN_RECORD_SECONDS):
                await self._finish(e, withdrawn, started)
            raise
        finally:
            self._open.discard(id(e))
            self._interrupted.discard(id(e))
        if decision is None:
            logger.error("no stage decided on the elicitation; it is cancelled")
            decision = Reply("cancel", "error", reason="no_decision")
        decision, outcome = await self._finish(e, decision, started)
        # An effect a stage deferred until the decision is on record (URL mode opens the page
        # here). If it changes the answer, that correction is recorded too.
        after, e.after_recorded = e.after_recorded, None
        if after is not None and isinstance(decision, Reply) and decision.action == "accept":
            final = await after()
            if final != decision:
                decision, outcome = await self._finish(e, final, started)
        return decision, outcome

    async def screen(self, e: Elicitation) -> tuple[Refuse, Outcome] | None:
        """The screening stages only: a refusal and its outcome, or None when the request may pass."""
        started = time.perf_counter()
        decision = await self._through(e, [s for s in self.stages if s.name in SCREENING_STAGES])
        if not isinstance(decision, Refuse):
            return None
        _, outcome = await self._finish(e, decision, started)
        return decision, outcome

    async def _through(self, e: Elicitation, stages: Iterable[Stage]) -> Decision | None:
        for s in stages:
            try:
                decision = await s(e)
            except Exception:
                logger.exception("stage %r failed; the elicitation is cancelled", s.name)
                return Reply("cancel", "error", reason=f"stage_failed:{s.name}")
            if decision is not None:
                return decision
        return None

    async def _finish(self, e: Elicitation, decision: Decision, started: float) -> tuple[Decision, Outcome]:
        outcome = Outcome.of(e, decision, (time.perf_counter() - started) * 1000)
        e.decision, e.outcome = decision, outcome
        for observer in self.observers:
            try:
                result = observer(e, outcome)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                if isinstance(exc, OutcomeNotRecorded):  # the sink could not write: one line, no traceback
                    logger.error("%s", exc)
                else:
                    logger.exception("an outcome observer failed")
                if isinstance(decision, Reply) and decision.action == "accept":
                    if isinstance(exc, OutcomeNotRecorded) and exc.action == "cancel":
                        decision = Reply("cancel", "error", reason=exc.reason)
                    else:
                        reason = exc.reason if isinstance(exc, OutcomeNotRecorded) else "observer_failed"
                        decision = Reply("decline", "error", reason=reason)
                    outcome = Outcome.of(e, decision, outcome.latency_ms)
                    e.decision = decision
        return decision, outcome

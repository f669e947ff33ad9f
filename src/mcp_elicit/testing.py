"""Fakes that users of the library need in their own tests too."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from mcp_elicit.audit.base import Filters, SinkBase, chain_records
from mcp_elicit.core.chain import VerifyReport, verify_chain
from mcp_elicit.core.consent import GENESIS_HASH, ConsentEvent, Level
from mcp_elicit.errors import AuditWriteError, InvalidArgument
from mcp_elicit.ui.scripted import ScriptedUI

__all__ = ["ManualClock", "MemoryAuditSink", "ScriptedUI"]


class ManualClock:
    """A clock that moves only when told to: `clock()` returns seconds, `advance(s)` moves it."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise InvalidArgument("seconds", "a clock does not run backwards")
        self._now += seconds


class MemoryAuditSink(SinkBase):
    """An audit sink in a list, for tests: `records` is the stored list (edit it to simulate tampering).

    Set `fail_writes` to make every append raise AuditWriteError, to test fail-closed handling.
    """

    def __init__(self, *, level: Level = "metadata") -> None:
        super().__init__(level, None)
        self.records: list[dict[str, Any]] = []
        self.fail_writes = False

    def append_many(self, events: Iterable[ConsentEvent]) -> list[dict[str, Any]]:
        with self._lock:
            if self.fail_writes:
                raise AuditWriteError("memory", "records", "fail_writes is set")
            last = self.records[-1] if self.records else None
            seq, prev = (last["seq"], last["hash"]) if last else (0, GENESIS_HASH)
            new = chain_records(events, self.level, seq, prev)
            self.records.extend(new)
        return new

    def _records(self, filters: Filters) -> Iterator[dict[str, Any]]:
        return iter([r for r in list(self.records) if filters.matches(r)])

    def get(self, record_id: str) -> dict[str, Any] | None:
        return next((r for r in self.records if r.get("id") == record_id), None)

    def verify(self, expected_head: str | None = None) -> VerifyReport:
        return verify_chain(list(self.records), expected_head)

    def close(self) -> None:
        pass

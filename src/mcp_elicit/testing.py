"""Fakes that users of the library need in their own tests too."""

from __future__ import annotations

__all__ = ["ManualClock"]


class ManualClock:
    """A clock that moves only when told to: `clock()` returns seconds, `advance(s)` moves it."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not run backwards")
        self._now += seconds


# -- MemoryAuditSink (audit trail) ---------------------------------------------------------------
import threading  # noqa: E402
from collections.abc import Iterable as _Iterable  # noqa: E402
from collections.abc import Iterator as _Iterator  # noqa: E402
from datetime import datetime as _datetime  # noqa: E402
from typing import Any as _Any  # noqa: E402

from mcp_elicit.audit.base import Filters as _Filters  # noqa: E402
from mcp_elicit.audit.base import chain_records as _chain_records  # noqa: E402
from mcp_elicit.core.consent import GENESIS_HASH as _GENESIS_HASH  # noqa: E402
from mcp_elicit.core.consent import ConsentEvent as _ConsentEvent  # noqa: E402
from mcp_elicit.core.consent import Level as _Level  # noqa: E402
from mcp_elicit.core.consent import VerifyReport as _VerifyReport  # noqa: E402
from mcp_elicit.core.consent import verify_chain as _verify_chain  # noqa: E402
from mcp_elicit.errors import AuditWriteError as _AuditWriteError  # noqa: E402

__all__ += ["MemoryAuditSink"]


class MemoryAuditSink:
    """An audit sink in a list, for tests: `records` is the stored list (edit it to simulate tampering).

    Set `fail_writes` to make every append raise AuditWriteError, to test fail-closed handling.
    """

    def __init__(self, *, level: _Level = "metadata") -> None:
        self.level: _Level = level
        self.records: list[dict[str, _Any]] = []
        self.fail_writes = False
        self._lock = threading.Lock()

    def append(self, event: _ConsentEvent) -> dict[str, _Any] | None:
        records = self.append_many((event,))
        return records[0] if records else None

    def append_many(self, events: _Iterable[_ConsentEvent]) -> list[dict[str, _Any]]:
        with self._lock:
            if self.fail_writes:
                raise _AuditWriteError("memory", "records", "fail_writes is set")
            last = self.records[-1] if self.records else None
            seq, prev = (last["seq"], last["hash"]) if last else (0, _GENESIS_HASH)
            new = _chain_records(events, self.level, seq, prev)
            self.records.extend(new)
        return new

    def iter_records(
        self,
        *,
        server: str | None = None,
        action: str | None = None,
        since: float | _datetime | str | None = None,
        until: float | _datetime | str | None = None,
    ) -> _Iterator[dict[str, _Any]]:
        f = _Filters.of(server, action, since, until)
        return iter([r for r in list(self.records) if f.matches(r)])

    def get(self, record_id: str) -> dict[str, _Any] | None:
        return next((r for r in self.records if r.get("id") == record_id), None)

    def verify(self, expected_head: str | None = None) -> _VerifyReport:
        return _verify_chain(list(self.records), expected_head)

    def close(self) -> None:
        pass

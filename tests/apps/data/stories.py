"""The guarded-query stories the end-to-end tests run: a query, the person's answer, and what must
come back and be left in the consent trail. Each takes a `Session`, so the same story runs on
every engine, era, transport and client."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from mcp_elicit.apps.data.engine import Engine, QueryResult
from mcp_elicit.apps.data.guard import Estimate
from mcp_elicit.errors import DataEngineError
from tests.apps.data.conftest import Target

CHEAP = "SELECT country, count(*) AS n FROM customers GROUP BY country ORDER BY country"
EXPENSIVE = "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind"
PII = "SELECT name, email, phone, segment FROM customers ORDER BY id LIMIT 2"
WRITES = [
    "DELETE FROM customers",
    "INSERT INTO customers (id) VALUES (100000)",
    "UPDATE customers SET email = 'x'",
    "DROP TABLE customers",
    "CREATE TABLE stolen AS SELECT * FROM customers",
    "SELECT 1; DELETE FROM customers",
    "WITH gone AS (DELETE FROM customers RETURNING *) SELECT * FROM gone",
    "SELECT * INTO stolen FROM customers",
    "TRUNCATE customers",
]


def payload(result: Any) -> dict[str, Any]:
    data = getattr(result, "structured_content", None)
    if data is None:
        data = json.loads("".join(getattr(c, "text", "") for c in result.content))
    assert isinstance(data, dict)
    return data


def query_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The data server's own records (one per query decision), not the kit's question records."""
    return [r for r in records if "details" in r]


@dataclass
class Session:
    """`call(sql)` runs the query tool; `answer(a)` queues the person's next answer (a wire
    ElicitResult); `shown()` lists the (message, schema) of every question asked so far;
    `records()` reads the server's consent trail."""

    target: Target
    call: Callable[[str], Awaitable[Any]]
    answer: Callable[[dict[str, Any]], None]
    shown: Callable[[], list[tuple[str, dict[str, Any]]]]
    records: Callable[[], list[dict[str, Any]]]
    is_error: Callable[[Any], bool] = lambda r: bool(getattr(r, "is_error", False))

    def last_record(self) -> dict[str, Any]:
        return query_records(self.records())[-1]


def pii_labels(target: Target) -> list[str]:
    t = f"{target.schema}.customers"
    return [f"{t}.email (pii)", f"{t}.name (personal)", f"{t}.phone (pii)"]


async def cheap_runs_unasked(s: Session) -> None:
    before = len(s.shown())
    result = await s.call(CHEAP)
    out = payload(result)
    assert (out["status"], out["asked"], out["category"]) == ("ran", False, "ran_unasked")
    assert out["columns"] == ["country", "n"]
    assert len(out["rows"]) == 4
    assert len(s.shown()) == before
    r = s.last_record()
    assert (r["reason"], r["action"], r["decided_by"]) == ("ran_unasked", "accept", "policy")


async def expensive_asks_then_runs(s: Session) -> None:
    s.answer({"action": "accept", "content": {"decision": "run"}})
    out = payload(await s.call(EXPENSIVE))
    assert (out["status"], out["asked"], out["category"]) == ("ran", True, "user_accepted")
    assert [row[0] for row in out["rows"]] == ["click", "purchase", "view"]
    message, schema = s.shown()[-1]
    threshold = s.target.config.thresholds(s.target.engine, s.target.schema).total
    assert f"threshold {threshold:,.0f} rows" in message
    assert f"{s.target.schema}.events" in message
    options = [o["const"] for o in schema["properties"]["decision"]["oneOf"]]
    assert options == ["run", "dont_run"]  # nothing to mask: no masking choice offered
    r = s.last_record()
    assert (r["reason"], r["action"], r["decided_by"]) == ("user_accepted", "accept", "person")
    assert r["details"]["estimate"]["total"] > threshold
    assert r["details"]["estimate"]["largest_table"] == f"{s.target.schema}.events"


async def pii_names_columns_and_runs_masked(s: Session) -> None:
    s.answer({"action": "accept", "content": {"decision": "run_masked"}})
    out = payload(await s.call(PII))
    assert (out["status"], out["category"]) == ("ran", "user_accepted_masked")
    assert out["rows"] == [[None, None, None, "retail"], [None, None, None, "business"]]
    message, schema = s.shown()[-1]
    for label in pii_labels(s.target):
        assert label in message
    assert "segment" not in message.split("Query:")[0]  # "non-pii" is not PII
    assert [o["const"] for o in schema["properties"]["decision"]["oneOf"]] == [
        "run",
        "run_masked",
        "dont_run",
    ]
    r = s.last_record()
    assert (r["reason"], r["action"]) == ("user_accepted_masked", "accept")
    t = f"{s.target.schema}.customers"
    assert r["details"]["masked"] == [f"{t}.email", f"{t}.name", f"{t}.phone"]
    assert [c[1] for c in r["details"]["pii_columns"]] == ["email", "name", "phone"]


async def pii_not_run_on(s: Session, action: str) -> None:
    s.answer({"action": action})
    result = await s.call(PII)
    out = payload(result)
    expected = {"decline": ("declined", "user_declined"), "cancel": ("cancelled", "user_cancelled")}[action]
    assert (out["status"], out["outcome"]) == ("not_run", expected[0])
    assert "rows" not in out
    r = s.last_record()
    assert (r["reason"], r["action"], r["decided_by"]) == (expected[1], action, "person")
    assert len(r["details"]["pii_columns"]) == 3


async def writes_are_refused(s: Session) -> None:
    before = len(s.shown())
    for sql in WRITES:
        result = await s.call(sql)
        out = payload(result)
        assert s.is_error(result), sql
        assert (out["status"], out["reason"]) == ("refused", "not_read_only"), sql
        r = s.last_record()
        assert (r["reason"], r["action"], r["decided_by"]) == ("not_read_only", "decline", "policy")
    assert len(s.shown()) == before


STORY = [
    cheap_runs_unasked,
    expensive_asks_then_runs,
    pii_names_columns_and_runs_masked,
    lambda s: pii_not_run_on(s, "decline"),
    lambda s: pii_not_run_on(s, "cancel"),
    writes_are_refused,
]


@dataclass
class CountingEngine:
    """A real engine that counts the statements it plans and runs (to prove one never ran), and can be told
    that its planner or its catalog is unavailable."""

    inner: Engine
    ran: list[str] = field(default_factory=list)
    planned: list[str] = field(default_factory=list)
    estimate_fails: bool = False
    tables_fail: bool = False

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dialect(self) -> str:
        return self.inner.dialect

    @property
    def default_schema(self) -> str:
        return self.inner.default_schema

    def tables(self) -> Any:
        if self.tables_fail:
            raise DataEngineError(self.inner.name, "catalog unavailable (injected)")
        return self.inner.tables()

    def functions(self, names: Collection[str] | None = None) -> frozenset[str]:
        if self.tables_fail:
            raise DataEngineError(self.inner.name, "catalog unavailable (injected)")
        return self.inner.functions(names)

    def hidden_functions(self, sql: str) -> tuple[tuple[str, str], ...]:
        if self.tables_fail:
            raise DataEngineError(self.inner.name, "catalog unavailable (injected)")
        return self.inner.hidden_functions(sql)

    def estimate(self, sql: str) -> Estimate:
        self.planned.append(sql)
        if self.estimate_fails:
            raise DataEngineError(self.inner.name, "EXPLAIN unavailable (injected)")
        return self.inner.estimate(sql)

    def run(self, sql: str, max_rows: int) -> QueryResult:
        self.ran.append(sql)
        return self.inner.run(sql, max_rows)

    def output_names(self, sql: str) -> tuple[str, ...]:
        return self.inner.output_names(sql)

    def close(self) -> None:
        self.inner.close()


class WalkedAway:
    """An elicitation callback for a person who walked away: no answer until `release()` (called
    once the server gave up, so the client's task ends)."""

    def __init__(self) -> None:
        import anyio

        self._released = anyio.Event()

    async def __call__(self, context: Any, params: Any) -> Any:
        import mcp_types as t

        await self._released.wait()
        return t.ElicitResult(action="cancel")

    def release(self) -> None:
        self._released.set()

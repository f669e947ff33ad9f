"""The guarded data server: list_tables, describe_table and query, built only with the server kit.

`query` runs a statement only when the SQL parser accepts it as one read; it asks the engine
for its own estimate and works out which columns the query reads, then `guard.decide` says run,
ask or refuse. Asking is one `ask` with a real single-select form, so the same code pushes
`elicitation/create` on 2025-11-25 and returns an InputRequiredResult on 2026-07-28. Every
outcome, the refusals included, is written to the consent trail (when an audit sink is set)
before anything runs: the SQL as the record's message (its digest at the ``metadata`` level, its
text at ``request`` and above), the category as its reason, and the estimate and the personal
data columns under ``details``.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import functools
import json
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Final

import anyio.to_thread
import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

from mcp_elicit.apps.data.assess import CatalogCache, assess, schema_of
from mcp_elicit.apps.data.catalog import DataConfig
from mcp_elicit.apps.data.engine import Engine, QueryResult, TableInfo
from mcp_elicit.apps.data.guard import CATEGORIES, Decision, Estimate, matching_tags
from mcp_elicit.apps.data.sql import masked_sql
from mcp_elicit.apps.data.wording import (
    confirmation_message,
    recorded_detail,
    refusal_detail,
    rounded,
)
from mcp_elicit.core.forms import Titles
from mcp_elicit.errors import (
    AnswerError,
    ClientGone,
    ClientRefused,
    DataEngineError,
    ElicitationTimeout,
    QueryRefused,
)
from mcp_elicit.server import ElicitSettings, ask, client_supports, install
from mcp_elicit.server import audit as audit_trail

__all__ = ["DATA_SERVER_NAME", "CostChoice", "PiiChoice", "build_data_server", "refusal_detail"]

logger = logging.getLogger("mcp_elicit.data")

DATA_SERVER_NAME: Final = "mcp-elicit-data"
CONFIRM_KEY: Final = "confirm-query"
MASKED_ERROR: Final = (
    "the masked run failed; the engine's message is withheld, as it may quote a masked value"
    " (run the query unmasked, or fix it without the masked columns, to see it)"
)
# Characters of one text cell in a result (the rest cut, marked with "…"), and of all the rows
# as JSON (later rows are left out): a model's context, and the server's memory, are not unbounded.
MAX_CELL_CHARS: Final = 100_000
MAX_RESULT_CHARS: Final = 2_000_000


class PiiChoice(enum.Enum):
    RUN = "run"
    RUN_MASKED = "run_masked"
    DONT_RUN = "dont_run"


class CostChoice(enum.Enum):
    RUN = "run"
    DONT_RUN = "dont_run"


_TITLES = {"run": "Run it", "run_masked": "Run it with those columns masked", "dont_run": "Don't run it"}


class PiiConfirmation(BaseModel):
    decision: Annotated[PiiChoice, Titles({k: v for k, v in _TITLES.items()})] = Field(
        title="What should happen to this query?"
    )


class CostConfirmation(BaseModel):
    decision: Annotated[CostChoice, Titles({k: _TITLES[k] for k in ("run", "dont_run")})] = Field(
        title="What should happen to this query?"
    )


def _plain(value: Any) -> Any:
    """A JSON value for one cell: arrays, JSON and structs stay nested, bytes are written as the
    engines write them (`\\x` and hex), and a float that is not finite is a string ("NaN"), which
    JSON has no number for."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float | decimal.Decimal):
        if math.isfinite(value):
            return float(value)
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    return str(value)


def _bounded_rows(rows: Iterable[Iterable[Any]]) -> tuple[list[list[Any]], bool]:
    """The rows as JSON values within `MAX_CELL_CHARS` per text cell and `MAX_RESULT_CHARS` in
    all (the first row always comes back), and whether anything was cut."""
    out: list[list[Any]] = []
    size, cut = 0, False
    for row in rows:
        cells = []
        for value in row:
            cell = _plain(value)
            if isinstance(cell, str) and len(cell) > MAX_CELL_CHARS:
                cell, cut = cell[:MAX_CELL_CHARS] + "…", True
            cells.append(cell)
        size += len(json.dumps(cells, ensure_ascii=False, default=str))
        if out and size > MAX_RESULT_CHARS:
            return out, True
        out.append(cells)
    return out, cut


def _result(payload: dict[str, Any], *, error: bool = False) -> t.CallToolResult:
    text = json.dumps(payload, ensure_ascii=False, default=str)
    return t.CallToolResult(
        content=[t.TextContent(type="text", text=text)], structured_content=payload, is_error=error
    )


def _asked_category(answer: Any, decision: Decision) -> tuple[str, tuple[str, ...]]:
    """The category of the person's answer to the confirmation, and the columns it masks."""
    data = answer.data
    choice = data.decision.value if answer.accepted and data is not None else None
    if choice in (None, "dont_run"):
        return ("user_cancelled" if answer.cancelled else "user_declined"), ()
    if choice == "run_masked":
        return "user_accepted_masked", tuple(f"{c.table}.{c.column}" for c in decision.pii)
    return "user_accepted", ()


@dataclass
class _Guarded:
    engine: Engine
    config: DataConfig
    settings: ElicitSettings
    catalog: CatalogCache = field(init=False)

    def __post_init__(self) -> None:
        self.catalog = CatalogCache(self.engine, self.config.catalog_ttl, self.settings.clock)

    async def call(self, fn: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args)

    async def tables(self) -> tuple[TableInfo, ...] | None:
        snapshot = await self.call(self.catalog.get)
        return None if snapshot is None else snapshot[0]

    def details(
        self,
        category: str,
        *,
        estimate: Estimate | None = None,
        decision: Decision | None = None,
        masked: tuple[str, ...] = (),
        **more: Any,
    ) -> dict[str, Any]:
        """The data server's facts of one query decision, the record's ``details``."""
        largest = estimate.largest if estimate is not None else None
        return {
            "engine": self.engine.name,
            "category": category,
            "estimate": None
            if estimate is None
            else {
                "total": rounded(estimate.total),
                "largest_table": largest[0] if largest else None,
                "largest_rows": rounded(largest[1]) if largest else None,
                "processed": rounded(estimate.processed),
            },
            "threshold": rounded(self.config.thresholds(self.engine.name, self.engine.default_schema).total),
            "exceeded": [
                [e.table or ("(processed)" if e.processed else ""), rounded(e.rows), rounded(e.limit)]
                for e in decision.exceeded
            ]
            if decision
            else [],
            "pii_columns": [[c.table, c.column, list(c.tags)] for c in decision.pii] if decision else [],
            "masked": list(masked),
            **more,
        }

    async def record(
        self, ctx: Context[Any, Any], sql: str, category: str, *, action: str, decided_by: str, **facts: Any
    ) -> None:
        """The record of a query decided without showing anything to anyone: mode "none" (an
        asked query's record is the kit's record of its question, written through
        `ask(record_as=...)`, see `query`)."""
        details = self.details(category, **facts)
        await audit_trail.record(
            ctx, self.settings, action, decided_by, sql, reason=category, details=details, mode="none"
        )

    async def refuse(
        self, ctx: Context[Any, Any], sql: str, exc: QueryRefused, **facts: Any
    ) -> t.CallToolResult:
        detail = exc.detail or CATEGORIES.get(exc.reason, exc.reason)  # never an empty detail
        # The detail can quote the query (the parser's context, a literal), so it is kept only
        # at the levels that store the query's text; "metadata" keeps its digest alone.
        if getattr(self.settings.audit, "level", "metadata") in ("request", "request_response"):
            facts["detail"] = recorded_detail(detail)
        await self.record(ctx, sql, exc.reason, action="decline", decided_by="policy", **facts)
        # The text starts "query refused (reason)"; it can quote the query: one inert line.
        logger.info("%s", recorded_detail(str(exc)))
        return _result({"status": "refused", "reason": exc.reason, "detail": detail}, error=True)

    async def query(self, ctx: Context[Any, Any], sql: str) -> t.CallToolResult:
        engine, config = self.engine, self.config
        can_ask = client_supports(ctx, "elicitation.form")
        try:
            seen = await self.call(
                functools.partial(assess, engine, config, sql, can_ask=can_ask, catalog=self.catalog)
            )
        except QueryRefused as exc:
            return await self.refuse(ctx, sql, exc)
        tables, estimate, thresholds, decision = seen.tables, seen.estimate, seen.thresholds, seen.decision
        parsed = seen.parsed
        facts: dict[str, Any] = {"estimate": estimate, "decision": decision}
        if decision.kind == "refuse":
            refused = QueryRefused(decision.category, refusal_detail(decision, seen.no_estimate_why))
            return await self.refuse(ctx, sql, refused, **facts)
        run_sql, category = sql, decision.category
        masked: tuple[str, ...] = ()
        if decision.kind == "ask":
            form = PiiConfirmation if decision.pii else CostConfirmation
            message = confirmation_message(sql, estimate, thresholds.total, decision)
            noted: list[str] = []

            def record_as(answer: Any, why: str) -> tuple[str, str, dict[str, Any]]:
                # One record for the question: the kit's (its form, answer and latency) with
                # the query as its message, the category as its reason and these facts.
                if answer is None:  # nobody answered: `why` is the kit's timeout, client_gone, ...
                    noted.append("not_answered")
                    return sql, "not_answered", self.details("not_answered", failure=why, **facts)
                category, masked = _asked_category(answer, decision)
                noted.append(category)
                return sql, category, self.details(category, masked=masked, **facts)

            try:
                # "Don't run it" is the person's no: the trail records it as a decline
                no = {"decision": "dont_run"}
                answer = await ask(ctx, message, form, key=CONFIRM_KEY, declines=no, record_as=record_as)
            except (ElicitationTimeout, ClientGone, ClientRefused, AnswerError) as exc:
                # nobody answered in time, the client went away, refused the form, or kept sending
                # answers that do not fit it: the query does not run, and its record says so
                if not noted:  # the kit wrote no record of it (a question it never sent)
                    by = "timeout" if isinstance(exc, ElicitationTimeout) else "error"
                    await self.record(ctx, sql, "not_answered", action="cancel", decided_by=by, **facts)
                return _result(
                    {"status": "not_run", "outcome": "not_answered", "detail": str(exc)}, error=True
                )
            category, masked = _asked_category(answer, decision)
            if category in ("user_declined", "user_cancelled"):
                outcome = "cancelled" if answer.cancelled else "declined"
                return _result({"status": "not_run", "outcome": outcome})
            if masked:
                schema = schema_of(tables or ())
                run_sql = masked_sql(
                    parsed, schema, engine.default_schema, {(c.table, c.column) for c in decision.pii}
                )
        else:
            await self.record(ctx, sql, category, action="accept", decided_by="policy", **facts)
        try:
            result = await self.call(engine.run, run_sql, config.max_rows)
        except DataEngineError as exc:
            # A masked run's error may quote a masked value (a failed cast names the text it read).
            detail = exc.detail if not masked else f"{engine.name}: {MASKED_ERROR}"
            return _result({"status": "failed", "reason": "engine_error", "detail": detail}, error=True)
        if masked:
            result = await self._plain_names(sql, result)
        largest = estimate.largest if estimate is not None else None
        rows, cut = _bounded_rows(result.rows)
        return _result(
            {
                "status": "ran",
                "asked": decision.kind == "ask",
                "category": category,
                "columns": list(result.columns),
                "rows": rows,
                "row_count": len(rows),
                "truncated": result.truncated or cut,
                "masked": list(masked),
                "estimate": None
                if estimate is None
                else {
                    "total": rounded(estimate.total),
                    "largest": [largest[0], rounded(largest[1])] if largest else None,
                    "processed": rounded(estimate.processed),
                },
            }
        )

    async def _plain_names(self, sql: str, result: QueryResult) -> QueryResult:
        """`result` (of the masked rewrite, whose columns qualify named afresh: `_col_0`, folded
        case) under the names the plain query's columns have, so a masked run and a plain run of
        one query look the same to the model; the rewrite's own names if the engine cannot say."""
        try:
            names = await self.call(self.engine.output_names, sql)
        except DataEngineError as exc:
            logger.info("kept the masked run's column names: %s", exc)
            return result
        if len(names) != len(result.columns):
            logger.info("kept the masked run's column names: the plain query has %d", len(names))
            return result
        return dataclasses.replace(result, columns=tuple(names))

    async def list_tables(self) -> t.CallToolResult:
        tables = await self.tables()
        if tables is None:
            return _result({"status": "failed", "reason": "no_catalog"}, error=True)
        rows = []
        for table in tables:
            tagged = [c.name for c in table.columns if self.pii_tags_of(table, c.name, c.comment)]
            rows.append({"table": table.qualified, "columns": len(table.columns), "personal_data": tagged})
        return _result({"engine": self.engine.name, "tables": rows})

    def pii_tags_of(self, table: TableInfo, column: str, comment: str) -> tuple[str, ...]:
        texts = self.config.tags(table, column, comment, self.engine.default_schema)
        return matching_tags(texts, self.config.pii_tags)

    async def describe_table(self, name: str) -> t.CallToolResult:
        tables = await self.tables()
        if tables is None:
            return _result({"status": "failed", "reason": "no_catalog"}, error=True)
        wanted = name if "." in name else f"{self.engine.default_schema}.{name}"
        table = next((tb for tb in tables if tb.qualified == wanted), None)
        if table is None:
            detail = f"no table {wanted} is served; list_tables names the tables that are"
            return _result({"status": "failed", "reason": "unknown_table", "detail": detail}, error=True)
        columns = [
            {
                "name": c.name,
                "type": c.type,
                "tags": list(self.config.tags(table, c.name, c.comment, self.engine.default_schema)),
                "personal_data": list(self.pii_tags_of(table, c.name, c.comment)),
            }
            for c in table.columns
        ]
        limit = self.config.thresholds(self.engine.name, self.engine.default_schema)
        threshold = min(limit.per_table.get(table.qualified, limit.total), limit.total)  # the total holds too
        return _result({"table": table.qualified, "threshold_rows": rounded(threshold), "columns": columns})


def build_data_server(
    engine: Engine, config: DataConfig | None = None, settings: ElicitSettings | None = None
) -> MCPServer[Any]:
    """An MCP server over `engine` whose `query` tool asks before an expensive or personal-data
    query runs (see the module docstring)."""
    server: MCPServer[Any] = MCPServer(
        DATA_SERVER_NAME,
        version="0.1.0",
        instructions="Read-only SQL over a data platform. Expensive queries and queries that read "
        "columns tagged as personal data are confirmed by the person first.",
    )
    settings = install(server, settings)
    guarded = _Guarded(engine, config or DataConfig(), settings)

    @server.tool(description="List the tables, with their columns tagged as personal data.")
    async def list_tables() -> t.CallToolResult:
        return await guarded.list_tables()

    @server.tool(description="Describe a table: each column's type, tags and whether it is personal data.")
    async def describe_table(table: str) -> t.CallToolResult:
        return await guarded.describe_table(table)

    @server.tool(
        description="Run one read-only SQL query (SELECT). Expensive queries and queries reading personal "
        "data are confirmed by the person first; they may choose to mask those columns."
    )
    async def query(ctx: Context, sql: str) -> t.CallToolResult:
        return await guarded.query(ctx, sql)

    return server

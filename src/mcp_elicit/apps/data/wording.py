"""What the data server says in words: the question's message, a refusal's one-line detail, and
the cleaned, bounded form of a refusal's detail its consent record keeps.

Text from outside (the engine's error, the parser's, names from the query) is cleaned with
`core.text.clean_text` before it is shown or stored: it may hold terminal escapes, bidi controls
or any length.
"""

from __future__ import annotations

import math
import re
from typing import Final

from mcp_elicit.apps.data.guard import CATEGORIES, Decision, Estimate
from mcp_elicit.core.limits import MAX_MESSAGE_CHARS
from mcp_elicit.core.text import clean_text

__all__ = [
    "MAX_QUOTED_ENGINE_CHARS",
    "MAX_QUOTED_SQL_CHARS",
    "MAX_RECORDED_DETAIL_CHARS",
    "confirmation_message",
    "recorded_detail",
    "refusal_detail",
    "rounded",
]

# Characters of SQL quoted in the confirmation message (the rest is elided; the digest is recorded).
MAX_QUOTED_SQL_CHARS: Final = 600
# Characters of the engine's own error quoted in a no_estimate refusal (its first sentence only).
MAX_QUOTED_ENGINE_CHARS: Final = 300
# Characters of a refusal's detail kept on its consent record: the parser's or the guard's one
# line (which statement, which column or function, why), cleaned; enough for any detail the guard
# writes itself, and a bound on what the query's text (a long name, a parser message) can add.
MAX_RECORDED_DETAIL_CHARS: Final = 500


def _rows(n: float) -> str:
    return f"{n:,.0f}"


def rounded(n: float) -> int | None:
    """A row count as the person and the model read it: a whole number (the planners' estimates
    are floats); None for a limit that is not finite (`inf` in the catalog: no limit)."""
    return round(n) if math.isfinite(n) else None


def confirmation_message(sql: str, estimate: Estimate | None, threshold: float, decision: Decision) -> str:
    """What is at stake, in words: the estimate against the threshold, and each tagged column."""
    parts: list[str] = []
    if estimate is not None:
        largest = estimate.largest
        big = f" (largest: {largest[0]}, {_rows(largest[1])})" if largest else ""
        parts.append(f"Estimated rows read: {_rows(estimate.total)}{big}; threshold {_rows(threshold)} rows.")
        if estimate.multiplied:
            handled = _rows(estimate.processed)
            parts.append(f"One step of the plan (a join or a series) handles {handled} rows.")
    for e in decision.exceeded:
        where = "one step of the plan" if e.processed else e.table or "the whole query"
        parts.append(f"Over the limit: {where} {_rows(e.rows)} > {_rows(e.limit)}.")
    if decision.pii:
        parts.append("It reads personal data: " + "; ".join(c.label for c in decision.pii) + ".")
    quoted = sql if len(sql) <= MAX_QUOTED_SQL_CHARS else sql[:MAX_QUOTED_SQL_CHARS] + " …"
    text = " ".join(parts) + f"\nQuery: {quoted}"
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 1] + "…"


def _over(decision: Decision) -> list[str]:
    return [
        f"estimated {_rows(e.rows)} rows handled by one step of the plan (a join or a series), over the"
        f" limit of {_rows(e.limit)}"
        if e.processed
        else f"estimated {_rows(e.rows)} rows read, over the limit of {_rows(e.limit)}"
        if not e.table
        else f"{e.table} estimated at {_rows(e.rows)} rows, over its limit of {_rows(e.limit)}"
        for e in decision.exceeded
    ]


_INTERNAL_ERROR = re.compile(r"(?i)(internal|fatal) error\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _engine_reason(why: str) -> tuple[str, str]:
    """(engine, reason) from a planning failure's text ("duckdb: Binder Error: …"): the first
    sentence of its first line, at most `MAX_QUOTED_ENGINE_CHARS` characters, which says what the
    query got wrong; not the lines after it (the query quoted back with a caret, candidate
    functions, a stack), and not an internal error's own words (the server's log has them)."""
    engine, sep, text = why.strip().partition(": ")
    if not sep or not engine.isidentifier():
        engine, text = "", why.strip()
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    if not line:
        return engine, ""
    if _INTERNAL_ERROR.match(line):
        return engine, "an internal error in the engine; the server's log has its message"
    sentence = _SENTENCE_END.split(line, maxsplit=1)[0]
    return engine, "it said: " + clean_text(sentence, limit=MAX_QUOTED_ENGINE_CHARS, multiline=False)


def refusal_detail(decision: Decision, no_estimate_why: str = "") -> str:
    """The `detail` of a refusal `decide` made, in one line the model can relay and act on: what
    the query would need confirmed and what to do instead (cannot_ask), or why the guard could not
    weigh it (no_estimate with the engine's own words, no_catalog)."""
    category = decision.category
    if category == "cannot_ask":
        needs = _over(decision)
        if decision.pii:
            needs.append("it reads personal data: " + ", ".join(c.label for c in decision.pii))
        narrow = [
            *(
                ["read fewer rows (a narrower WHERE, fewer or smaller tables)"]
                if any(not e.processed for e in decision.exceeded)
                else []
            ),
            *(
                ["join on a condition that pairs fewer rows"]
                if any(e.processed for e in decision.exceeded)
                else []
            ),
            *(["leave out those columns"] if decision.pii else []),
        ]
        text = (
            "this query needs the person's confirmation ("
            + "; ".join(needs)
            + ") and this client cannot show the question (it does not support form elicitation); "
            "ask the person to use a client with elicitation, or narrow the query: " + " and ".join(narrow)
        )
    elif category == "no_estimate":
        engine, reason = _engine_reason(no_estimate_why)
        text = f"the query was not run: {engine or 'the engine'} could not plan it, so its cost is unknown"
        if reason:
            text += f" ({reason})"
    elif category == "no_catalog":
        text = (
            "the catalog could not be read to check which columns hold personal data, so the query "
            "is refused; try again later"
        )
    else:
        text = CATEGORIES.get(category, category)
    return clean_text(text, limit=MAX_MESSAGE_CHARS, multiline=False, defang=False)


def recorded_detail(detail: str) -> str:
    """A refusal's detail as its consent record keeps it: one line, cleaned (escapes, controls and
    format characters marked or removed), at most `MAX_RECORDED_DETAIL_CHARS` characters."""
    return clean_text(detail, limit=MAX_RECORDED_DETAIL_CHARS, multiline=False, defang=False)

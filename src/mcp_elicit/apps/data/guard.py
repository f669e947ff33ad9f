"""The guard's decision: run, ask the person, or refuse, as a value. Pure: no I/O, no SQL engine.

Inputs are facts gathered elsewhere (the engine's estimate, the columns the query reads with
their tags, whether the client can be asked); the output says what happens and why, so the
server, the tests and the benchmark all share one rule.

Tags match as whole words: a tag text is split into words made of letters, digits, ``_`` and
``-``, and a word matches when it equals a configured tag (case-folded). "non-pii" is one word
and is not "pii"; "pii: email" and "(personal)" do match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

__all__ = [
    "CATEGORIES",
    "DEFAULT_PII_TAGS",
    "DEFAULT_THRESHOLD_ROWS",
    "Decision",
    "Estimate",
    "Exceeded",
    "FailClosed",
    "PiiColumn",
    "Thresholds",
    "decide",
    "matching_tags",
]

# The known implementation's default: a query estimated to read more rows than this asks first.
DEFAULT_THRESHOLD_ROWS: Final = 1_000_000
DEFAULT_PII_TAGS: Final[tuple[str, ...]] = ("pii", "personal", "sensitive")

# What happened to a query, as stored in the consent record's `reason`.
CATEGORIES: Final[dict[str, str]] = {
    "ran_unasked": "cheap and reads no tagged column: ran without asking",
    "ran_unguarded": "would have needed a question, but a fail-open setting let it run unasked",
    "user_accepted": "the person chose to run it",
    "user_accepted_masked": "the person chose to run it with the tagged columns masked",
    "user_declined": "the person declined the form or chose not to run it",
    "user_cancelled": "the person cancelled (dismissed) the form",
    "not_answered": "nobody answered in time, the client went away, or it could not take or fill the form",
    "not_read_only": "not a single read statement",
    "not_parsed": "the SQL parser could not read it",
    "unknown_column": "a table or column the catalog does not know",
    "opaque_source": "it reads through a table function, or calls a function that is not an allowed "
    "built-in (it may read a table, file, setting or session): what it reads cannot be known (fail closed)",
    "no_estimate": "the engine gave no cost estimate (fail closed)",
    "no_catalog": "the tags of the columns read could not be looked up (fail closed)",
    "cannot_ask": "the query needs a confirmation and the client cannot show forms (fail closed)",
}

_WORD = re.compile(r"[\w-]+")


def matching_tags(texts: Iterable[str], tags: Iterable[str]) -> tuple[str, ...]:
    """The configured `tags` found as whole words in `texts` (catalog tags, column comments)."""
    wanted = {t.casefold() for t in tags}
    found: list[str] = []
    for text in texts:
        for word in _WORD.findall(text):
            word = word.strip("-").casefold()
            if word in wanted and word not in found:
                found.append(word)
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Estimate:
    """Rows the engine expects to read, per table (qualified name) and in total; and `processed`,
    the most rows one step of the plan handles (a join's output, the pairs a nested loop compares),
    which a join makes larger than all it reads (0: the engine does not say). The total is the
    tables' sum, or more when the plan reads rows of one table twice and the table counts them once
    (DuckDB's late materialization)."""

    tables: Mapping[str, float]
    total: float
    processed: float = 0.0

    @classmethod
    def of(cls, tables: Mapping[str, float], processed: float = 0.0, read: float = 0.0) -> Estimate:
        """`read`: every read the plan makes, when more than the tables' sum."""
        return cls(dict(tables), max(float(sum(tables.values())), float(read)), float(processed))

    @property
    def multiplied(self) -> bool:
        """True when one step handles more rows than the query reads in all (a join multiplies)."""
        return self.processed > self.total

    @property
    def largest(self) -> tuple[str, float] | None:
        if not self.tables:
            return None
        name = max(self.tables, key=lambda t: self.tables[t])
        return name, self.tables[name]


@dataclass(frozen=True, slots=True)
class Thresholds:
    """`total` limits the whole query; `per_table` limits one table's estimate (by qualified name)."""

    total: float = DEFAULT_THRESHOLD_ROWS
    per_table: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Exceeded:
    """One limit the estimate crosses: `table` is "" for the whole query, whose rows are those it
    reads or (`processed`) those one step of its plan handles."""

    table: str
    rows: float
    limit: float
    processed: bool = False


@dataclass(frozen=True, slots=True)
class PiiColumn:
    table: str
    column: str
    tags: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.table}.{self.column} ({', '.join(self.tags)})"


@dataclass(frozen=True, slots=True)
class FailClosed:
    """Per check: True refuses the query when the check cannot be made; False lets it go on."""

    estimate: bool = True
    catalog: bool = True
    elicitation: bool = True


@dataclass(frozen=True, slots=True)
class Decision:
    """`run` (no question), `ask` (confirm first) or `refuse` (`category` says why)."""

    kind: Literal["run", "ask", "refuse"]
    category: str
    exceeded: tuple[Exceeded, ...] = ()
    pii: tuple[PiiColumn, ...] = ()
    notes: tuple[str, ...] = ()


def exceeded_limits(estimate: Estimate, thresholds: Thresholds) -> tuple[Exceeded, ...]:
    out = [Exceeded("", estimate.total, thresholds.total)] if estimate.total > thresholds.total else []
    if estimate.multiplied and estimate.processed > thresholds.total:
        out.append(Exceeded("", estimate.processed, thresholds.total, processed=True))
    for table, rows in sorted(estimate.tables.items()):
        limit = thresholds.per_table.get(table)
        if limit is not None and rows > limit:
            out.append(Exceeded(table, rows, limit))
    return tuple(out)


def decide(
    *,
    estimate: Estimate | None,
    thresholds: Thresholds,
    pii: Iterable[PiiColumn],
    catalog_ok: bool,
    can_ask: bool,
    fail_closed: FailClosed = FailClosed(),
) -> Decision:
    """The decision for one read-only query whose columns and estimate are known (or not)."""
    pii = tuple(pii)
    notes: list[str] = []
    if estimate is None:
        if fail_closed.estimate:
            return Decision("refuse", "no_estimate", pii=pii)
        notes.append("no estimate (fail open)")
    if not catalog_ok:
        if fail_closed.catalog:
            return Decision("refuse", "no_catalog")
        notes.append("no catalog (fail open)")
    exceeded = exceeded_limits(estimate, thresholds) if estimate is not None else ()
    if not exceeded and not pii:
        return Decision("run", "ran_unasked", notes=tuple(notes))
    if not can_ask:
        if fail_closed.elicitation:
            return Decision("refuse", "cannot_ask", exceeded, pii)
        return Decision("run", "ran_unguarded", exceeded, pii, (*notes, "client cannot be asked (fail open)"))
    return Decision("ask", "", exceeded, pii, tuple(notes))

"""PostgreSQL's plan read as an estimate: rows read per table and the most rows one step handles,
from ``EXPLAIN (FORMAT JSON, VERBOSE)``. Pure: the plan comes in as parsed JSON."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, NamedTuple

from mcp_elicit.apps.data.guard import Estimate
from mcp_elicit.apps.data.sql import recursion_refused
from mcp_elicit.errors import DataEngineError

__all__ = ["IndexFound", "IndexProbe", "filtered_index_scans", "filtered_scans", "plan_estimate"]

# Nodes that hand on each input row as it comes, one out for one in (without a Filter), and the
# scans that read no more rows than they return when nothing filters them.
_ROW_FOR_ROW: Final = frozenset(
    {"Limit", "Result", "Subquery Scan", "Append", "Seq Scan", "Index Scan", "Index Only Scan"}
)


# Scans that find their rows through an index condition ("Index Cond"; a bitmap heap scan's
# "Recheck Cond" is its index's) and may drop some of them with a Filter after reading them.
_INDEX_SCANS: Final = frozenset({"Index Scan", "Index Only Scan", "Bitmap Heap Scan"})


class IndexProbe(NamedTuple):
    """An index scan with a Filter, as the plan prints it: its "Plan Rows" count the rows that pass
    the filter, not the rows the index condition finds and the scan reads."""

    schema: str
    relation: str
    alias: str
    condition: str
    filter: str


class IndexFound(NamedTuple):
    """What the planner says of an `IndexProbe`'s relation alone, each run: the rows its index
    condition finds (None when the condition cannot be planned alone: it names another table's
    column or a parameter), the rows its filter passes and the relation's rows."""

    rows: float | None
    passing: float | None
    whole: float


def plan_nodes(plan: Any) -> Iterator[dict[str, Any]]:
    """Every node of an EXPLAIN (FORMAT JSON) result, its top nodes and all below them; what is
    not a node (the plan is the server's JSON, shaped as PostgreSQL writes it) is passed over."""
    stack = [p.get("Plan") for p in plan if isinstance(p, dict)] if isinstance(plan, list) else []
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.get("Plans") or [])
            yield node


def _index_probe(node: dict[str, Any]) -> IndexProbe | None:
    if node.get("Node Type") not in _INDEX_SCANS or "Filter" not in node:
        return None
    condition = node.get("Index Cond") or node.get("Recheck Cond")
    parts = (node.get("Schema"), node.get("Relation Name"), node.get("Alias"), condition, node.get("Filter"))
    if not all(isinstance(part, str) and part for part in parts):
        return None
    return IndexProbe(*(str(part) for part in parts))


def filtered_index_scans(plan: Any) -> set[IndexProbe]:
    """Every index scan with a Filter in the plan (`IndexProbe`)."""
    return {probe for node in plan_nodes(plan) if (probe := _index_probe(node)) is not None}


def _index_rows(own: float, found: IndexFound) -> float:
    """The rows an index scan with a Filter reads each run, given its own "Plan Rows" (those that
    pass the filter): what its index condition finds; when that cannot be planned alone (a
    parameter from an outer row), its rows over the filter's share of the relation, as the
    planner multiplies the two; else the whole relation. Never fewer than its own rows."""
    if found.rows is not None:
        return max(own, found.rows)
    if found.passing and found.whole > 0:
        return max(own, min(found.whole, own * found.whole / found.passing))
    return max(own, found.whole)


def _plan_rows(node: dict[str, Any]) -> float:
    try:
        return max(0.0, float(node.get("Plan Rows", 0)))
    except (TypeError, ValueError):
        return 0.0


def _cost(node: dict[str, Any], key: str) -> float | None:
    try:
        value = float(node[key])
    except (KeyError, TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _limit_cap(node: dict[str, Any], children: list[dict[str, Any]]) -> float | None:
    """The rows a Limit pulls from its input, as the planner costs it: PostgreSQL charges a Limit
    its input's startup cost plus the share of the input's run cost for the rows it fetches
    (OFFSET and LIMIT together), so that share of the input's rows is what it reads. None when the
    costs do not say (the Limit then caps nothing)."""
    if node.get("Node Type") != "Limit":
        return None
    outer = [c for c in children if c.get("Parent Relationship") == "Outer"]
    if len(outer) != 1:
        return None
    total, start, end = (
        _cost(node, "Total Cost"),
        _cost(outer[0], "Startup Cost"),
        _cost(outer[0], "Total Cost"),
    )
    if total is None or start is None or end is None:
        return None
    rows = _plan_rows(outer[0])
    if end <= start:
        return rows
    return min(rows, rows * max(0.0, total - start) / (end - start))


def _row_for_row(node: dict[str, Any]) -> bool:
    """True for a node that hands on its input's rows as they come, without dropping any (no
    Filter), so a Limit above it stops what is below it too."""
    kind = node.get("Node Type")
    return kind in _ROW_FOR_ROW and "Filter" not in node and not node.get("Parallel Aware")


def _child_loops(
    node: dict[str, Any], child: dict[str, Any], children: list[dict[str, Any]], loops: float, base: float
) -> tuple[float, float]:
    """How many times `child` runs, and the count a Materialize under it falls back to: a Nested
    Loop's inner side once per outer row; a correlated SubPlan once per row its parent evaluates
    it on, which is at least the parent's rows and, in a filter, the rows the parent reads; the
    planner charges the parent the SubPlan's cost for each, so the parent's cost over the
    SubPlan's bounds that count (a hashed SubPlan runs once, an InitPlan once); a Materialize's
    input once per run of what encloses the loop."""
    role = child.get("Parent Relationship")
    kind = node.get("Node Type")
    if kind == "Materialize":
        return base, base
    if role == "Inner" and kind == "Nested Loop":
        outer = max((_plan_rows(c) for c in children if c.get("Parent Relationship") == "Outer"), default=1.0)
        return loops * max(1.0, outer), loops
    if role == "SubPlan" and not str(child.get("Subplan Name", "")).startswith("hashed"):
        per_row = _plan_rows(node)
        parent_cost, cost = _cost(node, "Total Cost"), _cost(child, "Total Cost")
        if parent_cost is not None and cost:
            per_row = max(per_row, parent_cost / cost)
        return loops * max(1.0, per_row), loops
    return loops, base


def filtered_scans(plan: Any) -> set[tuple[str, str]]:
    """(schema, relation) of every Seq Scan with a Filter in the plan, and every Sample Scan that
    reads its whole relation (`_reads_whole`): each reads it all (every run) though its "Plan
    Rows" count only the rows that pass the filter or the sample."""
    found: set[tuple[str, str]] = set()
    for node in plan_nodes(plan):
        relation, schema = node.get("Relation Name"), node.get("Schema")
        if _reads_whole(node) and isinstance(relation, str) and isinstance(schema, str):
            found.add((schema, relation))
    return found


def _reads_whole(node: dict[str, Any]) -> bool:
    """A Seq Scan with a Filter; a Sample Scan but a system sample without a Filter: a Bernoulli
    sample reads every page (an extension's method may), though its "Plan Rows" are the sample's,
    and a Filter drops rows of the pages it reads."""
    kind = node.get("Node Type")
    if kind == "Sample Scan":
        return "Filter" in node or node.get("Sampling Method") != "system"
    return kind == "Seq Scan" and "Filter" in node


def plan_estimate(
    plan: Any,
    sizes: Mapping[str, float] | None = None,
    indexed: Mapping[IndexProbe, IndexFound] | None = None,
) -> Estimate:
    """Per-table "Plan Rows" of every node that reads a relation, from EXPLAIN (FORMAT JSON, VERBOSE),
    and the most rows one node handles: its own "Plan Rows", or for a Nested Loop the pairs it
    compares (its outer rows times its inner rows, which are per loop).

    A parallel-aware scan's rows are per process: times the planner's own divisor for the workers
    of the Gather above it (workers, plus the leader's share), as PostgreSQL divides them; so are
    those of every node under the Gather, each process running its own copy.

    A Limit stops a scan that filters nothing when only nodes that hand on each row unchanged
    stand between them (`_ROW_FOR_ROW`): that scan reads and hands on the rows the Limit pulls
    (`_limit_cap`), not the table. A Sort, an aggregate, a hash, a join or a filter between
    them (one that may drop every row it reads) leaves the scan's whole estimate counted.

    A Seq Scan with a Filter reads its whole relation, not only the rows that pass: it counts the
    relation's rows as the planner estimates them (`sizes`, by qualified name; `filtered_scans`
    says which are needed), each time it runs. An index scan with a Filter reads the rows its
    index condition finds, not only those that pass (`indexed`, by `filtered_index_scans`).

    A node that runs many times counts its rows each time (`_child_loops`): a Nested Loop's inner
    side once per outer row, a correlated SubPlan once per row it is evaluated on."""
    tables: dict[str, float] = {}
    processed = 0.0
    roots = [p.get("Plan") for p in plan if isinstance(p, dict)] if isinstance(plan, list) else []
    # (node, parallel divisor, under a Gather, LIMIT cap, times it runs, times what encloses its
    # nearest loop runs: a Materialize below a loop reads its input once per those)
    stack: list[tuple[dict[str, Any], float, bool, float | None, float, float]] = [
        (r, 1.0, False, None, 1.0, 1.0) for r in roots if isinstance(r, dict)
    ]
    while stack:
        node, divisor, parallel, cap, loops, base = stack.pop()
        if node.get("Node Type") == "Recursive Union":  # in a view: the query's text has none
            raise recursion_refused(" (in a view it reads)")
        workers = node.get("Workers Planned")
        gather = isinstance(workers, int) and workers > 0
        if isinstance(workers, int) and gather:
            divisor = workers + max(0.0, 1.0 - 0.3 * workers)
        children = [p for p in node.get("Plans") or [] if isinstance(p, dict)]
        limit = _limit_cap(node, children)
        below = limit if limit is not None else cap if _row_for_row(node) else None
        for child in children:
            role = child.get("Parent Relationship")
            feeds = role in ("Outer", "Member", "Subquery")
            runs, runs_base = _child_loops(node, child, children, loops, base)
            stack.append((child, divisor, parallel or gather, below if feeds else None, runs, runs_base))
        relation = node.get("Relation Name")
        key = f"{node.get('Schema')}.{relation}" if node.get("Schema") else str(relation)
        own = _plan_rows(node)
        if cap is not None and _row_for_row(node):
            own = min(own, cap)
        share = divisor if node.get("Parallel Aware") else 1.0
        whole = (sizes or {}).get(key) if _reads_whole(node) else None
        if whole is not None:
            own = max(own, whole / share)  # per process, as the scan's own rows are
        probe = _index_probe(node)
        if probe is not None and indexed and probe in indexed:
            own = _index_rows(own * share, indexed[probe]) / share
        handled = own
        if node.get("Node Type") == "Nested Loop":
            sides = {c.get("Parent Relationship"): _plan_rows(c) for c in children}
            handled = max(handled, sides.get("Outer", 0.0) * sides.get("Inner", 0.0))
        processed = max(processed, handled * loops * (divisor if parallel else 1.0))
        if isinstance(relation, str):
            rows = own * loops * share
            tables[key] = tables.get(key, 0.0) + round(rows)
    if not roots:
        raise DataEngineError("postgres", "EXPLAIN returned no plan")
    return Estimate.of(tables, processed=round(processed))

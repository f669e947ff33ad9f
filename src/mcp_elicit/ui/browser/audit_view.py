"""`mcp-elicit audit serve`: the consent audit trail in a local, read-only page.

One page, filtered by query parameters (server, action, decided-by, since, until): the chain's
verification status with every break listed and its record marked in the table; a chart of the
answers to questions put to a person (accept, decline, cancel; `counted_answer` says which records
count) per server over time, drawn here as SVG (no script, no data leaves the machine); and the
newest `MAX_AUDIT_ROWS` matching records, every kind.

Read-only: the store is opened for reading on each request (SQLite read-only, never created), and
the page accepts GET only. The same guard as the question page protects it (127.0.0.1, Host
check, the session token in every path, strict CSP, no framing).
"""

from __future__ import annotations

import collections
import datetime as dt
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TextIO, get_args

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Mount, Route

from mcp_elicit.audit.reading import CheckedRead, break_place
from mcp_elicit.core.actions import ACTIONS
from mcp_elicit.core.consent import DecidedBy
from mcp_elicit.core.text import clean_text
from mcp_elicit.errors import InvalidArgument
from mcp_elicit.ui.browser.app import page_environment, static_files
from mcp_elicit.ui.browser.fields import visible
from mcp_elicit.ui.browser.guard import LOOPBACK, LocalServer, PageGuard, new_token

__all__ = [
    "ACTIONS",
    "ANSWERED_BY",
    "CHART_BAR_GAP",
    "CHART_HEIGHT",
    "CHART_WIDTH",
    "MAX_AUDIT_ROWS",
    "MAX_CACHED_VIEWS",
    "MAX_CHART_BUCKETS",
    "MAX_CHART_SERVERS",
    "MAX_FILTER_CHARS",
    "Chart",
    "TrailCache",
    "audit_app",
    "chart_of",
    "counted_answer",
    "filter_label",
    "serve_audit",
]

# Records listed on the page (the newest matches); the chart and the counts use every match.
MAX_AUDIT_ROWS: Final = 500

# Characters of a filter value the page reads from its query, and of a server name as the filter
# offers it (`filter_label`): the same bound, so every name offered comes back whole. Longer than a
# name the client kit records (`MAX_SERVER_NAME_CHARS` and its mark) with a few ⟨U+…⟩ markers in it;
# a longer name is offered cut, and names cut alike are one choice.
MAX_FILTER_CHARS: Final = 1024

# Time buckets across the chart, and servers drawn (the busiest; the rest are summed as "others").
MAX_CHART_BUCKETS: Final = 30
MAX_CHART_SERVERS: Final = 8

# The chart's drawing area per server, in SVG user units, and the gap between two bars.
CHART_WIDTH: Final = 600
CHART_HEIGHT: Final = 80
CHART_BAR_GAP: Final = 2

# Who decides an answer the chart counts: the person, the script answering for them, or nobody in
# time (the question was put; it ends as a cancel). The other deciders decide without asking.
ANSWERED_BY: Final = ("person", "script", "timeout")

_DECIDED_BY: Final = get_args(DecidedBy)
_STEPS: Final = (60, 300, 900, 3600, 4 * 3600, 86400, 7 * 86400, 30 * 86400)


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    action: str
    count: int
    label: str


@dataclass(frozen=True, slots=True)
class ServerChart:
    server: str
    bars: tuple[Bar, ...]
    totals: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Chart:
    start: str
    end: str
    step_seconds: int
    servers: tuple[ServerChart, ...]

    @property
    def step(self) -> str:
        """One bar's time in words: "minute", "15 minutes", "hour", "4 hours", "day", "week"."""
        for unit, seconds in (("week", 7 * 86400), ("day", 86400), ("hour", 3600), ("minute", 60)):
            if self.step_seconds % seconds == 0:
                n = self.step_seconds // seconds
                return unit if n == 1 else f"{n} {unit}s"
        return f"{self.step_seconds} seconds"


def _when(record: Mapping[str, Any]) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(record.get("time"))).timestamp()
    except ValueError:
        return None


_UNNAMED: Final = "(unnamed)"


def _server(record: Mapping[str, Any]) -> str:
    server = record.get("server")
    return str(server.get("name") or _UNNAMED) if isinstance(server, dict) else _UNNAMED


def filter_label(name: str) -> str:
    """A stored server name as the server filter offers it and matches it: cleaned to one line (a
    browser would send a line break back as CR LF) of at most `MAX_FILTER_CHARS` characters, so
    the value a browser submits is the label itself. Names cleaned alike are one choice."""
    return clean_text(name, limit=MAX_FILTER_CHARS, multiline=False, defang=False)


def counted_answer(record: Mapping[str, Any]) -> str | None:
    """The answer `record` counts as on the chart (accept, decline or cancel), or None.

    The chart counts answered questions: one per question put to a person (or to the script that
    answers for them), by what came back. A record is one answered question when:

    - its `action` is accept, decline or cancel (an `error` is a question that failed);
    - its `decided_by` is in `ANSWERED_BY`. The other deciders (`policy`, `rate_limit`,
      `secret_guard`, `gate`, `no_terminal`) decided without asking anyone: the data server's
      `ran_unasked`, `ran_unguarded` and refusals are `policy` decisions, not a person's accept
      or decline;
    - it is the record of the question itself: it has no `details`, or it has them and the
      form it asked (`fields`). An application adds its facts (`details`) to the kit's record of
      its question (`ask(record_as=...)`, the data server's record of an asked query), so one
      question is one record. A record with `details` and no form is an application's second
      record of a question the kit recorded too (trails written before that) or one decided
      without asking.

    Per record, so filters and time bounds cannot split a pair. A form submitted with a choice
    its server declared as a no (the data server's "Don't run it", an unticked `confirm`) is
    recorded by the kit as a decline, so it counts as one.
    """
    action = record.get("action")
    if action not in ACTIONS or record.get("decided_by") not in ANSWERED_BY:
        return None
    if "details" in record and not record.get("fields"):
        return None
    return str(action)


def chart_of(records: Iterable[Mapping[str, Any]]) -> Chart | None:
    """Stacked bars of the answers (`counted_answer`) per server per time bucket (None: none)."""
    points = [
        (t, _server(r), a)
        for r in records
        if (a := counted_answer(r)) is not None and (t := _when(r)) is not None
    ]
    if not points:
        return None
    first, last = min(p[0] for p in points), max(p[0] for p in points)
    step = next((s for s in _STEPS if (last - first) / s < MAX_CHART_BUCKETS), _STEPS[-1])
    start = first - first % step
    buckets = min(MAX_CHART_BUCKETS, int((last - start) // step) + 1)
    busiest = collections.Counter(s for _, s, _ in points).most_common()
    shown = {s for s, _ in busiest[:MAX_CHART_SERVERS]}
    counts: dict[str, collections.Counter[tuple[int, str]]] = collections.defaultdict(collections.Counter)
    for t, s, a in points:
        index = min(buckets - 1, int((t - start) // step))
        counts[s if s in shown else "(others)"][(index, str(a))] += 1
    peak = max(sum(c[(i, a)] for a in ACTIONS) for c in counts.values() for i in range(buckets))
    width = CHART_WIDTH / buckets
    servers = []
    for name in [s for s, _ in busiest[:MAX_CHART_SERVERS]] + (["(others)"] if "(others)" in counts else []):
        c = counts[name]
        bars = []
        for i in range(buckets):
            bottom = float(CHART_HEIGHT)
            for action in ACTIONS:
                n = c[(i, action)]
                if not n:
                    continue
                height = CHART_HEIGHT * n / peak
                bottom -= height
                when = dt.datetime.fromtimestamp(start + i * step, tz=dt.UTC).strftime("%Y-%m-%d %H:%M")
                bars.append(
                    Bar(i * width, bottom, max(width - CHART_BAR_GAP, 1), height, action, n, f"{when} UTC")
                )
        totals: dict[str, int] = {a: sum(c[(i, a)] for i in range(buckets)) for a in ACTIONS}
        servers.append(ServerChart(visible(name), tuple(bars), totals))
    fmt = "%Y-%m-%d %H:%M UTC"
    return Chart(
        dt.datetime.fromtimestamp(start, tz=dt.UTC).strftime(fmt),
        dt.datetime.fromtimestamp(start + buckets * step, tz=dt.UTC).strftime(fmt),
        step,
        tuple(servers),
    )


def _bound(value: str) -> str | None:
    """An ISO date/time (UTC when no zone) or an age such as 30m, 12h, 7d; None when unreadable."""
    from mcp_elicit.audit.reading import parse_time  # the same reading as --since/--until

    try:
        return parse_time(value, "time") if value else None
    except InvalidArgument:
        return None


# Results the page keeps for an unchanged trail: the chain's report, the server names, and the
# views (listed rows, count, chart) of this many recent queries.
MAX_CACHED_VIEWS: Final = 16


class TrailCache:
    """What the page read of the trail at one `stamp` (the sink's, audit/base.py): a reload of an
    unchanged trail reads only the stamp, not the chain again; a new stamp starts over. A sink
    without a stamp (None) is read in full on every request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamp: Any = None
        self._kept: collections.OrderedDict[Any, Any] = collections.OrderedDict()
        self.verified = 0  # full verifications run (the tests and the benchmark count them)

    def get(self, stamp: Any, key: Any) -> Any:
        with self._lock:
            if stamp is None or stamp != self._stamp or key not in self._kept:
                return None
            self._kept.move_to_end(key)
            return self._kept[key]

    def put(self, stamp: Any, key: Any, value: Any) -> None:
        with self._lock:
            if stamp is None:
                return
            if stamp != self._stamp:
                self._stamp = stamp
                self._kept.clear()
            self._kept[key] = value
            while len(self._kept) > MAX_CACHED_VIEWS + 2:  # the report and the server names
                self._kept.popitem(last=False)


def _read(open_sink: Callable[[], Any], query: Mapping[str, str], cache: TrailCache) -> dict[str, Any]:
    """Everything the page shows (runs in a worker thread: sinks are blocking): from `cache` when
    the trail's stamp has not changed, else read in one pass and kept there."""
    problems = []
    since, until = _bound(query.get("since", "")), _bound(query.get("until", ""))
    for name, raw, got in (
        ("since", query.get("since", ""), since),
        ("until", query.get("until", ""), until),
    ):
        if raw and got is None:
            problems.append(f"{name}: not an ISO date/time or an age like 7d")
    decided_by = query.get("decided_by", "")
    filters = {"server": query.get("server") or None, "action": query.get("action") or None}
    key = ("view", *filters.values(), since, until, decided_by)
    sink = open_sink()
    try:
        stamp = sink.stamp() if hasattr(sink, "stamp") else None  # an AuditSink of one's own: None
        report = cache.get(stamp, "report")
        if report is None:
            report = sink.verify()
            cache.verified += 1
            cache.put(stamp, "report", report)
        view = cache.get(stamp, key)
        if view is None:
            chosen, stored = filters["server"], filters["server"]
            if chosen is not None:  # the name as the page shows it: the stored names shown so
                servers = _servers(sink, stamp, cache)
                named = [s for s in servers if filter_label(s) == chosen]
                # one stored name as the page shows it: the indexed filter; else (several names
                # cleaned alike, "(unnamed)", a name nobody has) every record, matched as shown
                stored = named[0] if len(named) == 1 and named[0] != _UNNAMED else None
            read = CheckedRead(sink, server=stored, action=filters["action"], since=since, until=until)
            records = [
                r
                for r in read
                if (not decided_by or r.get("decided_by") == decided_by)
                and (chosen is None or filter_label(_server(r)) == chosen)
            ]
            view = {
                "rows": records[-MAX_AUDIT_ROWS:][::-1],
                "matched": len(records),
                "chart": chart_of(records),
                "note": read.mislabelled_note(),
            }
            cache.put(stamp, key, view)
            if not (any(filters.values()) or since or until or decided_by):  # every record: its servers
                cache.put(stamp, "servers", sorted({_server(r) for r in records}))
        servers = _servers(sink, stamp, cache)
    finally:
        sink.close()
    if view["note"] is not None:
        problems.append(view["note"][0].upper() + view["note"][1:] + ".")
    edited = sum(b.kind == "column_mismatch" for b in report.breaks)
    if edited and (any(filters.values()) or since or until):
        problems.append(
            f"The chain has {edited} edited index column(s): the filters go by those columns,"
            " so a record whose column was edited may be missing from these results."
        )
    broken = {b.record_id for b in report.breaks if b.record_id} | {b.seq for b in report.breaks if b.seq}
    return {
        "report": report,
        "rows": view["rows"],
        "matched": view["matched"],
        "chart": view["chart"],
        "servers": sorted({filter_label(s) for s in servers}),
        "broken": broken,
        "problems": problems,
    }


def _servers(sink: Any, stamp: Any, cache: TrailCache) -> list[str]:
    """The stored server names of the trail, sorted (kept while its stamp is unchanged)."""
    servers: list[str] | None = cache.get(stamp, "servers")
    if servers is None:
        servers = sorted({_server(r) for r in sink.iter_records()})
        cache.put(stamp, "servers", servers)
    return servers


def audit_app(open_sink: Callable[[], Any], source: str, cache: TrailCache | None = None) -> Starlette:
    """The page (not yet guarded: `serve_audit` puts the guard in front); `cache` keeps what it
    read between requests (a new one when not given)."""
    env = page_environment()
    kept = TrailCache() if cache is None else cache

    async def page(request: Request) -> HTMLResponse:
        query = {
            k: request.query_params.get(k, "")[:MAX_FILTER_CHARS]
            for k in ("server", "action", "decided_by", "since", "until")
        }
        data = await anyio.to_thread.run_sync(_read, open_sink, query, kept)
        html = env.get_template("audit.html").render(
            root=request.scope.get("root_path", ""),
            title="Consent audit trail",
            source=visible(source),
            query=query,
            actions=(*ACTIONS, "error"),
            decided=_DECIDED_BY,
            width=CHART_WIDTH,
            height=CHART_HEIGHT,
            show=visible,
            place=break_place,
            **data,
        )
        return HTMLResponse(html)

    return Starlette(
        routes=[Route("/", page, methods=["GET"]), Mount("/static", static_files(), name="static")]
    )


async def serve_audit(
    open_sink: Callable[[], Any],
    source: str,
    *,
    port: int = 0,
    stream: TextIO = sys.stderr,
    server: LocalServer | None = None,
    task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the audit page on 127.0.0.1 until cancelled; its link goes to `stream` and `task_status`.
    `server`: a `LocalServer` already bound (else one on `port` is bound here)."""
    if server is None:
        server = LocalServer(port)
    token = new_token()
    guarded = PageGuard(audit_app(open_sink, source), port=server.port, token=token, csrf=None)
    url = f"http://{LOOPBACK}:{server.port}/{token}/"
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve, guarded)
        print(f"mcp-elicit: the audit trail is at {url} (Ctrl-C stops)", file=stream, flush=True)
        task_status.started(url)

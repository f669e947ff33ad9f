"""May this server ask now? Per-server permissions, rate limits and an embargo (spec rule C4).

Rules, in the order `decide` applies them:

1. Permission. Each server gets ``allow``, ``ask`` or ``deny`` per mode (form, URL), from the first
   ``[[servers]]`` entry whose ``match`` fits it, else from ``[default]``. ``deny`` answers without
   bothering the person. ``ask`` (the default) means the person first sees which server is asking
   and may refuse before the form opens (C4 approval controls); ``allow`` goes straight to the form.
   ``allow`` never skips the consent a URL needs before it is opened (U3): it only skips the extra
   approval step.
2. Embargo. After ``EMBARGO_DECLINES`` declines (or ``EMBARGO_CANCELS`` dismissals, timeouts
   included) from the same person to the same server within ``EMBARGO_WINDOW_S``, with no accept in
   between, that server's questions are refused for ``EMBARGO_DURATION_S``. Modelled on Chromium's
   permission embargo (components/permissions/permission_decision_auto_blocker.cc:
   kDefaultDismissalsBeforeBlock = 3, kDefaultIgnoresBeforeBlock = 4, kDefaultEmbargoDays = 7); our
   numbers are shorter because an MCP server is a tool the person chose to run, and a refusal
   usually answers one question rather than rejecting the server for good.
3. Rate limits. Every limit in the list is a moving window (a log of admission times, like the
   `limits` library's moving-window strategy) per person and server; a request is admitted only
   when every window has room. Only admitted requests count, so a server that keeps knocking while
   limited gets back in once the window moves on.

Time is an argument (``now``: seconds on any one clock the caller keeps using; wall time if the
state outlives the process). Decisions are values, never exceptions: `Allow`, `AskPerson`,
`Deny(reason)`. `decide` only reads the state; `evaluate` decides and counts an admitted request;
`PolicyState.record_outcome` feeds the person's answers to the embargo.

Matching on ``name`` trusts what the server says about itself (the ``serverInfo`` it sends), which
any server can fake; ``command`` and ``url`` come from the client's own configuration. Prefer them
for ``allow``.

Configuration is TOML (`load_policy`); see docs/guardrails.md for the format with every default.
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from mcp_elicit.errors import ConfigError

__all__ = [
    "DEFAULT_RATE_LIMITS",
    "EMBARGO_CANCELS",
    "EMBARGO_DECLINES",
    "EMBARGO_DURATION_S",
    "EMBARGO_WINDOW_S",
    "Allow",
    "AskPerson",
    "Deny",
    "Embargo",
    "Permission",
    "Policy",
    "PolicyDecision",
    "PolicyState",
    "RateLimit",
    "Request",
    "ServerMatch",
    "ServerRef",
    "ServerRule",
    "decide",
    "evaluate",
    "load_policy",
]

Permission = Literal["allow", "ask", "deny"]
Mode = Literal["form", "url"]
DenyReason = Literal["policy_deny", "rate_limited", "embargo"]

PERMISSIONS: Final[tuple[str, ...]] = ("allow", "ask", "deny")

# The permission when nothing is configured: ask the person first (C4: approval controls).
DEFAULT_PERMISSION: Final[Permission] = "ask"

# Burst: at most 5 questions in 10 s. A person needs a few seconds to read and answer a form, so
# only a loop runs faster; 5 (not 3) leaves room for quick yes/no confirmations in a wizard.
RATE_BURST: Final = (5, 10.0)
# Sustained: at most 20 questions in 5 minutes, one every 15 s on average: a long wizard fits,
# a server that keeps interrupting does not.
RATE_SUSTAINED: Final = (20, 300.0)

# Declines (explicit "no") within the window that start an embargo (Chromium: 3 dismissals).
EMBARGO_DECLINES: Final = 3
# Dismissals and timeouts ("cancel") within the window that start an embargo (Chromium: 4 ignores;
# a dismissal says less than a decline, so it takes one more).
EMBARGO_CANCELS: Final = 4
# Refusals older than this do not count: three "no"s spread over a working day are answers to
# questions, three within ten minutes mean "stop asking".
EMBARGO_WINDOW_S: Final = 600.0
# How long an embargo lasts (Chromium: 7 days). One hour stops a nagging loop without locking the
# person out of a tool they use every day; a restart of the client also ends it (state is memory).
EMBARGO_DURATION_S: Final = 3_600.0

# Distinct (person, server) pairs remembered; the least recently seen is forgotten first. A client
# talks to a handful of servers; a gateway with many people stays bounded. Forgetting a pair lifts
# its embargo early, which errs towards asking.
MAX_TRACKED_PAIRS: Final = 10_000

# Bounds on configured values, so a typo cannot make the state grow without limit.
MAX_RATE_LIMIT: Final = 10_000  # requests per window
MAX_WINDOW_S: Final = 86_400.0  # one day
MAX_EMBARGO_COUNT: Final = 100
MAX_EMBARGO_DURATION_S: Final = 2_592_000.0  # thirty days


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most `limit` admitted requests in any `window` seconds."""

    limit: int
    window: float


DEFAULT_RATE_LIMITS: Final[tuple[RateLimit, ...]] = (RateLimit(*RATE_BURST), RateLimit(*RATE_SUSTAINED))


@dataclass(frozen=True, slots=True)
class Embargo:
    """Refuse a server for `duration` s after `declines` declines or `cancels` cancels within `window` s.

    A count of 0 turns that trigger off.
    """

    declines: int = EMBARGO_DECLINES
    cancels: int = EMBARGO_CANCELS
    window: float = EMBARGO_WINDOW_S
    duration: float = EMBARGO_DURATION_S


@dataclass(frozen=True, slots=True)
class ServerRef:
    """Who is asking: the name the server declared and where it runs (its command line or URL)."""

    name: str = ""
    command: str = ""
    url: str = ""

    @property
    def key(self) -> str:
        return f"{self.name}\x00{self.command}\x00{self.url}"


@dataclass(frozen=True, slots=True)
class Request:
    """One elicitation about to happen: which server, which mode, for which person ("" for the only one)."""

    server: ServerRef
    mode: Mode
    person: str = ""


@dataclass(frozen=True, slots=True)
class ServerMatch:
    """Globs (fnmatch, case-sensitive) a server must all match; at least one is set."""

    name: str | None = None
    command: str | None = None
    url: str | None = None

    def matches(self, server: ServerRef) -> bool:
        pairs = ((self.name, server.name), (self.command, server.command), (self.url, server.url))
        return all(pattern is None or fnmatch.fnmatchcase(value, pattern) for pattern, value in pairs)


@dataclass(frozen=True, slots=True)
class ServerRule:
    """Settings for the servers `match` fits; None means "as in the default section"."""

    match: ServerMatch
    form: Permission | None = None
    url: Permission | None = None
    rate_limits: tuple[RateLimit, ...] | None = None
    embargo: Embargo | None = None


@dataclass(frozen=True, slots=True)
class Resolved:
    """The effective settings for one server."""

    form: Permission
    url: Permission
    rate_limits: tuple[RateLimit, ...]
    embargo: Embargo


@dataclass(frozen=True, slots=True)
class Policy:
    """Defaults plus per-server rules; the first rule whose match fits a server wins."""

    form: Permission = DEFAULT_PERMISSION
    url: Permission = DEFAULT_PERMISSION
    rate_limits: tuple[RateLimit, ...] = DEFAULT_RATE_LIMITS
    embargo: Embargo = field(default_factory=Embargo)
    servers: tuple[ServerRule, ...] = ()

    def resolve(self, server: ServerRef) -> Resolved:
        for rule in self.servers:
            if rule.match.matches(server):
                return Resolved(
                    form=rule.form or self.form,
                    url=rule.url or self.url,
                    rate_limits=self.rate_limits if rule.rate_limits is None else rule.rate_limits,
                    embargo=self.embargo if rule.embargo is None else rule.embargo,
                )
        return Resolved(self.form, self.url, self.rate_limits, self.embargo)


@dataclass(frozen=True, slots=True)
class Allow:
    """Go ahead: show the form (or the URL consent screen) directly."""


@dataclass(frozen=True, slots=True)
class AskPerson:
    """Go ahead, but first let the person approve that this server asks at all."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse without showing anything; `retry_after` is seconds until it may change (None: never)."""

    reason: DenyReason
    retry_after: float | None = None

    @property
    def action(self) -> Literal["decline", "cancel"]:
        """What to answer the server: a rate limit is a dismissal, the rest are a firm no."""
        return "cancel" if self.reason == "rate_limited" else "decline"

    @property
    def decided_by(self) -> Literal["policy", "rate_limit"]:
        """Who decided, in audit-record terms."""
        return "rate_limit" if self.reason == "rate_limited" else "policy"


PolicyDecision: TypeAlias = Allow | AskPerson | Deny


@dataclass(slots=True)
class _Track:
    hits: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_RATE_LIMIT))
    declines: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_EMBARGO_COUNT))
    cancels: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_EMBARGO_COUNT))


_EMPTY: Final = _Track()  # read-only stand-in for a pair never seen


class PolicyState:
    """What `decide` needs to remember per (person, server): admission times and recent refusals.

    Mutable and in memory; one instance per client (or per gateway). Not thread-safe: call it from
    one event loop, or hold a lock around `evaluate`.
    """

    def __init__(self) -> None:
        self._tracks: OrderedDict[tuple[str, str], _Track] = OrderedDict()

    def __len__(self) -> int:
        return len(self._tracks)

    def _peek(self, request: Request) -> _Track | None:
        return self._tracks.get((request.person, request.server.key))

    def _track(self, request: Request) -> _Track:
        key = (request.person, request.server.key)
        track = self._tracks.get(key)
        if track is None:
            track = self._tracks[key] = _Track()
            while len(self._tracks) > MAX_TRACKED_PAIRS:
                self._tracks.popitem(last=False)
        else:
            self._tracks.move_to_end(key)
        return track

    def admit(self, request: Request, now: float) -> None:
        """Count `request` against its server's rate limits (called by `evaluate`)."""
        hits = self._track(request).hits
        while hits and hits[0] <= now - MAX_WINDOW_S:
            hits.popleft()
        hits.append(now)

    def record_outcome(self, request: Request, action: str, now: float) -> None:
        """Feed what the person answered to the embargo.

        Call it only for prompts the person saw (`decided_by` "person", timeouts included), never for
        refusals by policy, rate limit or secret guard: those would feed on themselves. An accept
        forgets earlier refusals; "error" is ignored.
        """
        track = self._track(request)
        if action == "accept":
            track.declines.clear()
            track.cancels.clear()
        elif action == "decline":
            track.declines.append(now)
        elif action == "cancel":
            track.cancels.append(now)


def _embargo_until(times: deque[float], count: int, window: float, duration: float) -> float | None:
    """End of the embargo the last `count` refusals started, if they fell within `window`."""
    if count <= 0 or len(times) < count:
        return None
    first, last = times[-count], times[-1]
    return last + duration if last - first <= window else None


def decide(policy: Policy, state: PolicyState, request: Request, now: float) -> PolicyDecision:
    """May `request` go ahead at `now`? Reads `state`, never changes it."""
    settings = policy.resolve(request.server)
    permission = settings.form if request.mode == "form" else settings.url
    if permission == "deny":
        return Deny("policy_deny")
    track = state._peek(request) or _EMPTY
    rule = settings.embargo
    ends = [
        end
        for end in (
            _embargo_until(track.declines, rule.declines, rule.window, rule.duration),
            _embargo_until(track.cancels, rule.cancels, rule.window, rule.duration),
        )
        if end is not None and end > now
    ]
    if ends:
        return Deny("embargo", retry_after=max(ends) - now)
    waits = [w for w in (_rate_wait(track.hits, limit, now) for limit in settings.rate_limits) if w]
    if waits:
        return Deny("rate_limited", retry_after=max(waits))
    return Allow() if permission == "allow" else AskPerson()


def _rate_wait(hits: deque[float], limit: RateLimit, now: float) -> float:
    """Seconds until `limit` has room again (0.0 when it has room now)."""
    if limit.limit <= 0:
        return limit.window
    if len(hits) < limit.limit:
        return 0.0
    # Hits are in time order: the window is full iff the limit-th latest hit is still inside it
    # (one look, not a walk over every hit in the window: a busy gateway keeps thousands).
    at = hits[-limit.limit]
    return at + limit.window - now if at > now - limit.window else 0.0


def evaluate(policy: Policy, state: PolicyState, request: Request, now: float) -> PolicyDecision:
    """`decide`, then count the request against the rate limits when it goes ahead."""
    decision = decide(policy, state, request, now)
    if not isinstance(decision, Deny):
        state.admit(request, now)
    return decision


# -- configuration ------------------------------------------------------------------------------

_SECTION_KEYS: Final = frozenset({"form", "url", "rate_limits", "embargo"})
_TOP_KEYS: Final = frozenset({"default", "servers", "audit"})  # [audit] is read by config.py


def load_policy(text: str) -> Policy:
    """Parse the policy TOML `text` (see docs/guardrails.md); raises ConfigError with the bad key.

    Unknown keys are errors, so a typo cannot silently leave a server on the default. The
    top-level ``[audit]`` table belongs to config.py and is skipped here.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("", f"not valid TOML: {exc}") from exc
    _no_unknown(data, _TOP_KEYS, "")
    default = data.get("default", {})
    if not isinstance(default, dict):
        raise ConfigError("default", "must be a table")
    _no_unknown(default, _SECTION_KEYS, "default")
    servers = data.get("servers", [])
    if not isinstance(servers, list):
        raise ConfigError("servers", "must be an array of tables ([[servers]])")
    base = Policy()
    embargo = _embargo(default.get("embargo"), "default.embargo", base.embargo) or base.embargo
    rate_limits = _rate_limits(default.get("rate_limits"), "default.rate_limits")
    return Policy(
        form=_permission(default.get("form", base.form), "default.form"),
        url=_permission(default.get("url", base.url), "default.url"),
        rate_limits=base.rate_limits if rate_limits is None else rate_limits,
        embargo=embargo,
        servers=tuple(_server_rule(entry, f"servers[{i}]", embargo) for i, entry in enumerate(servers)),
    )


def _no_unknown(table: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    for key in table:
        if key not in allowed:
            path = f"{where}.{key}" if where else key
            raise ConfigError(path, f"unknown key (expected one of {', '.join(sorted(allowed))})")


def _permission(value: Any, where: str) -> Permission:
    if value == "allow":
        return "allow"
    if value == "ask":
        return "ask"
    if value == "deny":
        return "deny"
    raise ConfigError(where, f"must be one of {', '.join(PERMISSIONS)}, not {value!r}")


def _number(value: Any, where: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(where, f"must be a number from {low:g} to {high:g}, not {value!r}")
    return float(value)


def _count(value: Any, where: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise ConfigError(where, f"must be a whole number from 0 to {high}, not {value!r}")
    return value


def _rate_limits(value: Any, where: str) -> tuple[RateLimit, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ConfigError(where, "must be an array of {limit = N, window = SECONDS} tables")
    limits = []
    for i, entry in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(at, "must be a table {limit = N, window = SECONDS}")
        _no_unknown(entry, frozenset({"limit", "window"}), at)
        if "limit" not in entry or "window" not in entry:
            raise ConfigError(at, "needs both limit and window")
        limit = _count(entry["limit"], f"{at}.limit", MAX_RATE_LIMIT)
        window = _number(entry["window"], f"{at}.window", 0.001, MAX_WINDOW_S)
        limits.append(RateLimit(limit, window))
    return tuple(limits)


def _embargo(value: Any, where: str, base: Embargo) -> Embargo | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(where, "must be a table {declines, cancels, window, duration}")
    _no_unknown(value, frozenset({"declines", "cancels", "window", "duration"}), where)
    return Embargo(
        declines=_count(value.get("declines", base.declines), f"{where}.declines", MAX_EMBARGO_COUNT),
        cancels=_count(value.get("cancels", base.cancels), f"{where}.cancels", MAX_EMBARGO_COUNT),
        window=_number(value.get("window", base.window), f"{where}.window", 0.0, MAX_WINDOW_S),
        duration=_number(
            value.get("duration", base.duration), f"{where}.duration", 0.0, MAX_EMBARGO_DURATION_S
        ),
    )


def _server_rule(entry: Any, where: str, default_embargo: Embargo) -> ServerRule:
    if not isinstance(entry, dict):
        raise ConfigError(where, "must be a table")
    _no_unknown(entry, _SECTION_KEYS | {"match"}, where)
    match = entry.get("match")
    if not isinstance(match, dict) or not match:
        raise ConfigError(f"{where}.match", "needs a table with at least one of name, command, url")
    _no_unknown(match, frozenset({"name", "command", "url"}), f"{where}.match")
    for key, pattern in match.items():
        if not isinstance(pattern, str) or not pattern:
            raise ConfigError(f"{where}.match.{key}", "must be a non-empty glob string")
    return ServerRule(
        match=ServerMatch(name=match.get("name"), command=match.get("command"), url=match.get("url")),
        form=_permission(entry["form"], f"{where}.form") if "form" in entry else None,
        url=_permission(entry["url"], f"{where}.url") if "url" in entry else None,
        rate_limits=_rate_limits(entry.get("rate_limits"), f"{where}.rate_limits"),
        embargo=_embargo(entry.get("embargo"), f"{where}.embargo", default_embargo),
    )

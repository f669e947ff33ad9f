"""C4: clients should have approval controls and rate-limit elicitation; core/policy.py decides."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_elicit.core.policy import (
    DEFAULT_RATE_LIMITS,
    EMBARGO_CANCELS,
    EMBARGO_DECLINES,
    EMBARGO_DURATION_S,
    EMBARGO_WINDOW_S,
    MAX_TRACKED_PAIRS,
    Allow,
    AskPerson,
    Deny,
    Embargo,
    Policy,
    PolicyState,
    RateLimit,
    Request,
    ServerMatch,
    ServerRef,
    ServerRule,
    decide,
    evaluate,
    load_policy,
)
from mcp_elicit.errors import ConfigError
from mcp_elicit.testing import ManualClock

GITHUB = ServerRef(name="github", command="npx -y @modelcontextprotocol/server-github")
OTHER = ServerRef(name="weather", url="https://weather.example.com/mcp")
NO_LIMITS = Policy(rate_limits=())


def form(server: ServerRef = GITHUB, person: str = "") -> Request:
    return Request(server=server, mode="form", person=person)


def url(server: ServerRef = GITHUB) -> Request:
    return Request(server=server, mode="url")


# -- permissions --------------------------------------------------------------------------------


def test_c4_by_default_the_person_is_asked_first_for_both_modes() -> None:
    state = PolicyState()
    assert decide(Policy(), state, form(), 0.0) == AskPerson()
    assert decide(Policy(), state, url(), 0.0) == AskPerson()


def test_a_matching_server_rule_sets_the_permission_per_mode() -> None:
    policy = Policy(servers=(ServerRule(ServerMatch(name="github"), form="allow", url="deny"),))
    state = PolicyState()
    assert decide(policy, state, form(), 0.0) == Allow()
    assert decide(policy, state, url(), 0.0) == Deny("policy_deny")
    assert decide(policy, state, form(OTHER), 0.0) == AskPerson()


def test_the_first_matching_rule_wins() -> None:
    policy = Policy(
        servers=(
            ServerRule(ServerMatch(command="npx *"), form="deny"),
            ServerRule(ServerMatch(name="github"), form="allow"),
        )
    )
    assert decide(policy, PolicyState(), form(), 0.0) == Deny("policy_deny")


def test_every_glob_of_a_match_must_fit() -> None:
    both = ServerMatch(name="github", url="https://*")
    assert not both.matches(GITHUB)
    assert ServerMatch(name="git*", command="npx *server-github").matches(GITHUB)
    assert ServerMatch(url="https://*.example.com/*").matches(OTHER)
    assert not ServerMatch(name="GitHub").matches(GITHUB)  # case-sensitive


def test_a_denied_request_is_declined_by_policy_and_a_rate_limited_one_cancelled() -> None:
    assert (Deny("policy_deny").action, Deny("policy_deny").decided_by) == ("decline", "policy")
    assert (Deny("embargo").action, Deny("embargo").decided_by) == ("decline", "policy")
    assert (Deny("rate_limited").action, Deny("rate_limited").decided_by) == ("cancel", "rate_limit")


# -- rate limits --------------------------------------------------------------------------------


def test_c4_the_default_burst_limit_admits_five_in_ten_seconds_and_then_denies() -> None:
    clock, state, policy = ManualClock(1000.0), PolicyState(), Policy()
    for _ in range(5):
        assert evaluate(policy, state, form(), clock()) == AskPerson()
        clock.advance(1.0)
    decision = evaluate(policy, state, form(), clock())
    assert decision == Deny(
        "rate_limited", retry_after=5.0
    )  # the first hit at 1000 leaves the window at 1010
    clock.advance(5.0)
    assert evaluate(policy, state, form(), clock()) == AskPerson()


def test_c4_the_sustained_limit_holds_even_when_every_burst_is_under_its_limit() -> None:
    clock, state, policy = ManualClock(0.0), PolicyState(), Policy()
    admitted = 0
    for _ in range(40):
        if not isinstance(evaluate(policy, state, form(), clock()), Deny):
            admitted += 1
        clock.advance(5.0)  # two per 10 s: under the burst limit
    burst, sustained = DEFAULT_RATE_LIMITS
    assert (burst.limit, burst.window, sustained.limit, sustained.window) == (5, 10.0, 20, 300.0)
    assert admitted == 20  # 40 requests in 200 s: the sustained window (20 / 300 s) stops the rest


def test_denied_requests_do_not_count_against_the_window() -> None:
    policy, state = Policy(rate_limits=(RateLimit(1, 10.0),)), PolicyState()
    assert evaluate(policy, state, form(), 0.0) == AskPerson()
    for t in range(1, 10):
        assert isinstance(evaluate(policy, state, form(), float(t)), Deny)
    assert evaluate(policy, state, form(), 10.0) == AskPerson()


def test_rate_limits_are_per_server_and_per_person() -> None:
    policy, state = Policy(rate_limits=(RateLimit(1, 60.0),)), PolicyState()
    assert evaluate(policy, state, form(GITHUB), 0.0) == AskPerson()
    assert evaluate(policy, state, form(OTHER), 0.0) == AskPerson()
    assert evaluate(policy, state, form(GITHUB, person="bob"), 0.0) == AskPerson()
    assert isinstance(evaluate(policy, state, form(GITHUB), 0.0), Deny)


def test_decide_reads_the_state_and_never_counts() -> None:
    policy, state = Policy(rate_limits=(RateLimit(1, 60.0),)), PolicyState()
    for _ in range(3):
        assert decide(policy, state, form(), 0.0) == AskPerson()
    assert len(state) == 0


def test_a_policy_denial_is_not_counted_either() -> None:
    policy = Policy(form="deny", rate_limits=(RateLimit(1, 60.0),))
    state = PolicyState()
    evaluate(policy, state, form(), 0.0)
    assert len(state) == 0


def test_a_zero_limit_denies_everything_for_its_window() -> None:
    assert decide(Policy(rate_limits=(RateLimit(0, 30.0),)), PolicyState(), form(), 0.0) == Deny(
        "rate_limited", retry_after=30.0
    )


def test_a_server_rule_can_lift_the_rate_limits() -> None:
    policy = Policy(servers=(ServerRule(ServerMatch(name="github"), rate_limits=()),))
    state = PolicyState()
    assert all(not isinstance(evaluate(policy, state, form(), 0.0), Deny) for _ in range(100))


# -- embargo ------------------------------------------------------------------------------------


def test_c4_three_declines_in_ten_minutes_embargo_the_server_for_an_hour() -> None:
    clock, state = ManualClock(0.0), PolicyState()
    assert (EMBARGO_DECLINES, EMBARGO_WINDOW_S, EMBARGO_DURATION_S) == (3, 600.0, 3600.0)
    for _ in range(EMBARGO_DECLINES):
        assert evaluate(NO_LIMITS, state, form(), clock()) == AskPerson()
        state.record_outcome(form(), "decline", clock())
        clock.advance(60.0)
    decision = decide(NO_LIMITS, state, form(), clock())
    assert decision == Deny("embargo", retry_after=EMBARGO_DURATION_S - 60.0)
    assert decide(NO_LIMITS, state, url(), clock()) == decision  # the whole server, both modes
    assert decide(NO_LIMITS, state, form(OTHER), clock()) == AskPerson()  # only that server
    assert decide(NO_LIMITS, state, form(person="bob"), clock()) == AskPerson()  # only that person
    clock.advance(EMBARGO_DURATION_S - 60.0)
    assert decide(NO_LIMITS, state, form(), clock()) == AskPerson()


def test_after_an_embargo_one_more_decline_does_not_restart_it() -> None:
    state = PolicyState()
    for t in (0.0, 1.0, 2.0):
        state.record_outcome(form(), "decline", t)
    after = 2.0 + EMBARGO_DURATION_S
    state.record_outcome(form(), "decline", after)
    assert decide(NO_LIMITS, state, form(), after) == AskPerson()


def test_declines_spread_wider_than_the_window_do_not_embargo() -> None:
    state = PolicyState()
    for t in (0.0, 400.0, 800.0):
        state.record_outcome(form(), "decline", t)
    assert decide(NO_LIMITS, state, form(), 800.0) == AskPerson()


def test_an_accept_forgets_earlier_refusals() -> None:
    state = PolicyState()
    state.record_outcome(form(), "decline", 0.0)
    state.record_outcome(form(), "decline", 1.0)
    state.record_outcome(form(), "accept", 2.0)
    state.record_outcome(form(), "decline", 3.0)
    assert decide(NO_LIMITS, state, form(), 3.0) == AskPerson()


def test_dismissals_take_four_like_chromium_ignores() -> None:
    state = PolicyState()
    assert EMBARGO_CANCELS == 4
    for t in range(EMBARGO_CANCELS - 1):
        state.record_outcome(form(), "cancel", float(t))
    assert decide(NO_LIMITS, state, form(), 5.0) == AskPerson()
    state.record_outcome(form(), "cancel", 5.0)
    assert isinstance(decide(NO_LIMITS, state, form(), 5.0), Deny)


def test_errors_do_not_feed_the_embargo() -> None:
    state = PolicyState()
    for t in range(10):
        state.record_outcome(form(), "error", float(t))
    assert decide(NO_LIMITS, state, form(), 10.0) == AskPerson()


def test_a_zero_count_turns_the_embargo_off() -> None:
    policy = Policy(rate_limits=(), embargo=Embargo(declines=0, cancels=0))
    state = PolicyState()
    for t in range(10):
        state.record_outcome(form(), "decline", float(t))
    assert decide(policy, state, form(), 10.0) == AskPerson()


def test_policy_deny_comes_before_the_embargo_and_the_embargo_before_the_rate_limit() -> None:
    state = PolicyState()
    tight = Policy(rate_limits=(RateLimit(1, 60.0),))
    evaluate(tight, state, form(), 0.0)
    assert decide(tight, state, form(), 1.0).reason == "rate_limited"  # type: ignore[union-attr]
    for t in (1.0, 2.0, 3.0):
        state.record_outcome(form(), "decline", t)
    assert decide(tight, state, form(), 4.0).reason == "embargo"  # type: ignore[union-attr]
    denied = Policy(form="deny", rate_limits=tight.rate_limits)
    assert decide(denied, state, form(), 4.0) == Deny("policy_deny")


def test_the_state_forgets_the_least_recently_seen_pair_beyond_its_bound() -> None:
    state = PolicyState()
    for i in range(MAX_TRACKED_PAIRS + 5):
        state.admit(form(ServerRef(name=f"s{i}")), 0.0)
    assert len(state) == MAX_TRACKED_PAIRS


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=5.0), min_size=1, max_size=60), st.integers(1, 8))
def test_no_window_ever_admits_more_than_its_limit(gaps: list[float], limit: int) -> None:
    policy, state = Policy(rate_limits=(RateLimit(limit, 10.0),)), PolicyState()
    now, admitted = 0.0, []
    for gap in gaps:
        now += gap
        if not isinstance(evaluate(policy, state, form(), now), Deny):
            admitted.append(now)
    for i, start in enumerate(admitted):
        in_window = [t for t in admitted[i:] if t < start + 10.0]
        assert len(in_window) <= limit


# -- configuration --------------------------------------------------------------------------------


def test_an_empty_file_is_the_default_policy() -> None:
    assert load_policy("") == Policy()


def test_a_full_configuration_parses_into_the_policy() -> None:
    policy = load_policy(
        """
        [default]
        form = "allow"
        url = "ask"
        rate_limits = [{ limit = 2, window = 5 }]
        embargo = { declines = 2, window = 60, duration = 120 }

        [[servers]]
        match = { name = "github", command = "npx *" }
        form = "ask"
        url = "deny"

        [[servers]]
        match.url = "https://*.corp.example/*"
        rate_limits = []
        embargo = { declines = 0 }

        [audit]
        level = "request"
        """
    )
    assert policy.form == "allow"
    assert policy.rate_limits == (RateLimit(2, 5.0),)
    assert policy.embargo == Embargo(declines=2, cancels=EMBARGO_CANCELS, window=60.0, duration=120.0)
    first, second = policy.servers
    assert first == ServerRule(ServerMatch(name="github", command="npx *"), form="ask", url="deny")
    assert second.match == ServerMatch(url="https://*.corp.example/*")
    assert second.rate_limits == ()
    # a server's embargo starts from the default section's, not from the built-in defaults
    assert second.embargo == Embargo(declines=0, cancels=EMBARGO_CANCELS, window=60.0, duration=120.0)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[default]\nfrom = 'allow'", "default.from"),
        ("[default]\nform = 'yes'", "default.form"),
        ("[default]\nform = true", "default.form"),
        ("[default]\nrate_limits = [{ limit = -1, window = 5 }]", "default.rate_limits[0].limit"),
        ("[default]\nrate_limits = [{ limit = 1, window = 0 }]", "default.rate_limits[0].window"),
        ("[default]\nrate_limits = [{ limit = 1 }]", "default.rate_limits[0]"),
        ("[default]\nrate_limits = 5", "default.rate_limits"),
        ("[default]\nembargo = { duration = 99999999 }", "default.embargo.duration"),
        ("[default]\nembargo = { declines = 1.5 }", "default.embargo.declines"),
        ("[[servers]]\nform = 'allow'", "servers[0].match"),
        ("[[servers]]\nmatch = { host = 'x' }", "servers[0].match.host"),
        ("[[servers]]\nmatch = { name = '' }", "servers[0].match.name"),
        (
            "[[servers]]\nmatch = { name = 'a' }\n[[servers]]\nmatch = { name = 'b' }\nurl = 'no'",
            "servers[1].url",
        ),
        ("servers = 3", "servers"),
        ("default = 3", "default"),
        ("[serverz]", "serverz"),
        ("this is not toml", ""),
    ],
)
def test_a_bad_configuration_names_the_offending_key(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_policy(text)
    assert info.value.key == key


def _walked_rate_wait(hits: list[float], limit: RateLimit, now: float) -> float:
    """The rate check as a walk over every hit in the window (what the one-look check replaced)."""
    for count, at in enumerate(reversed(hits), start=1):
        if at <= now - limit.window:
            break
        if count >= limit.limit:
            return at + limit.window - now
    return 0.0


@given(
    st.lists(st.floats(0, 100, allow_nan=False), max_size=60),
    st.integers(1, 20),
    st.floats(0.001, 50),
    st.floats(0, 150, allow_nan=False),
)
def test_the_rate_check_looks_once_and_decides_as_a_walk_over_the_window_would(
    times: list[float], count: int, window: float, after: float
) -> None:
    from collections import deque

    from mcp_elicit.core.policy import _rate_wait

    hits = sorted(times)
    now = (hits[-1] if hits else 0.0) + after
    limit = RateLimit(count, window)
    assert _rate_wait(deque(hits), limit, now) == _walked_rate_wait(hits, limit, now)

"""Policy decisions per second (`evaluate`: permission, embargo and rate limits), beside a floor.

Three mixes, each over a policy with ten server rules (globs on name, command and URL) and the
default rate limits:
- "one server": every request from one server, mostly denied once its windows fill;
- "100 servers": requests spread over 100 servers and 10 people, so most are admitted;
- "embargoed": one server under an embargo (the decision short-circuits before the rate limits).
Time advances by 1 ms per request, so windows fill and drain as they would under load.

The floor is the least a rate-limited permission check can do: one dict lookup for the server's
permission and one deque-based sliding window (append, drop expired, compare with the limit).

Also reports the secret guard (`classify_schema`) on a fresh four-field form per call (every
name, title and description new, so no cache helps), which runs next to the policy for every
form request, beside its floor: one plain keyword regex (`password|secret|token|api.?key|...`,
case-insensitive) over each field's name, title and description. Goal: >= 40,000 forms/s.

Variants run interleaved, alternating order each round; medians, and ratios paired per round
with their min-max.

Run: .venv/bin/python bench/policy.py [--requests N] [--rounds R] [--quick]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from _stats import conditions, fmt_ratio, interleaved, pin_one_core, ratios
from mcp_elicit.core.policy import PolicyState, Request, ServerRef, evaluate, load_policy
from mcp_elicit.core.sensitive import classify_schema

GOAL_FORMS = 40_000
CONFIG = (
    "\n".join(
        f'[[servers]]\nmatch = {{ name = "svc{i}*", command = "uvx svc{i}-mcp*" }}\nform = "allow"\n'
        for i in range(9)
    )
    + '[[servers]]\nmatch = { url = "https://*.example.com/*" }\nurl = "deny"\n'
)
KEYWORDS = re.compile(
    r"pass(word|wd|phrase|code)?|secret|token|api.?key|private.?key|otp|one.?time|pin|cvv|cvc|"
    r"card.?number|iban|ssn|social.?security|credential",
    re.IGNORECASE,
)


def policy_rate(requests: list[Request], make_state: Callable[[], PolicyState]) -> float:
    policy, state, now = load_policy(CONFIG), make_state(), 1_800_000_000.0
    start = time.perf_counter()
    for request in requests:
        evaluate(policy, state, request, now)
        now += 0.001
    return len(requests) / (time.perf_counter() - start)


def floor_rate(requests: list[Request]) -> float:
    allowed: dict[str, bool] = {}
    windows: dict[tuple[str, str], deque[float]] = {}
    now = 1_800_000_000.0
    start = time.perf_counter()
    for request in requests:
        name = request.server.name
        permitted = allowed.get(name)
        if permitted is None:
            permitted = allowed[name] = not name.startswith("blocked")
        hits = windows.get((name, request.person))
        if hits is None:
            hits = windows[(name, request.person)] = deque()
        while hits and hits[0] <= now - 10.0:
            hits.popleft()
        if permitted and len(hits) < 5:
            hits.append(now)
        now += 0.001
    return len(requests) / (time.perf_counter() - start)


def fresh_forms(n: int, offset: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "object",
            "properties": {
                f"target_{i}": {"type": "string", "title": f"Target {i}"},
                f"replicas_{i}": {"type": "integer", "description": f"How many replicas, at most {i}"},
                "notify": {"type": "boolean"},
                "api_key": {"type": "string"},
            },
        }
        for i in range(offset, offset + n)
    ]


def keyword_floor(form: dict[str, Any]) -> bool:
    hit = False
    for name, schema in form["properties"].items():
        for text in (name, schema.get("title"), schema.get("description")):
            if text and KEYWORDS.search(text):
                hit = True
    return hit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000, help="requests (and forms) per measurement")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 rounds of 20,000")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.rounds = 20_000, 2
    n = args.requests
    pin_one_core()
    print(conditions())

    one = Request(ServerRef("svc3", "uvx svc3-mcp --stdio"), "form")
    servers = [ServerRef(f"svc{i % 12}-{i}", f"uvx svc{i % 12}-mcp", "") for i in range(100)]
    many = [Request(servers[i % 100], "form" if i % 3 else "url", person=f"p{i % 10}") for i in range(n)]

    def embargoed() -> PolicyState:
        state = PolicyState()
        for t in range(3):
            state.record_outcome(one, "decline", 1_800_000_000.0 + t)
        return state

    offsets = iter(range(0, 10**9, n))

    def forms_rate(classify: Callable[[dict[str, Any]], object]) -> float:
        forms = fresh_forms(n // 4, next(offsets))  # names never seen before: the cold path
        start = time.perf_counter()
        for form in forms:
            classify(form)
        return len(forms) / (time.perf_counter() - start)

    measures: dict[str, Callable[[], float]] = {
        "policy, one server": lambda: policy_rate([one] * n, PolicyState),
        "policy, 100 servers, 10 people": lambda: policy_rate(many, PolicyState),
        "policy, embargoed": lambda: policy_rate([one] * n, embargoed),
        "floor: dict + sliding window, one": lambda: floor_rate([one] * n),
        "floor: dict + sliding window, 100": lambda: floor_rate(many),
        "secret guard, fresh 4-field forms": lambda: forms_rate(
            lambda f: classify_schema(f, "Where should this build go?")
        ),
        "floor: keyword regex, same forms": lambda: forms_rate(keyword_floor),
    }
    results = interleaved(list(measures), args.rounds, lambda name: measures[name]())
    pairs = {
        "policy, one server": "floor: dict + sliding window, one",
        "policy, 100 servers, 10 people": "floor: dict + sliding window, 100",
        "policy, embargoed": "floor: dict + sliding window, one",
        "secret guard, fresh 4-field forms": "floor: keyword regex, same forms",
    }
    print(f"{args.rounds} rounds, one core; medians per second")
    for name, values in results.items():
        line = f"{name:36s} {statistics.median(values):>12,.0f}/s"
        if name in pairs:
            line += f"   {fmt_ratio(ratios(values, results[pairs[name]]))} of its floor"
        print(line)
    forms = statistics.median(results["secret guard, fresh 4-field forms"])
    print(f"goal secret guard: >= {GOAL_FORMS:,} forms/s -> {'met' if forms >= GOAL_FORMS else 'MISSED'}")


if __name__ == "__main__":
    main()

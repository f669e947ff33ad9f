"""Policy decisions per second (`evaluate`: permission, embargo and rate limits, counting admissions).

Three mixes, each over a policy with ten server rules (globs on name, command and URL) and the
default rate limits:
- "one server": every request from one server, mostly denied once its windows fill;
- "100 servers": requests spread over 100 servers and 10 people, so most are admitted;
- "embargoed": one server under an embargo (the decision short-circuits before the rate limits).
Time advances by 1 ms per request, so windows fill and drain as they would under load.

Also reports the secret guard (`classify_schema`) on a fresh four-field form per call, which runs
next to the policy for every form request.

Run: .venv/bin/python bench/policy.py [--requests N]
"""

from __future__ import annotations

import argparse
import time

from mcp_elicit.core.policy import PolicyState, Request, ServerRef, evaluate, load_policy
from mcp_elicit.core.sensitive import classify_schema

CONFIG = (
    "\n".join(
        f'[[servers]]\nmatch = {{ name = "svc{i}*", command = "uvx svc{i}-mcp*" }}\nform = "allow"\n'
        for i in range(9)
    )
    + '[[servers]]\nmatch = { url = "https://*.example.com/*" }\nurl = "deny"\n'
)


def run(name: str, requests: list[Request], state: PolicyState) -> None:
    policy = load_policy(CONFIG)
    now = 1_800_000_000.0
    start = time.perf_counter()
    for request in requests:
        evaluate(policy, state, request, now)
        now += 0.001
    elapsed = time.perf_counter() - start
    print(f"policy, {name:<22} {len(requests) / elapsed:>12,.0f} decisions/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200_000)
    args = parser.parse_args()
    n = args.requests

    one = Request(ServerRef("svc3", "uvx svc3-mcp --stdio"), "form")
    run("one server", [one] * n, PolicyState())

    servers = [ServerRef(f"svc{i % 12}-{i}", f"uvx svc{i % 12}-mcp", "") for i in range(100)]
    many = [Request(servers[i % 100], "form" if i % 3 else "url", person=f"p{i % 10}") for i in range(n)]
    run("100 servers, 10 people", many, PolicyState())

    embargoed = PolicyState()
    for t in range(3):
        embargoed.record_outcome(one, "decline", 1_800_000_000.0 + t)
    run("embargoed", [one] * n, embargoed)

    forms = [
        {
            "type": "object",
            "properties": {
                f"target_{i}": {"type": "string", "title": f"Target {i}"},
                f"replicas_{i}": {"type": "integer", "description": f"How many replicas, at most {i}"},
                "notify": {"type": "boolean"},
                "api_key": {"type": "string"},
            },
        }
        for i in range(20_000)
    ]
    start = time.perf_counter()
    for form in forms:
        classify_schema(form, "Where should this build go?")
    elapsed = time.perf_counter() - start
    print(f"secret guard, fresh 4-field forms {len(forms) / elapsed:>11,.0f} forms/s")


if __name__ == "__main__":
    main()

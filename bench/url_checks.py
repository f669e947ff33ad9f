"""Throughput of mcp_elicit.core.urls.check_url on one core.

Run: .venv/bin/python bench/url_checks.py [--seconds N]

Prints checks per second for a mix of typical URLs (ASCII hosts: OAuth and consent pages,
app links with queries, loopback dev URLs, a few blocked ones) and, separately, for
internationalized hosts (safe IDNs, whole-script and mixed-script look-alikes). Every URL in a
corpus is distinct, so nothing is served from a cache. The target is >= 20,000 checks/s for
typical URLs.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable

from mcp_elicit.core.urls import check_url

TARGET_TYPICAL = 20_000


def typical_urls(n: int, rng: random.Random) -> list[str]:
    hosts = [
        "accounts.google.com",
        "login.microsoftonline.com",
        "github.com",
        "auth.example-saas.io",
        "mcp.acme-widgets.com",
        "portal.internal-tools.co.uk",
        "pay.stripe.com",
        "app.notion.so",
        "billing.my-startup.dev",
        "id.atlassian.com",
    ]
    paths = ["/oauth/authorize", "/elicit/", "/consent", "/login", "/settings/tokens", "/connect/"]
    urls = []
    for i in range(n):
        roll = rng.random()
        token = f"{rng.getrandbits(64):016x}"
        if roll < 0.80:
            host = rng.choice(hosts)
            query = f"?client_id=c{i}&state={token}&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb"
            urls.append(f"https://{host}{rng.choice(paths)}{i}{query}")
        elif roll < 0.90:
            urls.append(f"http://localhost:{3000 + i % 1000}/callback?code={token}")
        elif roll < 0.95:
            urls.append(f"https://www.shop{i}.example.org/item/{token}#reviews")
        else:
            urls.append(
                rng.choice(["http://example.com/x", "javascript:alert(1)", "https://10.0.0.1/"]) + f"?n={i}"
            )
    return urls


def idn_urls(n: int, rng: random.Random) -> list[str]:
    hosts = [
        "b\u00fccher.de",  # safe
        "\u5317\u4eac\u5927\u5b78.cn",  # safe
        "\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444",  # safe
        "caf\u00e9.fr",  # safe
        "\u0430\u0440\u0440\u04cf\u0435.com",  # whole-script look-alike of apple.com
        "p\u0430ypal.com",  # mixed script
        "googl\u00e9.com",  # look-alike
        "xn--e1argc3h.com",  # whole-script confusable in Punycode
    ]
    return [f"https://{rng.choice(hosts)}/path/{i}?q={rng.getrandbits(32):x}" for i in range(n)]


def rate(corpus: list[str], seconds: float, check: Callable[[str], object]) -> float:
    done = 0
    start = time.perf_counter()
    while True:
        for url in corpus:
            check(url)
        done += len(corpus)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement (default 3)")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core

    start = time.perf_counter()
    check_url("https://example.com/")  # builds the PSL, the ICU spoof checker and the skeleton table
    first = time.perf_counter() - start

    rng = random.Random(20_250_701)
    typical = typical_urls(20_000, rng)
    idn = idn_urls(5_000, rng)
    trusted = ["mycorp.com", "mycorp.internal.example", "partner.io"]

    results = {
        "typical URLs": rate(typical, args.seconds, check_url),
        "typical URLs, 3 trusted domains": rate(
            typical, args.seconds, lambda u: check_url(u, trusted_domains=trusted)
        ),
        "IDN URLs": rate(idn, args.seconds, check_url),
    }
    print(f"first call (builds PSL + ICU spoof checker): {first * 1000:.0f} ms")
    for name, per_second in results.items():
        print(f"{name:34s} {per_second:10,.0f} checks/s  ({1e6 / per_second:6.1f} us/check)")
    verdict = "meets" if results["typical URLs"] >= TARGET_TYPICAL else "MISSES"
    print(f"target for typical URLs: {TARGET_TYPICAL:,} checks/s on one core -> {verdict}")


if __name__ == "__main__":
    main()

"""Throughput of mcp_elicit.core.urls.check_url on one core, beside its floor.

Run: .venv/bin/python bench/url_checks.py [--seconds S] [--rounds N] [--quick]

Corpora (every URL distinct): typical URLs (ASCII hosts: OAuth and consent pages, app links with
queries, loopback dev URLs, a few blocked ones), the same with three trusted domains, typical URLs
whose every host is a fresh registrable domain (no label cache can help), internationalized hosts
(safe IDNs, whole-script and mixed-script look-alikes) and IDN hosts whose every label is fresh.

The floor for each corpus is the WHATWG parse (`ada_url.URL(u).hostname`) plus the public suffix
lookup (`PublicSuffixList.privatesuffix`) alone: what any URL check must pay. Variants run
interleaved, alternating order each round; figures are medians over rounds, ratios paired within
a round with their min-max. Goals: >= 60,000 checks/s typical, >= 12,000/s IDN hosts.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import ada_url
from publicsuffixlist import PublicSuffixList

from _stats import conditions, fmt_ratio, interleaved, pin_one_core, rate, ratios
from mcp_elicit.core.urls import check_url

GOALS = {"typical URLs": 60_000, "IDN URLs": 12_000}
TRUSTED = ["mycorp.com", "mycorp.internal.example", "partner.io"]


def typical_urls(n: int, rng: random.Random, fresh_hosts: bool = False) -> list[str]:
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
        if fresh_hosts:
            host = rng.choice(hosts).replace(".", f"{i}.", 1) if roll < 0.5 else f"auth.site{i}-tools.com"
            urls.append(f"https://{host}{rng.choice(paths)}?client_id=c{i}&state={token}")
        elif roll < 0.80:
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


IDN_HOSTS = [
    "b\u00fccher.de",  # safe
    "\u5317\u4eac\u5927\u5b78.cn",  # safe
    "\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444",  # safe
    "caf\u00e9.fr",  # safe
    "\u0430\u0440\u0440\u04cf\u0435.com",  # whole-script look-alike of apple.com
    "p\u0430ypal.com",  # mixed script
    "googl\u00e9.com",  # look-alike
    "xn--e1argc3h.com",  # whole-script confusable in Punycode
]
# Letters to build fresh labels from, per script (each label stays in one script).
_SCRIPTS = [
    "b\u00fccherstra\u00dfe",
    "\u5317\u4eac\u5927\u5b78\u6771\u4eac",
    "\u043f\u0440\u0438\u043c\u0435\u0440\u0434\u043e\u043c",
]


def idn_urls(n: int, rng: random.Random, fresh_hosts: bool = False) -> list[str]:
    if not fresh_hosts:
        return [f"https://{rng.choice(IDN_HOSTS)}/path/{i}?q={rng.getrandbits(32):x}" for i in range(n)]
    urls = []
    for i in range(n):
        letters = rng.choice(_SCRIPTS)
        label = "".join(rng.choice(letters) for _ in range(8))
        label += "".join(letters[int(d) % len(letters)] for d in str(i))
        tld = rng.choice(["de", "cn", "\u0440\u0444", "com"])
        urls.append(f"https://{label}.{tld}/path/{i}?q={rng.getrandbits(32):x}")
    return urls


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement (default 1)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--quick", action="store_true", help="2 rounds of 0.3 s")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = 0.3, 2
    pin_one_core()
    print(conditions())

    start = time.perf_counter()
    check_url("https://example.com/")  # builds the PSL, the ICU spoof checker and the skeleton table
    first = time.perf_counter() - start
    psl = PublicSuffixList()

    def floor(url: object) -> object:
        try:
            host = ada_url.URL(str(url)).hostname
        except ValueError:
            return None
        return psl.privatesuffix(host)

    rng = random.Random(20_250_701)
    corpora = {
        "typical URLs": typical_urls(20_000, rng),
        "typical URLs, fresh hosts": typical_urls(20_000, rng, fresh_hosts=True),
        "IDN URLs": idn_urls(5_000, rng),
        "IDN URLs, fresh labels": idn_urls(5_000, rng, fresh_hosts=True),
    }
    variants = {
        "typical URLs": ("typical URLs", check_url),
        "typical URLs, 3 trusted domains": (
            "typical URLs",
            lambda u: check_url(str(u), trusted_domains=TRUSTED),
        ),
        "typical URLs, fresh hosts": ("typical URLs, fresh hosts", check_url),
        "IDN URLs": ("IDN URLs", check_url),
        "IDN URLs, fresh labels": ("IDN URLs, fresh labels", check_url),
    }
    names = [*variants, *(f"floor: {c}" for c in corpora)]

    def measure(name: str) -> float:
        if name.startswith("floor: "):
            return rate(corpora[name[7:]], args.seconds, floor)
        corpus, fn = variants[name]
        return rate(corpora[corpus], args.seconds, fn)  # type: ignore[arg-type]

    results = interleaved(names, args.rounds, measure)
    print(f"first call (builds PSL + ICU spoof checker): {first * 1000:.0f} ms")
    print(f"{args.rounds} rounds x {args.seconds:g} s per variant, one core; median checks/s")
    print(f"{'variant':34s} {'checks/s':>10s} {'us/check':>9s} {'floor/s':>10s}  ratio to floor (min-max)")
    for name, (corpus, _) in variants.items():
        values, bases = results[name], results[f"floor: {corpus}"]
        med, base = statistics.median(values), statistics.median(bases)
        print(f"{name:34s} {med:10,.0f} {1e6 / med:9.1f} {base:10,.0f}  {fmt_ratio(ratios(values, bases))}")
    for name, goal in GOALS.items():
        med = statistics.median(results[name])
        print(f"goal {name}: >= {goal:,}/s -> {'met' if med >= goal else 'MISSED'} ({med:,.0f}/s)")


if __name__ == "__main__":
    main()

"""The fast URL path (direct ada calls, cached label analyses) decides exactly as the plain one.

The reference parses through ada_url's public class and starts every check from empty caches,
so any difference in a field of the verdict is a bug of the fast path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_elicit.core import _url_hosts as hosts
from mcp_elicit.core import _url_parse, urls
from mcp_elicit.core.urls import check_url, verdict_as_json

VECTORS = json.loads((Path(__file__).parent / "url_vectors.json").read_text(encoding="utf-8"))["cases"]
_CACHED = (hosts._decode_label, hosts._label_problems, hosts._skeletons, hosts._check_host)


def _reference(raw: str, **kwargs: Any) -> dict[str, Any]:
    for cached in _CACHED:
        cached.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(urls, "parse_url", _url_parse.parse_public)
        return verdict_as_json(check_url(raw, **kwargs))


def _parse_both(raw: str) -> tuple[object, object]:
    results: list[object] = []
    for parse in (_url_parse.parse, _url_parse.parse_public):
        try:
            results.append(parse(raw))
        except UnicodeError as exc:
            results.append(type(exc))
    return results[0], results[1]


_chars = st.sampled_from(
    [
        *"abcxyz019-.%@:[]/\\?#",
        *"\u0430\u0435\u0440\u00e9\u00fc\u00df\u30fc\u30ce\u4e00\u5317\u0307\u00b7",
        "\u200b",
        "\u202e",
        "\uff10",
        "\U0001f355",
        "xn--",
        "\ud800",
        "\t",
        "0x7f",
        "[::1]",
    ]
)
_labels = st.lists(st.lists(_chars, min_size=1, max_size=8).map("".join), min_size=1, max_size=4)
_urls = st.builds(
    lambda scheme, sep, labels, tld, rest: scheme + sep + ".".join(labels) + tld + rest,
    st.sampled_from(["https", "http", "HTTPS", "javascript", "file", "ftp", "x-app", ""]),
    st.sampled_from(["://", ":", ":\\\\", "://user:pw@", "://@", ""]),
    _labels,
    st.sampled_from(["", ".com", ".co.uk", ".github.io", ".\u0440\u0444", ".cat", ".is", ".jp", "."]),
    st.text(max_size=15),
)
_settings = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@_settings
@given(st.one_of(_urls, st.text(max_size=80)))
def test_the_direct_parse_returns_the_same_fields_as_ada_urls_public_class(raw: str) -> None:
    fast, public = _parse_both(raw)
    assert fast == public


@_settings
@given(_urls, st.sampled_from([(), ("paypal.com",), ("mycorp.com", "b\u00fccher.de")]))
def test_the_fast_path_gives_the_reference_verdict_cold_and_warm(raw: str, trusted: tuple[str, ...]) -> None:
    expected = _reference(raw, trusted_domains=trusted)
    assert verdict_as_json(check_url(raw, trusted_domains=trusted)) == expected  # caches just filled
    assert verdict_as_json(check_url(raw, trusted_domains=trusted)) == expected  # served from them


def test_every_vector_gets_the_reference_verdict_from_the_warm_fast_path() -> None:
    for case in VECTORS:
        if case["input"] is None:
            continue
        kwargs = {
            "trusted_domains": case.get("trusted", ()),
            "allow_http_loopback": case.get("allow_http_loopback", True),
        }
        expected = _reference(case["input"], **kwargs)
        check_url(case["input"], **kwargs)
        assert verdict_as_json(check_url(case["input"], **kwargs)) == expected, case["input"]


def test_reasons_come_in_the_documented_order() -> None:
    v = check_url("http://user:pw@0x7f.1:8080/\u202e")
    assert len(v.reasons) > 2
    assert list(v.reasons) == [code for code in urls.REASONS if code in v.reasons]


def test_overlong_hosts_are_judged_without_entering_the_host_cache() -> None:
    hosts._check_host.cache_clear()
    v = check_url("https://" + "a." * 200 + "example.com/")
    assert "host_too_long" in v.reasons
    assert hosts._check_host.cache_info().currsize == 0

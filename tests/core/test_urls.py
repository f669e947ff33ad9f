"""check_url: browser-grade URL checks (spec rules U1, U3, U4, U5), driven by tests/core/url_vectors.json."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from publicsuffixlist import PublicSuffixList

from mcp_elicit.core import _url_hosts as hosts
from mcp_elicit.core import urls
from mcp_elicit.core.data.well_known_domains import WELL_KNOWN_DOMAINS
from mcp_elicit.core.urls import REASONS, UrlVerdict, check_url, verdict_as_json

VECTORS = json.loads((Path(__file__).parent / "url_vectors.json").read_text(encoding="utf-8"))["cases"]


def _raw(case: dict[str, Any]) -> str:
    if case["input"] is not None:
        return str(case["input"])
    gen = case["generate"]
    return str(gen["prefix"] + gen["repeat"] * gen["count"] + gen["suffix"])


def _run(case: dict[str, Any]) -> UrlVerdict:
    return check_url(
        _raw(case),
        trusted_domains=case.get("trusted", ()),
        allow_http_loopback=case.get("allow_http_loopback", True),
    )


def _case_id(case: dict[str, Any]) -> str:
    return ascii(_raw(case))[:60]


# --- the vectors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", VECTORS, ids=_case_id)
def test_each_published_vector_gets_its_expected_verdict_and_reasons_U1_U3_U4_U5(
    case: dict[str, Any],
) -> None:
    v = _run(case)
    assert v.verdict == case["verdict"]
    if case.get("exact"):
        assert list(v.reasons) == case["reasons"]
    else:
        assert set(case["reasons"]) <= set(v.reasons)
    assert not set(case.get("absent", ())) & set(v.reasons)
    for field in ("canonical", "host_display", "registrable_domain", "lookalike_of"):
        if field in case:
            assert getattr(v, field) == case[field], field
    if "parts" in case:
        assert list(dataclasses.astuple(v.parts)) == case["parts"]


def test_every_vector_names_why_and_its_source() -> None:
    assert len(VECTORS) >= 80
    for case in VECTORS:
        assert case["why"].strip()
        assert case["source"].strip()
        assert set(case["reasons"]) <= set(REASONS)


def test_the_vectors_cover_every_reason_code_except_the_internal_failure() -> None:
    seen = {code for case in VECTORS for code in _run(case).reasons}
    assert set(REASONS) - seen == {"check_failed"}


def test_every_reason_code_is_documented_in_the_module_docstring_table() -> None:
    doc = urls.__doc__ or ""
    table = dict(re.findall(r"^([a-z_]+)\s+(ok|warn|block)\s", doc, flags=re.MULTILINE))
    assert table == dict(REASONS)


def test_the_verdict_is_the_worst_severity_among_the_reasons() -> None:
    rank = {"ok": 0, "warn": 1, "block": 2}
    for case in VECTORS:
        v = _run(case)
        worst = max((rank[REASONS[code]] for code in v.reasons), default=0)
        assert rank[v.verdict] == worst


# --- specific behaviour -------------------------------------------------------------------------


def test_an_internal_error_becomes_a_block_not_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(hosts, "_check_domain", explode)
    hosts._check_host.cache_clear()  # the host analysis is cached; reach the patched function
    v = check_url("https://example.com/")
    assert (v.verdict, v.reasons, v.raw) == ("block", ("check_failed",), "https://example.com/")


def test_a_non_string_url_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        check_url(None)  # type: ignore[arg-type]


def test_a_single_string_of_trusted_domains_counts_as_one_domain() -> None:
    v = check_url("https://rnycorp.com/", trusted_domains="mycorp.com")
    assert v.lookalike_of == "mycorp.com"


def test_trusted_entries_that_are_not_hosts_are_ignored() -> None:
    v = check_url("https://example.com/", trusted_domains=["", "https://", "10.0.0.1", "::"])
    assert v.verdict == "ok"


def test_a_trusted_entry_that_is_not_a_string_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        check_url("https://example.com/", trusted_domains=[b"example.com"])  # type: ignore[list-item]


def test_an_unparseable_url_keeps_the_raw_string_for_the_warning_U1() -> None:
    v = check_url("https://exa mple.com/")
    assert (v.verdict, v.canonical, v.host, v.raw) == ("block", None, None, "https://exa mple.com/")
    assert str(v.parts) == "https://exa mple.com/"


def test_a_verdict_is_frozen() -> None:
    v = check_url("https://example.com/")
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.verdict = "ok"  # type: ignore[misc]


def test_unsafe_idn_labels_stay_in_punycode_and_the_display_url_shows_them_U3() -> None:
    v = check_url("https://www.p\u0430ypal.com/login")
    assert v.host == "www.xn--pypal-4ve.com"
    assert v.display_url == "https://www.xn--pypal-4ve.com/login"


def test_a_safe_idn_host_is_shown_decoded_with_its_registrable_domain_highlighted_U3() -> None:
    v = check_url("https://shop.xn--bcher-kva.de/a")
    assert dataclasses.astuple(v.parts) == ("https://", "shop.", "b\u00fccher.de", "/a")
    assert v.canonical == "https://shop.xn--bcher-kva.de/a"


def test_verdict_as_json_has_the_documented_keys_and_round_trips_through_json() -> None:
    data = verdict_as_json(check_url("https://paypa1.com/x"))
    assert json.loads(json.dumps(data)) == data
    assert data["url"] == "https://paypa1.com/x"
    assert data["verdict"] == "block"
    assert data["reasons"] == ["lookalike"]
    assert {"canonical", "host_display", "registrable_domain", "lookalike_of", "parts"} <= set(data)


def test_the_heavy_objects_are_built_once() -> None:
    assert hosts._engine() is hosts._engine()


# --- the well-known list ---------------------------------------------------------------------------


def test_every_well_known_domain_is_its_own_registrable_domain() -> None:
    psl = PublicSuffixList()
    assert [d for d in WELL_KNOWN_DOMAINS if psl.privatesuffix(d) != d] == []
    assert len(set(WELL_KNOWN_DOMAINS)) == len(WELL_KNOWN_DOMAINS)
    assert 100 <= len(WELL_KNOWN_DOMAINS) <= 200


def test_no_two_well_known_domains_share_a_skeleton_and_each_checks_ok() -> None:
    engine = hosts._engine()
    owners: dict[str, str] = {}
    for domain in WELL_KNOWN_DOMAINS:
        for skeleton in hosts._skeletons_of(engine, domain):
            assert owners.setdefault(skeleton, domain) == domain
        assert check_url(f"https://{domain}/").verdict == "ok", domain


# --- properties -------------------------------------------------------------------------------------

_settings = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ASCII host material plus Cyrillic a/e, accents, sharp s, Japanese, invisible, bidi, full-width, emoji.
_host_chars = st.sampled_from(
    [*"abcxyz019-.%@:[]", *"\u0430\u0435\u00e9\u00df\u30fc\u4e00\u200b\u202e\u0307\uff10\U0001f355"]
)
_urlish = st.builds(
    lambda scheme, sep, host, rest: scheme + sep + host + rest,
    st.sampled_from(["https", "http", "HTTPS", "javascript", "data", "file", "ftp", "x-app", ""]),
    st.sampled_from(["://", ":", ":/", ":\\\\", "://user:pw@", ""]),
    st.text(_host_chars, max_size=30),
    st.text(max_size=20),
)


# Any string at all, lone surrogates included (a JSON peer can send "\ud800").
_any_text = st.text(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=300)


@_settings
@given(st.one_of(_any_text, _urlish, _any_text.map(lambda s: "https://" + s)))
def test_check_url_never_raises_and_never_fails_internally_U1(raw: str) -> None:
    v = check_url(raw)
    assert v.verdict in ("ok", "warn", "block")
    assert "check_failed" not in v.reasons
    assert set(v.reasons) <= set(REASONS)
    if v.canonical is None:
        assert v.verdict == "block"


@_settings
@given(_urlish)
def test_the_canonical_form_is_a_fixed_point(raw: str) -> None:
    v = check_url(raw)
    assume(v.canonical is not None)
    assert v.canonical is not None
    again = check_url(v.canonical)
    assert again.canonical == v.canonical


@_settings
@given(_urlish)
def test_the_display_parts_spell_the_canonical_url_when_the_host_is_ascii(raw: str) -> None:
    v = check_url(raw)
    assume(v.canonical is not None and v.host_display == v.host)
    assert str(v.parts) == v.canonical


_label = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789"), min_size=1, max_size=20).filter(
    lambda s: not s.startswith("xn--")
)


@_settings
@given(
    st.lists(_label, min_size=1, max_size=4),
    st.sampled_from(["com", "org", "net", "de", "co.uk", "io", "dev"]),
    st.text(st.sampled_from("abz019/-_.~"), max_size=30),
)
def test_a_canonical_https_url_with_an_ascii_public_host_is_ok_U4(
    labels: list[str], suffix: str, path: str
) -> None:
    v = check_url("https://" + ".".join([*labels, suffix]) + "/" + path)
    assume(v.canonical is not None and v.lookalike_of is None and "embedded_domain" not in v.reasons)
    assume("no_registrable_domain" not in v.reasons)  # private PSL suffixes such as jp.net, github.io
    canonical = check_url(v.canonical)
    assert (canonical.verdict, canonical.reasons) == ("ok", ())

"""Host analysis for the URL checks (`core.urls`): IDN labels, look-alike skeletons, trusted
domains and the heavy objects behind them (ICU's spoof checker, the Public Suffix List), built
once on first use. Pure and cached; `core.urls` is the entry point and documents the reasons.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Any, Final, NamedTuple

import ada_url
import icu
import idna
from publicsuffixlist import PublicSuffixList

from mcp_elicit.core.data import idn_policy
from mcp_elicit.core.data.well_known_domains import WELL_KNOWN_DOMAINS
from mcp_elicit.errors import InvalidArgument

# DNS limits (RFC 1035 §2.3.4): a host that long cannot resolve, so it only serves to push the
# registrable domain out of view.
MAX_HOST_LENGTH: Final = 253
MAX_LABEL_LENGTH: Final = 63
# ASCII look-alikes ("rn" for "m", "1" for "l") are matched only when the registrable label has
# at least this many characters: short names collide with popular ones by chance.
MIN_ASCII_LOOKALIKE_LABEL: Final = 5
# Characters that pass for several letters (þ, œ, ӏ) multiply skeletons; cap the count so one
# host cannot cost more than a few dozen ICU calls.
MAX_SKELETON_VARIANTS: Final = 16
# Longest run of subdomain labels compared against known domains (a.b.c.d covers every listed
# domain, which have at most three labels).
MAX_EMBEDDED_WINDOW: Final = 4
# Distinct trusted-domain entries (and trusted sets) whose normalised form is cached.
MAX_TRUSTED_CACHE: Final = 1_024
# Distinct hosts, labels and domains whose analyses (host verdict, IDN decoding, label verdict,
# skeletons) are cached, per cache: they are pure, and consent URLs come from few hosts. A stream
# of fresh hosts only misses; hosts over MAX_HOST_LENGTH are never cached, so no entry is large.
MAX_LABEL_CACHE: Final = 4_096


# --- heavy objects, built once on first use ----------------------------------------------------


class _Engine(NamedTuple):
    psl: PublicSuffixList
    spoof: Any  # icu.SpoofChecker
    sets: dict[str, Any]  # name -> frozen icu.UnicodeSet
    scripts: tuple[tuple[Any, Any, tuple[str, ...]], ...]  # (letters, lookalikes, native TLDs)
    known: dict[str, tuple[str, str]]  # skeleton -> (well-known domain, same for display)


@cache
def _engine() -> _Engine:
    spoof = icu.SpoofChecker()
    # The identifier set (UTS 39 recommended + UTS 31 inclusion) minus what browsers remove.
    allowed = icu.UnicodeSet(
        "["
        + spoof.getRecommendedUnicodeSet().toPattern()
        + spoof.getInclusionUnicodeSet().toPattern()
        + "-"
        + idn_policy.REMOVED_FROM_ALLOWED
        + "]"
    )
    allowed.freeze()
    spoof.setAllowedUnicodeSet(allowed)
    spoof.setRestrictionLevel(icu.URestrictionLevel.HIGHLY_RESTRICTIVE)
    spoof.setChecks(icu.USpoofChecks.ALL_CHECKS | icu.USpoofChecks.AUX_INFO)

    def uset(pattern: str) -> Any:
        frozen = icu.UnicodeSet(pattern)
        frozen.freeze()
        return frozen

    sets = {
        "kana": uset("[[:scx=Kana:]]"),
        "kana_hira": uset("[[:scx=Kana:][:scx=Hira:]]"),
        "hira": uset("[[:scx=Hira:]]"),
        "japanese": uset("[[:scx=Kana:][:scx=Hira:][:scx=Hani:]]"),
        "cjk": uset("[[:scx=Kana:][:scx=Hira:][:scx=Hani:][:scx=Bopo:]]"),
        "lgc": uset("[[:scx=Latn:][:scx=Grek:][:scx=Cyrl:]]"),
        "lgc_ascii": uset(r"[[:Latin:][:Greek:][:Cyrillic:][0-9\u002e_\u002d][\u0300-\u0339]]"),
        "non_ascii_latin": uset("[[:Latin:] - [a-zA-Z]]"),
        "kana_context": uset(idn_policy.KANA_CONTEXT_LETTERS),
        "diacritics": uset(idn_policy.COMBINING_DIACRITICS),
    }
    scripts = tuple(
        (uset(s.letters), uset("[" + s.latin_lookalikes + "]"), s.native_tlds)
        for s in idn_policy.WHOLE_SCRIPT_CONFUSABLES
    )
    engine = _Engine(PublicSuffixList(), spoof, sets, scripts, {})
    for domain in WELL_KNOWN_DOMAINS:
        for skeleton in _skeletons_of(engine, domain):
            engine.known.setdefault(skeleton, (domain, domain))
    return engine


_KNOWN_SET: Final = frozenset(WELL_KNOWN_DOMAINS)
_EXTRA_TABLE: Final = str.maketrans(idn_policy.EXTRA_CONFUSABLES)
_DIGITS: Final = frozenset("0123456789")
_DIGIT_LOOKALIKES: Final = frozenset(idn_policy.DIGIT_LOOKALIKES)
_SLASH_LOOKALIKES: Final = frozenset(idn_policy.SLASH_LOOKALIKES)
_CJK_LATIN_LOOKALIKES: Final = frozenset(idn_policy.CJK_LATIN_LOOKALIKES)

# Characters that are never legitimate in a URL someone is asked to open.
_BIDI_RE: Final = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_INVISIBLE_RE: Final = re.compile(
    "[\u00a0\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2000-\u200d\u2028\u2029\u202f"
    "\u205f-\u2064\u206a-\u206f\u2800\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0"
    "\U0001d173-\U0001d17a\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_CONTROL_RE: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SUSPICIOUS_RE: Final = re.compile(
    f"{_BIDI_RE.pattern}|{_INVISIBLE_RE.pattern}|{_CONTROL_RE.pattern}|[\t\n\r]"
)
_ESCAPE_RE: Final = re.compile(f"{_SUSPICIOUS_RE.pattern}|[\ud800-\udfff]")
# WHATWG: leading/trailing C0 controls and spaces are stripped before parsing.
_EDGE: Final = "".join(chr(c) for c in range(0x21))
# The authority as the WHATWG parser finds it for special schemes (any mix of / and \ after ':').
_AUTHORITY_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[/\\]*([^/\\?#]*)")
_SPECIAL: Final = frozenset({"http", "https", "ws", "wss", "ftp", "file"})

# RFC 1918 private, RFC 6598 shared address space; everything else non-global is "reserved".
_PRIVATE_V4: Final = tuple(
    ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
)
_PRIVATE_V6: Final = (ipaddress.IPv6Network("fc00::/7"), ipaddress.IPv6Network("fec0::/10"))


# --- domain hosts ---------------------------------------------------------------------------------


class _HostInfo(NamedTuple):
    display: str  # host as shown
    subdomain: str  # display span before the registrable domain, with its trailing dot
    highlight: str  # display span to emphasise
    registrable: str | None  # registrable domain, display form
    lookalike_of: str | None


@lru_cache(maxsize=MAX_LABEL_CACHE)
def _check_host(hostname: str, trusted: tuple[str, ...]) -> tuple[_HostInfo, frozenset[str]]:
    """`_check_domain` cached per host and trusted set: pure, and consent URLs come from few hosts."""
    found: set[str] = set()
    info = _check_domain(hostname, _trusted_table(trusted), found)
    return info, frozenset(found)


def _check_domain(hostname: str, trusted: _Trusted, found: set[str]) -> _HostInfo:
    engine = _engine()
    dot = "." if hostname.endswith(".") else ""
    bare = hostname[:-1] if dot else hostname
    labels = bare.split(".")
    if not bare.strip("."):
        found.add("empty_host")  # "https://./" and "https://%2e/" parse, yet name nothing
        return _HostInfo(hostname, "", hostname, None, None)
    if len(bare) > MAX_HOST_LENGTH or (
        len(bare) > MAX_LABEL_LENGTH and any(len(label) > MAX_LABEL_LENGTH for label in labels)
    ):
        found.add("host_too_long")  # blocked already; analysing 30,000 labels would only cost time
        return _HostInfo(hostname, "", hostname, None, None)
    if labels[-1] == "localhost":
        found.add("loopback")  # RFC 6761 §6.3; W3C Secure Contexts treats *.localhost alike
        return _HostInfo(hostname, "", hostname, None, None)

    if "xn--" in bare:
        unicode_labels, display_labels = _idn_labels(labels, found)
    else:
        unicode_labels = display_labels = labels
    unicode_host = ".".join(unicode_labels)
    registrable = engine.psl.privatesuffix(unicode_host)
    if registrable is None:
        found.add("no_registrable_domain")
        display = ".".join(display_labels) + dot
        return _HostInfo(display, "", display, None, None)

    count = registrable.count(".") + 1
    registrable_ascii = ".".join(labels[-count:])
    lookalike_of = None
    if registrable_ascii not in _KNOWN_SET and registrable_ascii not in trusted.domains:
        first_label = labels[-count]
        if not registrable.isascii() or len(first_label) >= MIN_ASCII_LOOKALIKE_LABEL:
            lookalike_of = _match_skeleton(registrable, registrable_ascii, trusted)
    if lookalike_of is not None:
        found.add("lookalike")
        display_labels = labels  # never decode a look-alike: show what it really is
    sub_unicode = unicode_labels[:-count]
    if len(sub_unicode) >= 2 and _embeds_known_domain(sub_unicode, trusted):
        found.add("embedded_domain")

    sub_display = display_labels[:-count]
    registrable_display = ".".join(display_labels[-count:])
    subdomain = ".".join(sub_display) + "." if sub_display else ""
    return _HostInfo(
        subdomain + registrable_display + dot,
        subdomain,
        registrable_display + dot,
        registrable_display,
        lookalike_of,
    )


def _idn_labels(labels: list[str], found: set[str]) -> tuple[list[str], list[str]]:
    """Decode xn-- labels; keep a label in Punycode for display unless it passes the IDN policy."""
    decoded: list[tuple[str, bool]] = [_decode_label(label) for label in labels]
    tld_ascii = labels[-1]
    tld_unicode = decoded[-1][0]
    unicode_labels = []
    display_labels = []
    for label, (text, valid) in zip(labels, decoded, strict=True):
        unicode_labels.append(text)
        if not label.startswith("xn--"):
            display_labels.append(label)
            continue
        found.add("punycode")
        problems = set() if text.isascii() else set(_label_problems(text, tld_ascii, tld_unicode))
        if not valid:
            problems.add("disallowed_chars")
        found |= problems
        display_labels.append(label if problems else text)
    return unicode_labels, display_labels


@lru_cache(maxsize=MAX_LABEL_CACHE)
def _decode_label(label: str) -> tuple[str, bool]:
    """(Unicode text, valid under IDNA2008) of one canonical ASCII label."""
    if not label.startswith("xn--"):
        return label, True
    try:
        return idna.decode(label), True
    except (idna.IDNAError, UnicodeError, ValueError):
        pass
    # WHATWG (UTS 46) accepts labels IDNA2008 refuses, e.g. emoji; decode them for analysis only.
    try:
        return label[4:].encode("ascii").decode("punycode"), False
    except (UnicodeError, ValueError):
        return label, False


@lru_cache(maxsize=MAX_LABEL_CACHE)
def _label_problems(label: str, tld_ascii: str, tld_unicode: str) -> frozenset[str]:
    """Reason codes for one non-ASCII label under the browser IDN display policy (cached: pure)."""
    return frozenset(_label_problems_uncached(label, tld_ascii, tld_unicode))


def _label_problems_uncached(label: str, tld_ascii: str, tld_unicode: str) -> set[str]:
    engine = _engine()
    sets = engine.sets
    problems: set[str] = set()
    if "\u200c" in label or "\u200d" in label:
        problems.add("invisible_chars")
    result = engine.spoof.check(label)
    if result & icu.USpoofChecks.CHAR_LIMIT:
        problems.add("disallowed_chars")
    if result & icu.USpoofChecks.INVISIBLE:
        problems.add("invisible_chars")
    if result & (icu.USpoofChecks.RESTRICTION_LEVEL | icu.USpoofChecks.MIXED_NUMBERS):
        problems.add("mixed_script")
    if problems:
        return problems
    if _tld_specific_letter(label, tld_ascii) or _unsafe_middle_dot(label, tld_ascii):
        return {"dangerous_pattern"}

    level = result & icu.URestrictionLevel.RESTRICTION_LEVEL_MASK
    if (
        level == icu.URestrictionLevel.SINGLE_SCRIPT_RESTRICTIVE
        and sets["kana_context"].containsNone(label)
        and sets["diacritics"].containsNone(label)
    ):
        if label not in idn_policy.ALLOWED_WHOLE_SCRIPT_WORDS and _whole_script_confusable(
            label, tld_ascii, tld_unicode
        ):
            problems.add("whole_script_confusable")
        if _digit_lookalike(label):
            problems.add("digit_lookalike")
        return problems
    if _digit_lookalike(label):
        problems.add("digit_lookalike")
    elif sets["non_ascii_latin"].containsSome(label) and not sets["lgc_ascii"].containsAll(label):
        problems.add("mixed_script")  # accented Latin next to another script
    elif _dangerous_pattern(label):
        problems.add("dangerous_pattern")
    return problems


def _tld_specific_letter(label: str, tld_ascii: str) -> bool:
    if len(label) < 2:
        return False
    return any(ch in label and tld_ascii not in tlds for ch, tlds in idn_policy.TLD_SPECIFIC_LETTERS.items())


def _unsafe_middle_dot(label: str, tld_ascii: str) -> bool:
    """U+00B7 is Catalan ela geminada (l·l) and only that, only under .cat (RFC 5892 A.3)."""
    if "\u00b7" not in label:
        return False
    if tld_ascii != "cat":
        return True
    return any(
        ch == "\u00b7" and (i == 0 or i == len(label) - 1 or label[i - 1] != "l" or label[i + 1] != "l")
        for i, ch in enumerate(label)
    )


def _whole_script_confusable(label: str, tld_ascii: str, tld_unicode: str) -> bool:
    for letters, lookalikes, native_tlds in _engine().scripts:
        if not letters.containsSome(label):  # one ICU call instead of one per character
            continue
        used = [ch for ch in label if letters.contains(ch)]
        if used and all(lookalikes.contains(ch) for ch in used):
            # Normal in the script's own country TLDs and under TLDs written in that script.
            return not (tld_ascii in native_tlds or letters.containsSome(tld_unicode))
    return False


def _digit_lookalike(label: str) -> bool:
    chars = set(label)
    return bool(chars & _DIGIT_LOOKALIKES) and chars <= (_DIGITS | _DIGIT_LOOKALIKES)


def _dangerous_pattern(label: str) -> bool:
    """Character contexts browsers refuse to display (Chromium's dangerous-pattern rules)."""
    sets = _engine().sets
    kana, hira, kana_hira = sets["kana"], sets["hira"], sets["kana_hira"]
    japanese, cjk, lgc = sets["japanese"], sets["cjk"], sets["lgc"]
    last = len(label) - 1
    for i, ch in enumerate(label):
        prev = label[i - 1] if i > 0 else ""
        nxt = label[i + 1] if i < last else ""
        if (
            ch in _SLASH_LOOKALIKES
            and prev
            and nxt
            and not japanese.contains(prev)
            and not japanese.contains(nxt)
        ):
            return True  # ノ ソ ゾ ン 丶 乀 乁 丿 between non-Japanese characters reads as "/"
        if ch in "\u30fd\u30fe" and (not prev or not kana.contains(prev)):
            return True  # iteration marks only after Katakana
        if ch in "\u3078\u3079\u307a" and 0 < i < last and all(kana.contains(c) for c in label if c != ch):
            return True  # Hiragana へべぺ inside Katakana looks like Katakana ヘベペ
        if ch in "\u30d8\u30d9\u30da" and 0 < i < last and all(hira.contains(c) for c in label if c != ch):
            return True  # and the reverse
        if ch == "\u30fc" and (not prev or not kana_hira.contains(prev)):
            return True  # prolonged sound mark ー reads as a dash
        if ch == "\u30fb" and ((prev and "a" <= prev <= "z") or (nxt and "a" <= nxt <= "z")):
            return True  # Katakana middle dot ・ next to Latin reads as "."
        if ch in _CJK_LATIN_LOOKALIKES and (
            (prev and not cjk.contains(prev)) or (nxt and not cjk.contains(nxt))
        ):
            return True  # 一 丁 七 十 工 ... pass for Latin letters or dashes next to non-CJK
        if "\u0300" <= ch <= "\u0339" and prev and (not lgc.contains(prev) or prev == "\u0131"):
            return True  # combining marks only on Latin, Greek, Cyrillic; never on dotless i
        if ch in "\u3099\u309a":
            return True  # combining Kana voiced sound marks
        if ch == "\u0307" and prev in ("i", "j", "l"):
            return True  # a dot above i, j or l is invisible
    return False


# --- skeletons, look-alikes, trusted domains ------------------------------------------------------


@lru_cache(maxsize=MAX_LABEL_CACHE)
def _skeletons(text: str) -> frozenset[str]:
    """Confusable skeletons of `text` (cached: pure, and domains repeat)."""
    return _skeletons_of(_engine(), text)


def _skeletons_of(engine: _Engine, text: str) -> frozenset[str]:
    """Confusable skeletons of `text` (UTS 39 §4 plus the browser supplements)."""
    spoof = engine.spoof
    if text.isascii():
        return frozenset((spoof.getSkeleton(0, text),))
    if engine.sets["lgc_ascii"].containsAll(text):
        # Accents do not save a look-alike: compare "googlé" as "google".
        stripped = unicodedata.normalize("NFD", text)
        text = unicodedata.normalize("NFC", "".join(c for c in stripped if unicodedata.category(c) != "Mn"))
    text = text.translate(_EXTRA_TABLE)
    variants = {text}
    for char, alternatives in idn_policy.SKELETON_ALTERNATIVES.items():
        if char in text:
            more = {v.replace(char, alt) for v in variants for alt in alternatives}
            variants |= set(sorted(more)[: max(0, MAX_SKELETON_VARIANTS - len(variants))])
    return frozenset(spoof.getSkeleton(0, v) for v in variants)


def _match_skeleton(text: str, own_ascii: str, trusted: _Trusted) -> str | None:
    """The trusted or well-known domain (display form) whose skeleton `text` shares, if any."""
    engine = _engine()
    for skeleton in _skeletons(text):
        for table in (trusted.skeletons, engine.known):
            match = table.get(skeleton)
            if match is not None and match[0] != own_ascii:
                return match[1]
    return None


def _embeds_known_domain(sub_labels: list[str], trusted: _Trusted) -> bool:
    """Does a run of subdomain labels spell a well-known or trusted domain (paypal.com.evil.net)?"""
    engine = _engine()
    n = len(sub_labels)
    for start in range(n - 1):
        for end in range(start + 2, min(n, start + MAX_EMBEDDED_WINDOW) + 1):
            candidate = ".".join(sub_labels[start:end])
            if candidate in _KNOWN_SET or candidate in trusted.domains:
                return True
            for skeleton in _skeletons(candidate):
                if skeleton in engine.known or skeleton in trusted.skeletons:
                    return True
    return False


class _Trusted(NamedTuple):
    domains: frozenset[str]  # registrable ASCII domains
    skeletons: dict[str, tuple[str, str]]  # skeleton -> (registrable ASCII, display form)


def _trusted_key(trusted_domains: Iterable[str]) -> tuple[str, ...]:
    if isinstance(trusted_domains, str):
        return (trusted_domains,)
    entries = tuple(trusted_domains)
    for entry in entries:
        if not isinstance(entry, str):
            raise InvalidArgument("trusted_domains", f"entries must be str, got {type(entry).__name__}")
    return entries


@lru_cache(maxsize=MAX_TRUSTED_CACHE)
def _trusted_entry(entry: str) -> tuple[str, str] | None:
    """(registrable ASCII, registrable Unicode) of one trusted entry; None if it is no host."""
    text = entry.strip().lower()
    if "://" not in text:
        text = "https://" + text.removeprefix("*.")
    try:
        url = ada_url.URL(text)
    except (ValueError, UnicodeError):
        return None
    if url.host_type != ada_url.HostType.DEFAULT or not url.hostname:
        return None
    ascii_host = url.hostname.rstrip(".")
    labels = ascii_host.split(".")
    unicode_host = ".".join(_decode_label(label)[0] for label in labels)
    registrable = _engine().psl.privatesuffix(unicode_host) or unicode_host
    count = registrable.count(".") + 1
    return ".".join(labels[-count:]), registrable


@lru_cache(maxsize=MAX_TRUSTED_CACHE)
def _trusted_table(entries: tuple[str, ...]) -> _Trusted:
    domains: set[str] = set()
    skeletons: dict[str, tuple[str, str]] = {}
    for entry in entries:
        normalised = _trusted_entry(entry)
        if normalised is None:
            continue
        ascii_domain, unicode_domain = normalised
        domains.add(ascii_domain)
        for skeleton in _skeletons(unicode_domain):
            skeletons.setdefault(skeleton, (ascii_domain, unicode_domain))
    return _Trusted(frozenset(domains), skeletons)

"""Is this URL safe to show and to open? Canonical form, verdict, and the parts to highlight.

Rules enforced (spec ids from the requirements digest):

- U1: the `url` of a URL-mode request MUST be a valid URL: parsed with the WHATWG URL parser
  browsers use (`ada_url`); anything it rejects is blocked as `unparseable`.
- U3: show the full URL and clearly display the target domain; warn on Punycode and look-alikes.
  Every UI shows `parts` (scheme, subdomain, registrable domain, rest) and emphasises
  `parts.registrable_domain`; internationalized hosts are decoded for display only when the
  browser IDN display policy (ICU's spoof checker at HIGHLY_RESTRICTIVE plus Chromium's extra
  layers) finds them safe, otherwise they stay in Punycode.
- U4: `https` only, `http` only for loopback hosts (localhost, 127.0.0.0/8, [::1]); every other
  scheme is blocked (an allowlist, so `javascript:`, `data:`, `file:`, `vbscript:` and custom
  schemes are refused without naming them).
- U5: user:password in the URL is blocked (a pre-authenticated URL).

Nothing here touches the network: no DNS, no fetching, no reputation lists (U3 forbids
pre-fetching). The check is pure and never raises on any string.

Reason codes (stable strings; `REASONS` maps each to its severity, `verdict` is the worst):

=========================  ========  ====================================================
code                       severity  meaning
=========================  ========  ====================================================
unparseable                block     the WHATWG parser rejects the string (or it cannot be
                                     encoded as UTF-8, e.g. a lone surrogate)
input_too_long             block     longer than MAX_URL_INPUT_LENGTH; not parsed at all
scheme_not_allowed         block     scheme other than https (and http, see below)
http_not_loopback          block     http to a host that is not loopback
credentials                block     user or password in the URL (`user:pass@host`, `@host`)
empty_host                 block     a host made only of dots (`https://./`, `https://%2e/`);
                                     WHATWG itself refuses special URLs with no host at all
host_too_long              block     host over 253 characters or a label over 63 (RFC 1035)
control_chars              block     C0/C1 control characters, or tab/CR/LF inside the URL
                                     (the parser drops them silently)
bidi_chars                 block     bidirectional controls (U+202A-202E, U+2066-2069, ...)
                                     anywhere in the URL
invisible_chars            block     zero-width, filler, variation-selector, tag or non-ASCII
                                     space characters anywhere in the URL; ZWJ/ZWNJ or
                                     repeated combining marks in a host label
ip_obfuscated              block     IPv4 host not written as plain dotted decimal (decimal,
                                     octal, hex, short, full-width forms...) or an IPv4 address
                                     dressed as IPv6 (::ffff:a.b.c.d, ::a.b.c.d)
link_local                 block     169.254.0.0/16, fe80::/10 (RFC 3927, RFC 4291)
reserved_address           block     unspecified, broadcast, multicast, documentation,
                                     benchmarking and other special-purpose addresses
mixed_script               block     a label mixes scripts beyond ICU HIGHLY_RESTRICTIVE, mixes
                                     digit systems, or mixes accented Latin with another script
digit_lookalike            block     a label made only of digits and digit look-alikes
disallowed_chars           block     a label holds characters outside the browser IDN allowed
                                     set (symbols, emoji, rare scripts) or is not valid IDNA2008
dangerous_pattern          block     a browser "dangerous pattern" (ー・ next to non-Japanese,
                                     slash-like kana, combining marks after non-LGC letters,
                                     i/j/l + U+0307, ...), an unsafe middle dot, or a letter
                                     tied to one ccTLD (þ ð outside .is/.fo, ə outside .az)
lookalike                  block     the registrable domain's confusable skeleton matches a
                                     well-known or trusted domain it is not (`lookalike_of`)
check_failed               block     an internal error while checking (never expected; the
                                     check refuses rather than raise)
too_long                   warn      longer than MAX_URL_LENGTH (raw or canonical)
ip_literal                 warn      the host is an IP address (no name to recognise)
private_address            warn      RFC 1918, RFC 6598 shared, RFC 4193 unique-local and
                                     deprecated site-local addresses
no_registrable_domain      warn      the host is a public suffix or a single label, so no
                                     site can be named (e.g. `https://github.io/`, intranet)
punycode                   warn      the host has internationalized (xn--) labels
whole_script_confusable    warn      a label is entirely in a non-Latin script using only
                                     letters that look Latin, outside that script's ccTLDs
embedded_domain            warn      a well-known or trusted domain appears among the
                                     subdomain labels of another site (paypal.com.evil.example)
loopback                   ok        the host is loopback (informational)
=========================  ========  ====================================================

Limits (named constants below): MAX_URL_LENGTH, MAX_URL_INPUT_LENGTH, MAX_HOST_LENGTH,
MAX_LABEL_LENGTH, MIN_ASCII_LOOKALIKE_LABEL, MAX_SKELETON_VARIANTS, MAX_EMBEDDED_WINDOW,
MAX_TRUSTED_CACHE, MAX_LABEL_CACHE.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

import ada_url

from mcp_elicit.core._url_hosts import (
    _AUTHORITY_RE,
    _BIDI_RE,
    _CONTROL_RE,
    _EDGE,
    _ESCAPE_RE,
    _INVISIBLE_RE,
    _PRIVATE_V4,
    _PRIVATE_V6,
    _SPECIAL,
    _SUSPICIOUS_RE,
    MAX_EMBEDDED_WINDOW,
    MAX_HOST_LENGTH,
    MAX_LABEL_CACHE,
    MAX_LABEL_LENGTH,
    MAX_SKELETON_VARIANTS,
    MAX_TRUSTED_CACHE,
    MIN_ASCII_LOOKALIKE_LABEL,
    _check_domain,
    _check_host,
    _HostInfo,
    _trusted_key,
    _trusted_table,
)
from mcp_elicit.core._url_parse import parse as parse_url
from mcp_elicit.core.verdicts import Verdict, worst
from mcp_elicit.errors import InvalidArgument

__all__ = [
    "MAX_EMBEDDED_WINDOW",
    "MAX_HOST_LENGTH",
    "MAX_LABEL_CACHE",
    "MAX_LABEL_LENGTH",
    "MAX_SKELETON_VARIANTS",
    "MAX_TRUSTED_CACHE",
    "MAX_URL_INPUT_LENGTH",
    "MAX_URL_LENGTH",
    "MIN_ASCII_LOOKALIKE_LABEL",
    "REASONS",
    "DisplayParts",
    "UrlVerdict",
    "Verdict",
    "check_url",
    "escape_for_display",
    "verdict_as_json",
]

# Longest URL shown without a warning. 2,048 characters is the long-standing interoperable
# ceiling (the sitemaps protocol, and IE's 2,083); a consent URL longer than that hides its end
# and probably carries data that U5 says must not be in a URL.
MAX_URL_LENGTH: Final = 2_048
# Longest string parsed at all. Far above any real URL (RFC 9110 §4.1 asks for 8,000 octets),
# low enough that a hostile server cannot make every check cost megabytes.
MAX_URL_INPUT_LENGTH: Final = 65_536
_BLOCK: Final = "block"
_WARN: Final = "warn"
_OK: Final = "ok"

# Reason code -> severity, in the order reasons are reported (the docstring table's order).
REASONS: Final[Mapping[str, Verdict]] = MappingProxyType(
    {
        "unparseable": "block",
        "input_too_long": "block",
        "scheme_not_allowed": "block",
        "http_not_loopback": "block",
        "credentials": "block",
        "empty_host": "block",
        "host_too_long": "block",
        "control_chars": "block",
        "bidi_chars": "block",
        "invisible_chars": "block",
        "ip_obfuscated": "block",
        "link_local": "block",
        "reserved_address": "block",
        "mixed_script": "block",
        "digit_lookalike": "block",
        "disallowed_chars": "block",
        "dangerous_pattern": "block",
        "lookalike": "block",
        "check_failed": "block",
        "too_long": "warn",
        "ip_literal": "warn",
        "private_address": "warn",
        "no_registrable_domain": "warn",
        "punycode": "warn",
        "whole_script_confusable": "warn",
        "embedded_domain": "warn",
        "loopback": "ok",
    }
)
_ORDER: Final = {code: i for i, code in enumerate(REASONS)}


@dataclass(frozen=True, slots=True)
class DisplayParts:
    """The URL cut into the spans every UI shows; concatenated they give the display URL.

    `scheme` includes its separator (`https://`, or `javascript:`) and any userinfo, so the full
    URL is always shown (U3). `subdomain` ends with its dot. `registrable_domain` is the span to
    emphasise: the registrable domain, or the whole host when there is none (an IP address,
    localhost, a public suffix); it keeps the host's trailing dot if it has one. `rest` is the
    port, path, query and fragment.
    """

    scheme: str
    subdomain: str
    registrable_domain: str
    rest: str

    def __str__(self) -> str:
        return self.scheme + self.subdomain + self.registrable_domain + self.rest


@dataclass(frozen=True, slots=True)
class UrlVerdict:
    """What `check_url` decided about one URL.

    `raw` is the string as received (quote it in warnings); `canonical` is the WHATWG
    serialisation (None if unparseable) and is what a client opens. `host` is the canonical ASCII
    host; `host_display` and `registrable_domain` are display forms, Unicode only for labels the
    IDN policy finds safe. `lookalike_of` names the well-known or trusted domain a `lookalike`
    imitates.
    """

    raw: str
    verdict: Verdict
    reasons: tuple[str, ...]
    canonical: str | None
    host: str | None
    host_display: str | None
    registrable_domain: str | None
    lookalike_of: str | None
    parts: DisplayParts

    @property
    def display_url(self) -> str:
        """The URL as it should be shown: canonical, with the host in its display form."""
        return str(self.parts)


def verdict_as_json(v: UrlVerdict) -> dict[str, Any]:
    """A JSON-ready dict of a verdict (the shape `mcp-elicit check-url --json` prints)."""
    return {
        "url": v.raw,
        "verdict": v.verdict,
        "reasons": list(v.reasons),
        "canonical": v.canonical,
        "host": v.host,
        "host_display": v.host_display,
        "registrable_domain": v.registrable_domain,
        "lookalike_of": v.lookalike_of,
        "parts": {
            "scheme": v.parts.scheme,
            "subdomain": v.parts.subdomain,
            "registrable_domain": v.parts.registrable_domain,
            "rest": v.parts.rest,
        },
    }


def escape_for_display(text: str) -> str:
    """`text` with control, bidi and invisible characters written as \\uXXXX escapes.

    Show raw URLs (and anything else a server sent) through this: a terminal or page that renders
    them as-is can be reordered by bidi controls or driven by control sequences.
    """
    return _ESCAPE_RE.sub(_escape_char, text)


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


# --- entry point --------------------------------------------------------------------------------


def check_url(
    raw: str, *, trusted_domains: Iterable[str] = (), allow_http_loopback: bool = True
) -> UrlVerdict:
    """Check one URL the way a browser-grade consent screen must (U1, U3, U4, U5).

    `trusted_domains` are sites the user already trusts (hosts, registrable domains or URLs;
    a single string counts as one domain; entries that are not hosts are ignored): look-alikes
    of them are blocked like look-alikes of the built-in well-known list. With
    `allow_http_loopback=False` plain http is refused even for loopback hosts.

    Never raises for any string; raises InvalidArgument (a TypeError) if `raw` is not a string.
    """
    if not isinstance(raw, str):
        raise InvalidArgument("raw", f"check_url expects a str, got {type(raw).__name__}")
    key = _trusted_key(trusted_domains)
    try:
        return _check(raw, key, allow_http_loopback)
    except Exception:  # a bug must become a refusal, never a crash in the consent path
        return _verdict(raw, {"check_failed"}, None, None, None, None, None, DisplayParts("", "", "", raw))


def _verdict(
    raw: str,
    found: set[str],
    canonical: str | None,
    host: str | None,
    host_display: str | None,
    registrable: str | None,
    lookalike_of: str | None,
    parts: DisplayParts,
) -> UrlVerdict:
    if not found:
        return UrlVerdict(raw, "ok", (), canonical, host, host_display, registrable, lookalike_of, parts)
    reasons = tuple(sorted(found, key=_ORDER.__getitem__))
    verdict = worst(*(REASONS[code] for code in reasons))
    return UrlVerdict(raw, verdict, reasons, canonical, host, host_display, registrable, lookalike_of, parts)


def _check(raw: str, trusted: tuple[str, ...], allow_http_loopback: bool) -> UrlVerdict:
    found: set[str] = set()
    if len(raw) > MAX_URL_INPUT_LENGTH:
        return _verdict(raw, {"input_too_long"}, None, None, None, None, None, DisplayParts("", "", "", raw))
    # ASCII holds no bidi or invisible characters; isprintable() is False exactly on C0 and DEL.
    if not (raw.isascii() and raw.isprintable()) and _SUSPICIOUS_RE.search(raw):
        _scan_characters(raw, found)
    if len(raw) > MAX_URL_LENGTH:
        found.add("too_long")
    try:
        url = parse_url(raw)
    except UnicodeError:
        url = None
    if url is None:
        found.add("unparseable")
        return _verdict(raw, found, None, None, None, None, None, DisplayParts("", "", "", raw))

    href = url.href
    if len(href) > MAX_URL_LENGTH:
        found.add("too_long")
    protocol = url.protocol
    scheme = protocol[:-1]
    if scheme != "https" and not (scheme == "http" and allow_http_loopback):
        found.add("scheme_not_allowed")
    if scheme not in _SPECIAL:
        # Opaque URLs (javascript:, data:, mailto:, custom schemes) have nothing to highlight.
        parts = DisplayParts(protocol, "", "", href[len(protocol) :])
        return _verdict(raw, found, href, None, None, None, None, parts)

    hostname = url.hostname
    authority_start = len(protocol) + 2
    path_start = href.find("/", authority_start)  # special URLs always have a path
    authority = href[authority_start:path_start]
    userinfo = authority[: authority.rfind("@") + 1]
    rest = authority[len(userinfo) + len(hostname) :] + href[path_start:]
    raw_authority = _raw_authority(raw)
    if userinfo or "@" in raw_authority:
        found.add("credentials")
    if scheme == "file" or not hostname:
        if scheme != "file":
            found.add("empty_host")
        parts = DisplayParts(protocol + "//" + userinfo, "", hostname, rest)
        return _verdict(raw, found, href, hostname or None, hostname or None, None, None, parts)

    host_type = url.host_type
    if host_type == ada_url.HostType.IPV4:
        loopback = _check_ipv4(hostname, _raw_host(raw_authority), found)
        info = _HostInfo(hostname, "", hostname, None, None)
    elif host_type == ada_url.HostType.IPV6:
        loopback = _check_ipv6(hostname, found)
        info = _HostInfo(hostname, "", hostname, None, None)
    else:
        if len(hostname) <= MAX_HOST_LENGTH + 1:  # +1: a trailing dot
            info, host_reasons = _check_host(hostname, trusted)
            found |= host_reasons
        else:  # blocked as host_too_long; never cached, so a hostile stream cannot fill memory
            info = _check_domain(hostname, _trusted_table(trusted), found)
        loopback = "loopback" in found
    if scheme == "http" and allow_http_loopback and not loopback:
        found.add("http_not_loopback")
    parts = DisplayParts(protocol + "//" + userinfo, info.subdomain, info.highlight, rest)
    return _verdict(raw, found, href, hostname, info.display, info.registrable, info.lookalike_of, parts)


def _scan_characters(raw: str, found: set[str]) -> None:
    if _BIDI_RE.search(raw):
        found.add("bidi_chars")
    if _INVISIBLE_RE.search(raw):
        found.add("invisible_chars")
    inner = raw.strip(_EDGE)
    if _CONTROL_RE.search(raw) or "\t" in inner or "\n" in inner or "\r" in inner:
        found.add("control_chars")


def _raw_authority(raw: str) -> str:
    """The authority as written, after the cleaning WHATWG applies first ("" if none)."""
    cleaned = raw.strip(_EDGE)
    if "\t" in cleaned or "\n" in cleaned or "\r" in cleaned:
        cleaned = cleaned.replace("\t", "").replace("\n", "").replace("\r", "")
    match = _AUTHORITY_RE.match(cleaned)
    return match.group(1) if match else ""


def _raw_host(authority: str) -> str:
    hostport = authority[authority.rfind("@") + 1 :]
    if hostport.startswith("["):
        return hostport[: hostport.find("]") + 1]
    return hostport.split(":", 1)[0]


# --- IP hosts -------------------------------------------------------------------------------------


def _check_ipv4(hostname: str, raw_host: str, found: set[str]) -> bool:
    address = ipaddress.IPv4Address(hostname)
    if raw_host.lower() != hostname:
        # WHATWG accepts 2130706433, 0x7f.1, 0177.0.0.1, 127.1, full-width digits, a trailing
        # dot, percent-escapes: all reach 127.0.0.1, none is how an honest server writes it.
        found.add("ip_obfuscated")
    return _classify_address(address, found)


def _check_ipv6(hostname: str, found: set[str]) -> bool:
    address = ipaddress.IPv6Address(hostname[1:-1])
    embedded = address.ipv4_mapped
    if embedded is None and address.packed[:12] == bytes(12) and int(address) > 1:
        embedded = ipaddress.IPv4Address(address.packed[12:])  # deprecated ::a.b.c.d
    if embedded is not None:
        # An IPv4 address dressed as IPv6: judge the address it reaches, never as loopback.
        found.add("ip_obfuscated")
        _classify_address(embedded, found)
        found.discard("loopback")
        found.add("ip_literal")
        return False
    return _classify_address(address, found)


def _classify_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address, found: set[str]) -> bool:
    """Add the range reasons of an IP host; True if it is loopback."""
    if address.is_loopback:
        found.add("loopback")
        return True
    found.add("ip_literal")
    private = _PRIVATE_V4 if address.version == 4 else _PRIVATE_V6
    if address.is_link_local:
        found.add("link_local")
    elif any(address in net for net in private):
        found.add("private_address")
    elif not address.is_global or address.is_multicast:
        found.add("reserved_address")
    return False

"""Secrets out of what is recorded about where a server runs (a command line or a URL).

`redact_where` keeps the shape of the text and replaces the values a person would not want in an
audit trail: URL userinfo (``https://user:pass@host``), query and fragment parameters, command
options (``--api-key=sk-...``, ``--token sk-...``) and environment assignments
(``OPENAI_API_KEY=sk-...``) whose *name* the secret guard (core/sensitive.py) judges ``block`` or
``warn``, the same rules that keep secrets out of forms. Values are replaced by `REDACTED`.

What it does not do: guess secrets from their value alone (a bare ``sk-...`` argument with no
name) or look inside files the command names. Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
import shlex
from typing import Final
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from mcp_elicit.core.sensitive import classify_field

__all__ = ["REDACTED", "WHERE_CACHE_SIZE", "redact_where"]

REDACTED: Final = "REDACTED"  # shell-safe, so a redacted command line stays readable

# Distinct server locations remembered; a client or server talks to few, so this never churns.
WHERE_CACHE_SIZE: Final = 256

_STRING: Final = {"type": "string"}
_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_ASSIGN: Final = re.compile(r"(-{0,2})([A-Za-z_][A-Za-z0-9_.-]*)=(.*)", re.DOTALL)
_OPTION: Final = re.compile(r"-{1,2}([A-Za-z][A-Za-z0-9_.-]*)")


@functools.lru_cache(maxsize=1024)
def _secret_name(name: str) -> bool:
    return classify_field(name, _STRING).verdict != "ok"


def _redact_params(text: str) -> str:
    if not text:
        return text
    pairs = parse_qsl(text, keep_blank_values=True)
    if not any(_secret_name(k) for k, _ in pairs):
        return text
    return "&".join(
        f"{quote(k, safe='')}={REDACTED if _secret_name(k) else quote(v, safe='')}" for k, v in pairs
    )


def _redact_url(text: str) -> str:
    try:
        parts = urlsplit(text)
        netloc = parts.netloc
    except ValueError:
        return REDACTED
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    return urlunsplit(
        (parts.scheme, netloc, parts.path, _redact_params(parts.query), _redact_params(parts.fragment))
    )


def _redact_token(token: str) -> str:
    if _URL.match(token):
        return _redact_url(token)
    assign = _ASSIGN.fullmatch(token)
    if assign:
        dashes, name, value = assign.groups()
        if _secret_name(name):
            return f"{dashes}{name}={REDACTED}"
        return f"{dashes}{name}={_redact_url(value)}" if _URL.match(value) else token
    return token


@functools.lru_cache(maxsize=WHERE_CACHE_SIZE)
def redact_where(where: str) -> str:
    """`where` (a command line or a URL) with credentials replaced by `REDACTED`."""
    if not where:
        return where
    if _URL.match(where) and not any(c.isspace() for c in where):
        return _redact_url(where)
    try:
        tokens = shlex.split(where)
    except ValueError:
        tokens = where.split()
    out: list[str] = []
    hide_next = False
    for token in tokens:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        option = _OPTION.fullmatch(token)
        if option and _secret_name(option.group(1)):
            out.append(token)
            hide_next = True
            continue
        out.append(_redact_token(token))
    changed = out != tokens
    return shlex.join(out) if changed else where

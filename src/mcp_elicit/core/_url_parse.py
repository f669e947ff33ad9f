"""One WHATWG parse with the four fields `urls.check_url` reads, at the cost of the parse itself.

`ada_url.URL` answers every attribute through `__getattr__`, a `getattr(lib, ...)` lookup and an
enum construction: reading href, protocol, hostname and host_type costs three times the parse.
Here the same C functions are called directly, once each. If the binding's layout ever changes,
`parse` falls back to the public class; `tests/core/test_url_parse.py` checks both agree.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import ada_url

__all__ = ["Parsed", "parse", "parse_public"]


class Parsed(NamedTuple):
    href: str
    protocol: str  # scheme with its ":"
    hostname: str  # "" for opaque URLs
    host_type: int  # ada_url.HostType value


def parse_public(raw: str) -> Parsed | None:
    """The reference: the same fields through ada_url's public class (None if unparseable).

    Raises UnicodeError for strings that cannot be encoded as UTF-8 (lone surrogates).
    """
    raw.encode()
    try:
        url = ada_url.URL(raw)
    except ValueError:
        return None
    return Parsed(url.href, url.protocol, url.hostname, int(url.host_type))


def _load() -> tuple[Any, Any] | None:
    try:
        from ada_url._ada_wrapper import ffi, lib  # private, so optional

        needed = ("ada_parse", "ada_free", "ada_is_valid", "ada_get_href", "ada_get_hostname")
        if all(hasattr(lib, name) for name in (*needed, "ada_get_host_type")):
            return ffi, lib
    except ImportError:  # pragma: no cover - depends on the installed binding
        pass
    return None  # pragma: no cover


_BINDING = _load()


def _parse_direct(raw: str) -> Parsed | None:
    ffi, lib = _BINDING  # type: ignore[misc]
    data = raw.encode()
    obj = lib.ada_parse(data, len(data))
    try:
        if not lib.ada_is_valid(obj):
            return None
        s = lib.ada_get_href(obj)
        href = ffi.unpack(s.data, s.length).decode() if s.length else ""
        s = lib.ada_get_hostname(obj)
        hostname = ffi.unpack(s.data, s.length).decode() if s.length else ""
        host_type = lib.ada_get_host_type(obj)
    finally:
        lib.ada_free(obj)
    # The serialisation always starts with the scheme and its ":" (a scheme holds no ":").
    return Parsed(href, href[: href.index(":") + 1], hostname, host_type)


parse = _parse_direct if _BINDING is not None else parse_public

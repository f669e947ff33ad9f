"""Binding a command's listening socket before anything starts, and saying why when it cannot."""

from __future__ import annotations

import errno
import socket

import click


def listen_failure(host: str, port: int, exc: BaseException) -> click.ClickException:
    """`Error: cannot listen on HOST:PORT: address already in use` (exit 1), for any bind error."""
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        why = "address already in use"
    elif isinstance(exc, OSError) and exc.strerror:
        why = exc.strerror.lower()
    else:
        why = str(exc) or type(exc).__name__
    shown = f"[{host}]" if ":" in host else host
    return click.ClickException(f"cannot listen on {shown}:{port}: {why}")


def bind_listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `host`:`port` and listening; a port in use (or any bind error) is a
    one-line error and exit status 1, before the command starts anything."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except (OSError, OverflowError) as exc:  # OverflowError: a port beyond 65535
        raise listen_failure(host, port, exc) from None

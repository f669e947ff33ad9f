"""A deadline for blocking socket operations, kept by one thread per sink.

The PostgreSQL sink shuts the socket of an operation that runs past its deadline, so that a
blocked read fails at once however the peer went silent. A timer thread per operation did that
at about 60 µs of CPU and 200 µs of wall time per append, more than the append's own statements
on a local server. One thread per watchdog waits instead; arming and disarming only take a
lock, and the thread is woken only when an operation starts while it sleeps with nothing armed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["Watchdog", "shut_socket"]


def shut_socket(fd: int) -> None:
    """Shut down both directions of the socket at `fd` (its owner's blocked read then fails)."""
    with contextlib.suppress(OSError), socket.socket(fileno=os.dup(fd)) as sock:
        sock.shutdown(socket.SHUT_RDWR)


class Watchdog:
    """Calls `expire(fd)` for an operation still armed `seconds` after it was armed (one
    operation at a time, as a sink runs them; `seconds` is fixed, so deadlines only grow)."""

    def __init__(self, seconds: float, expire: Callable[[int], None] = shut_socket) -> None:
        self.seconds = seconds
        self._expire = expire
        self._cond = threading.Condition()
        self._armed: tuple[int, float, int] | None = None  # (fd, deadline, token)
        self._token = 0
        self._idle = True  # the thread waits with nothing armed: an arm must wake it
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._closed = False

    @contextlib.contextmanager
    def guard(self, fd: int) -> Iterator[None]:
        """Arm for the block: past the deadline `expire(fd)` runs while the block is still in it."""
        token = self._arm(fd)
        try:
            yield
        finally:
            self._disarm(token)

    def _arm(self, fd: int) -> int:
        with self._cond:
            self._token += 1
            self._armed = (fd, time.monotonic() + self.seconds, self._token)
            if self._thread is None or self._pid != os.getpid():  # none yet, or a forked child
                self._pid, self._idle = os.getpid(), False
                self._thread = threading.Thread(target=self._run, name="mcp-elicit-watchdog", daemon=True)
                self._thread.start()
            elif self._idle:
                self._cond.notify()
            return self._token

    def _disarm(self, token: int) -> None:
        # Under the lock: an expiry in progress finishes before the operation lets its socket go,
        # so the fd it shuts is never one reused by something else meanwhile.
        with self._cond:
            if self._armed is not None and self._armed[2] == token:
                self._armed = None

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                if self._armed is None:
                    self._idle = True
                    self._cond.wait()
                    self._idle = False
                    continue
                fd, deadline, _ = self._armed
                left = deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)  # a later operation's deadline is looked at on waking
                    continue
                self._armed = None
                self._expire(fd)

    def close(self) -> None:
        """End the thread (an operation still armed is no longer watched)."""
        with self._cond:
            self._closed = True
            self._cond.notify()

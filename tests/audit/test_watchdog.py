"""The watchdog that bounds the PostgreSQL sink's blocking operations, without a thread each."""

from __future__ import annotations

import socket
import threading

from mcp_elicit.audit.watchdog import Watchdog

BOUND_S = 10.0  # how long a test waits for an event before it fails


class Expiries:
    """An `expire` callback: the fds it was called with, and an event set at the first."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self.event = threading.Event()

    def __call__(self, fd: int) -> None:
        self.seen.append(fd)
        self.event.set()


def test_an_operation_past_its_deadline_is_expired_while_it_is_still_running() -> None:
    expired = Expiries()
    dog = Watchdog(0.01, expired)
    with dog.guard(7):
        assert expired.event.wait(BOUND_S)
    assert expired.seen == [7]
    dog.close()


def test_an_operation_that_ends_in_time_is_never_expired() -> None:
    seen: list[int] = []
    dog = Watchdog(60.0, seen.append)
    for fd in range(100):
        with dog.guard(fd):
            pass
    dog.close()
    assert seen == []


def test_one_thread_watches_every_operation_of_a_sink() -> None:
    dog = Watchdog(60.0, lambda fd: None)
    before = threading.active_count()
    for fd in range(50):
        with dog.guard(fd):
            pass
    assert threading.active_count() <= before + 1
    dog.close()


def test_a_later_operation_is_watched_after_an_earlier_one_ended_in_time() -> None:
    expired = Expiries()
    dog = Watchdog(0.05, expired)
    with dog.guard(1):
        pass
    with dog.guard(2):
        assert expired.event.wait(BOUND_S)
    assert expired.seen == [2]
    dog.close()


def test_shutting_a_socket_makes_a_blocked_read_on_it_return() -> None:
    left, right = socket.socketpair()
    got: list[bytes] = []
    done = threading.Event()

    def read() -> None:
        got.append(left.recv(10))
        done.set()

    threading.Thread(target=read, daemon=True).start()
    dog = Watchdog(0.01)
    with dog.guard(left.fileno()):
        assert done.wait(BOUND_S)
    assert got == [b""]
    dog.close()
    left.close()
    right.close()

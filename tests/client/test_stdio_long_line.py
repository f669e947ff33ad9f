"""A stdio server writing a line longer than the bound ends the call at once with
`ServerOutputError`, one warning and no traceback, and the client stops reading at the bound.

Real parts: the server is a subprocess (`endless_line_server.py`) writing an unfinished line in
64 KiB chunks and saying on stderr how much it got written. A client that stops reading blocks
the server's next write once the pipe and the read buffer are full, so the server's count proves
how much the client took in: never much more than the bound, however much the server meant to
write. Without the bound the client keeps reading and the call never ends (the time bound fails).
"""

from __future__ import annotations

import logging
import re
import sys
import time
from pathlib import Path

import anyio
import mcp.client.stdio as sdk_stdio
import pytest
from anyio.abc import ByteReceiveStream
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_elicit.client import stdio_guard
from mcp_elicit.client.connection import ElicitClient, ServerSpec
from mcp_elicit.client.stdio_guard import MAX_STDOUT_LINE_BYTES, BadBytes
from mcp_elicit.errors import ServerOutputError
from mcp_elicit.testing import ScriptedUI

SERVER = Path(__file__).with_name("endless_line_server.py")
# Far above the time the error takes (milliseconds; the default bound: the SDK's reader takes
# about a second over 16 MiB), far below "forever" (without the bound: no end at all).
BOUND_SECONDS = 30.0
SMALL = 1_048_576  # the bound most tests set, so they stay fast
# Besides the bound, what the server can get written while nobody reads: the pipe (64 KiB on
# Linux), the event loop's read buffer (128 KiB), the chunk that crossed the bound; rounded up.
SLACK = 1_048_576


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(stdio_guard, "MAX_STDOUT_LINE_BYTES", SMALL)
    return SMALL


def written(errlog: Path) -> int:
    """What the server said it got written (its last `wrote N` on stderr)."""
    counts = [int(n) for n in re.findall(r"wrote (\d+)", errlog.read_text())]
    return max(counts, default=0)


async def call(tmp_path: Path, when: str, total: int) -> tuple[ServerOutputError, int]:
    """Call a tool of the endless-line server; the error and how much the server got written."""
    errlog = tmp_path / "server-stderr.txt"
    spec = ServerSpec(argv=(sys.executable, str(SERVER), when, str(total)))
    with errlog.open("w") as log, anyio.fail_after(BOUND_SECONDS):
        if when == "initialize":
            with pytest.raises(ServerOutputError) as info:
                async with ElicitClient(spec, ui=ScriptedUI([]), errlog=log):
                    pass
        else:
            async with ElicitClient(spec, ui=ScriptedUI([]), errlog=log) as client:
                with pytest.raises(ServerOutputError) as info:
                    await client.call_tool("anything", {})
    return info.value, written(errlog)


def one_warning(caplog: pytest.LogCaptureFixture, limit: int) -> None:
    assert all(r.exc_info is None for r in caplog.records)  # no traceback from anyone
    [record] = [r for r in caplog.records if r.name == stdio_guard.__name__]
    assert record.levelno == logging.WARNING
    assert limit in record.args  # type: ignore[operator]
    assert "\n" not in record.getMessage()


@pytest.mark.anyio
@pytest.mark.parametrize("when", ["initialize", "call"])
async def test_an_endless_line_ends_the_connection_with_server_output_error_at_the_bound(
    tmp_path: Path, small_bound: int, caplog: pytest.LogCaptureFixture, when: str
) -> None:
    """During the handshake or as a tool's result: the call fails, the client stops reading."""
    caplog.set_level(logging.INFO)
    error, got_written = await call(tmp_path, when, 32 * small_bound)
    assert error.limit == small_bound
    assert isinstance(error, ConnectionError)
    assert got_written <= small_bound + SLACK  # the client stopped reading: memory stays bounded
    one_warning(caplog, small_bound)


@pytest.mark.anyio
async def test_the_default_bound_is_16_mib_and_ends_a_longer_line(tmp_path: Path) -> None:
    assert MAX_STDOUT_LINE_BYTES == 16_777_216
    error, got_written = await call(tmp_path, "call", MAX_STDOUT_LINE_BYTES + 4 * SLACK)
    assert error.limit == MAX_STDOUT_LINE_BYTES
    assert got_written <= MAX_STDOUT_LINE_BYTES + SLACK


@pytest.mark.anyio
async def test_a_line_of_exactly_the_bound_is_a_message_like_any_other(small_bound: int) -> None:
    spec = ServerSpec(argv=(sys.executable, str(SERVER), "exact", str(small_bound)))
    with anyio.fail_after(BOUND_SECONDS):
        async with ElicitClient(spec, ui=ScriptedUI([])) as client:
            result = await client.call_tool("anything", {})
    text = result.content[0].text  # type: ignore[union-attr]
    assert set(text) == {"A"}
    assert len(text) > small_bound - 100  # all of it but the JSON-RPC around it


@pytest.mark.anyio
async def test_a_complete_line_one_byte_over_the_bound_ends_it(tmp_path: Path, small_bound: int) -> None:
    error, _ = await call(tmp_path, "exact", small_bound + 1)
    assert error.limit == small_bound


@pytest.mark.anyio
async def test_a_server_that_broke_the_protocol_and_ignores_its_closed_stdin_is_stopped_at_once(
    tmp_path: Path, small_bound: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the stop, the client's close waits out the SDK's grace for the server to end on
    its own, made twice the test's bound here. The SDK shields that wait from cancellation, so
    the bound is checked on the clock after the close: a hang bound, not a speed claim."""
    monkeypatch.setattr(sdk_stdio, "PROCESS_TERMINATION_TIMEOUT", 2 * BOUND_SECONDS)
    spec = ServerSpec(argv=(sys.executable, str(SERVER), "call", str(4 * small_bound)), env=(("DEAF", "1"),))
    start = time.monotonic()
    async with ElicitClient(spec, ui=ScriptedUI([])) as client:
        with pytest.raises(ServerOutputError):
            await client.call_tool("anything", {})
    assert time.monotonic() - start < BOUND_SECONDS


@pytest.mark.anyio
async def test_invalid_utf8_leaves_the_limit_unset() -> None:
    spec = ServerSpec(argv=(sys.executable, str(SERVER.with_name("misbehaving_server.py")), "call"))
    with anyio.fail_after(BOUND_SECONDS):
        async with ElicitClient(spec, ui=ScriptedUI([])) as client:
            with pytest.raises(ServerOutputError) as info:
                await client.call_tool("anything", {})
    assert info.value.limit is None


# -- the count itself, over any split of the bytes into chunks ---------------------------------------


class _Chunks(ByteReceiveStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks, self.closed = list(chunks), False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self.chunks:
            raise anyio.EndOfStream
        return self.chunks.pop(0)

    async def aclose(self) -> None:
        self.closed = True


def _pieces(chunks: list[bytes], limit: int) -> tuple[list[bytes], BadBytes, bool]:
    """What `bound_lines` passes on from `chunks` under `limit`, piece by piece as its reader gets
    them; its box; whether it closed the pipe."""
    box = BadBytes()
    box.max_line_bytes = limit
    inner = _Chunks(chunks)
    passed: list[bytes] = []

    async def run() -> None:
        token = stdio_guard._box.set(box)
        try:
            stream = stdio_guard.bound_lines(inner)
        finally:
            stdio_guard._box.reset(token)
        while True:
            try:
                passed.append(await stream.receive())
            except anyio.EndOfStream:
                return

    anyio.run(run)
    return passed, box, inner.closed


def _passed_on(chunks: list[bytes], limit: int) -> tuple[bytes, BadBytes, bool]:
    pieces, box, closed = _pieces(chunks, limit)
    return b"".join(pieces), box, closed


lines = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=6)


@settings(max_examples=200, deadline=None)
@given(lines=lines, last=st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), cuts=st.data())
def test_the_stream_ends_exactly_when_a_line_passes_the_bound_however_the_bytes_are_cut(
    lines: list[bytes], last: bytes, cuts: st.DataObject
) -> None:
    limit = 16
    data = b"".join(line + b"\n" for line in lines) + last
    points = sorted(cuts.draw(st.lists(st.integers(0, len(data)), max_size=8)))
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True) if data[a:b]]
    passed, box, closed = _passed_on(chunks, limit)
    too_long = any(len(line) > limit for line in [*lines, last])
    assert box.broken is too_long
    assert closed is too_long
    assert box.limit == (limit if too_long else None)
    if too_long:  # nothing of the line that passed the bound beyond it, and no more after it
        assert all(len(line) <= limit for line in passed.split(b"\n"))
        assert data.startswith(passed)
    else:
        assert passed == data


@settings(max_examples=200, deadline=None)
@given(lines=lines, last=st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), cuts=st.data())
def test_only_whole_lines_are_passed_on_so_the_sdk_reader_never_copies_an_unfinished_one(
    lines: list[bytes], last: bytes, cuts: st.DataObject
) -> None:
    """The SDK's reader joins its buffer of an unfinished line to every chunk it reads (a long
    line then costs quadratic time: 1.35 s of CPU for 16 MB, against 0.08 s with whole lines)."""
    data = b"".join(line + b"\n" for line in lines) + last
    points = sorted(cuts.draw(st.lists(st.integers(0, len(data)), max_size=8)))
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True) if data[a:b]]
    pieces, box, _ = _pieces(chunks, limit=64)
    assert not box.broken
    assert b"".join(pieces) == data
    whole, rest = (pieces[:-1], pieces[-1]) if last else (pieces, b"")
    assert all(piece.endswith(b"\n") for piece in whole)
    assert rest == last  # the unfinished last line comes at the end of the stream, whole

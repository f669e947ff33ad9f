"""`mcp-elicit call --ui browser` (a real process, its server a real stdio process) ended by SIGINT
while a question waits in the page: one line saying so, exit 130, its server gone with it, and the
question on the client's trail as the person's cancel (interrupted), not as a timeout."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.cli import INTERRUPTED_LINE
from mcp_elicit.client.pipeline import INTERRUPTED
from tests.support import lines_of
from tests.ui.browser.test_end_to_end import REFERENCE

BOUND = 30.0  # seconds any one wait may take on a loaded machine


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        with contextlib.suppress(OSError, ValueError):
            found |= {int(child) for child in Path(path).read_text().split()}
    return found


def ends_within(fds: list[int], seconds: float) -> bool:
    """Whether every process whose pidfd is in `fds` ends within `seconds` (a pidfd becomes
    readable when its process has ended)."""
    deadline = time.monotonic() + seconds
    waiting = list(fds)
    while waiting and (left := deadline - time.monotonic()) > 0:
        ended, _, _ = select.select(waiting, [], [], left)
        waiting = [fd for fd in waiting if fd not in ended]
    return not waiting


def test_sigint_ends_a_browser_call_with_one_line_and_status_130(tmp_path: Path) -> None:
    stopped_while_asking(tmp_path)


def test_a_question_open_at_sigint_is_on_the_trail_as_the_persons_cancel_not_a_timeout(
    tmp_path: Path,
) -> None:
    stopped_while_asking(tmp_path)
    with SqliteAuditSink(tmp_path / "mcp-elicit" / "audit.sqlite3", readonly=True) as trail:
        records = trail.newest(10)
    assert [(r["side"], r["action"], r["decided_by"], r["reason"]) for r in records] == [
        ("client", "cancel", "person", INTERRUPTED)
    ]


def stopped_while_asking(tmp_path: Path) -> None:
    """`call --ui browser` stopped by SIGINT while its question waits in the page; its trail (the
    default one, under XDG_DATA_HOME) is `tmp_path`/mcp-elicit/audit.sqlite3."""
    # The `mcp-elicit` script, not `python -m` (see tests/test_cli_stop_http.py: under -m, CPython
    # may turn the exit into a death by SIGINT).
    script = str(Path(sys.executable).with_name("mcp-elicit"))
    args = ["call", "--server", REFERENCE, "--tool", "deploy", "--args", json.dumps({"service": "x"})]
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "NO_COLOR": "1"}
    env.pop("MCP_ELICIT_CONFIG", None)
    env.pop("MCP_ELICIT_AUDIT_DB", None)
    process = subprocess.Popen(
        [sys.executable, script, *args, "--ui", "browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    lines = lines_of(process.stderr)
    try:
        said: list[str] = []
        while not said or "a question is waiting for you at" not in said[-1]:
            line = lines.get(timeout=BOUND)
            assert line is not None, said
            said.append(line)
        servers = [os.pidfd_open(pid) for pid in children(process.pid)]
        assert servers  # the reference server runs
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=BOUND) == 130
        after = []
        while (line := lines.get(timeout=BOUND)) is not None:
            after.append(line)
        assert after == [INTERRUPTED_LINE + "\n"]
        assert ends_within(servers, BOUND)
        for fd in servers:
            os.close(fd)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_a_question_open_when_ctrl_c_abandons_a_connect_call_is_on_the_trail_as_the_persons_cancel(
    tmp_path: Path,
) -> None:
    """`connect --ui browser`: SIGINT abandons the running call (the session goes on); its open
    question is the person's cancel, not one withdrawn by timeout."""
    script = str(Path(sys.executable).with_name("mcp-elicit"))
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "NO_COLOR": "1"}
    env.pop("MCP_ELICIT_CONFIG", None)
    env.pop("MCP_ELICIT_AUDIT_DB", None)
    process = subprocess.Popen(
        [sys.executable, script, "connect", "--server", REFERENCE, "--ui", "browser"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    lines = lines_of(process.stdout)

    def said_until(words: str) -> None:
        said: list[str] = []
        while not said or words not in said[-1]:
            line = lines.get(timeout=BOUND)
            assert line is not None, said
            said.append(line)

    try:
        assert process.stdin is not None
        process.stdin.write('call deploy {"service": "x"}\n')
        process.stdin.flush()
        said_until("a question is waiting for you at")
        process.send_signal(signal.SIGINT)
        said_until("Call abandoned (Ctrl-C).")
        process.stdin.write("quit\n")
        process.stdin.flush()
        assert process.wait(timeout=BOUND) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    with SqliteAuditSink(tmp_path / "mcp-elicit" / "audit.sqlite3", readonly=True) as trail:
        records = trail.newest(10)
    assert [(r["side"], r["action"], r["decided_by"], r["reason"]) for r in records] == [
        ("client", "cancel", "person", INTERRUPTED)
    ]

"""Stopping the stdio servers (`gateway`, `serve-reference`, `serve-data`) run as real processes:
Ctrl-C in a pseudo-terminal as a person types it, SIGINT and SIGTERM with stdin a pipe that stays
open, a client closing stdin; and the one-line errors of a port in use or a bad file."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from click.testing import CliRunner

from mcp_elicit.cli import main
from mcp_elicit.cli.gateway import audit_trail_line, replicas_line
from mcp_elicit.config import AuditConfig, open_audit_sink
from tests.gateway.support import write_config

BOUND = 30.0  # seconds any one wait may take on a loaded machine (not how long a stop should take)
ROOT = Path(__file__).resolve().parents[1]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "stop-test", "version": "1"},
    },
}


def command(name: str, tmp_path: Path) -> list[str]:
    """The command line of one stdio server (`gateway` over the test peers; `serve-data` on the
    sample database, made on first use in the test's own data directory)."""
    if name == "gateway":
        config = write_config(tmp_path / "servers.json", reference=False)
        return [sys.executable, "-m", "mcp_elicit", "gateway", "--config", str(config)]
    return [sys.executable, "-m", "mcp_elicit", name]


class Piped:
    """A server process whose stdin is a pipe the test keeps open; its stdout read as JSON-RPC
    messages and its stderr as lines, each by a thread into a queue (waits are bounded)."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.errors: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        assert self.proc.stdout is not None
        assert self.proc.stderr is not None
        self._pumps = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self._message), daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stderr, self._error), daemon=True),
        ]
        for pump in self._pumps:
            pump.start()

    @staticmethod
    def _pump(stream: Any, put: Callable[[bytes], None]) -> None:
        for line in stream:
            put(line)

    def _message(self, line: bytes) -> None:
        self.messages.put(json.loads(line))

    def _error(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace")
        self.stderr.append(text)
        self.errors.put(text)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            message = self.messages.get(timeout=BOUND)
            if wanted(message):
                return message

    def wait_for_stderr(self, text: str) -> None:
        while text not in self.errors.get(timeout=BOUND):
            pass

    def initialize(self) -> dict[str, Any]:
        self.send(INITIALIZE)
        answer = self.receive(lambda m: m.get("id") == 1)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, request_id: int, tool: str) -> None:
        params = {"name": tool, "arguments": {}}
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})

    def exit_code(self) -> int:
        return self.proc.wait(timeout=BOUND)

    def drain(self) -> None:
        """Wait (bounded) until stdout and stderr are read to their end: every line is in."""
        for pump in self._pumps:
            pump.join(timeout=BOUND)
            assert not pump.is_alive()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=BOUND)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def piped() -> Iterator[Callable[[list[str]], Piped]]:
    started: list[Piped] = []

    def start(args: list[str]) -> Piped:
        started.append(Piped(args))
        return started[-1]

    yield start
    for p in started:
        p.close()


def gone(pid: int) -> bool:
    """The process has ended and was reaped by its parent (no zombie left behind)."""
    return not Path(f"/proc/{pid}").exists()


def upstream_pid(server: Piped) -> int:
    """The test peer's process id, asked through the gateway (the peer's `process_id` tool)."""
    server.call(7, "process_id")
    result = server.receive(lambda m: m.get("id") == 7)["result"]
    return int(result["content"][0]["text"])


@pytest.mark.parametrize("name", ["gateway", "serve-reference", "serve-data"])
def test_ctrl_c_in_a_terminal_stops_a_stdio_server_with_status_130_and_no_traceback(
    tmp_path: Path, name: str
) -> None:
    term = pexpect.spawn(
        command(name, tmp_path)[0],
        command(name, tmp_path)[1:],
        cwd=str(ROOT),
        timeout=BOUND,
        encoding="utf-8",
    )
    try:
        term.sendline(json.dumps(INITIALIZE))
        term.expect("serverInfo")  # serving: the handshake's answer came back
        ctrl_c_stops(term)
    finally:
        term.close(force=True)


def test_sigterm_stops_the_stdio_gateway_with_status_143_and_its_upstreams_are_reaped(
    tmp_path: Path, piped: Callable[[list[str]], Piped]
) -> None:
    gateway = piped(command("gateway", tmp_path))
    gateway.initialize()
    upstream = upstream_pid(gateway)
    gateway.proc.send_signal(signal.SIGTERM)
    assert gateway.exit_code() == 143
    assert gone(upstream)
    assert not any("Traceback" in line for line in gateway.stderr)
    assert sum("stopping on SIGTERM" in line for line in gateway.stderr) == 1


def test_ctrl_c_ends_a_question_the_client_has_not_answered_as_end_of_file_does(
    tmp_path: Path, piped: Callable[[list[str]], Piped]
) -> None:
    outcomes = []
    for stop in ("SIGINT", "EOF"):
        gateway = piped(command("gateway", tmp_path))
        gateway.initialize()
        upstream = upstream_pid(gateway)
        gateway.call(8, "greet")
        asked = gateway.receive(lambda m: m.get("method") == "elicitation/create")
        assert asked["params"]["message"] == "Who are you?"
        if stop == "SIGINT":
            gateway.proc.send_signal(signal.SIGINT)
        else:
            assert gateway.proc.stdin is not None
            gateway.proc.stdin.close()
        outcomes.append(gateway.exit_code())
        assert gone(upstream)
        assert not any("Traceback" in line for line in gateway.stderr), (stop, gateway.stderr)
    assert outcomes == [130, 0]


def test_a_client_closing_stdin_still_ends_each_stdio_server_with_status_0(
    tmp_path: Path, piped: Callable[[list[str]], Piped]
) -> None:
    for name in ("gateway", "serve-reference", "serve-data"):
        server = piped(command(name, tmp_path))
        assert "serverInfo" in server.initialize()["result"]
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        assert server.exit_code() == 0, name
        assert not any("stopping" in line for line in server.stderr)


HUNG = (
    "import os, sys, time; print('hung upstream', os.getpid(), file=sys.stderr, flush=True); time.sleep(600)"
)


def gateway_with_a_hung_upstream(tmp_path: Path, piped: Callable[[list[str]], Piped]) -> tuple[Piped, int]:
    """A stdio gateway whose one upstream never answers its handshake (and ignores its stdin),
    once that upstream runs; with the upstream's process id."""
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"hung": {"command": sys.executable, "args": ["-c", HUNG]}}}))
    gateway = piped([sys.executable, "-m", "mcp_elicit", "gateway", "--config", str(config)])
    gateway.wait_for_stderr("hung upstream")  # started, and the gateway waits for its handshake
    [pid] = [int(line.split()[-1]) for line in gateway.stderr if "hung upstream" in line]
    return gateway, pid


def test_a_stop_while_an_upstream_never_answers_its_handshake_ends_the_wait_and_reaps_it(
    tmp_path: Path, piped: Callable[[list[str]], Piped]
) -> None:
    gateway, pid = gateway_with_a_hung_upstream(tmp_path, piped)
    gateway.proc.send_signal(signal.SIGTERM)
    assert gateway.exit_code() == 143  # the wait for upstreams (30 s) gave way to the stop
    assert gone(pid)


def ended(pid: int) -> bool:
    """Whether process `pid` (not our child) exits within BOUND: its pidfd becomes readable."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:  # already gone and reaped
        return True
    try:
        return bool(select.select([fd], [], [], BOUND)[0])
    finally:
        os.close(fd)


def test_a_second_signal_ends_the_gateway_at_once_and_an_upstream_that_ignores_stdin_with_it(
    tmp_path: Path, piped: Callable[[list[str]], Piped]
) -> None:
    gateway, pid = gateway_with_a_hung_upstream(tmp_path, piped)
    gateway.proc.send_signal(signal.SIGINT)
    gateway.wait_for_stderr("stopping on SIGINT")  # stopping: the upstream is given time to go
    gateway.proc.send_signal(signal.SIGINT)
    assert gateway.exit_code() == 130
    assert ended(pid)


OWN_SERVER = """
from mcp.server.mcpserver import MCPServer
from mcp_elicit.server import install, run_stdio

server = MCPServer("own")
install(server)
run_stdio(server)
"""


@pytest.mark.parametrize(("stop", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (None, 0)])
def test_a_library_users_own_server_run_with_run_stdio_stops_on_a_signal_or_end_of_file(
    piped: Callable[[list[str]], Piped], stop: signal.Signals | None, status: int
) -> None:
    server = piped([sys.executable, "-c", OWN_SERVER])
    assert server.initialize()["result"]["serverInfo"]["name"] == "own"
    if stop is None:
        assert server.proc.stdin is not None
        server.proc.stdin.close()
    else:
        server.proc.send_signal(stop)
    assert server.exit_code() == status
    assert not any("Traceback" in line for line in server.stderr)


def test_run_stdio_refuses_a_fastmcp_server_which_runs_with_its_own_run() -> None:
    import fastmcp

    from mcp_elicit.errors import InvalidArgument
    from mcp_elicit.server import run_stdio

    with pytest.raises(InvalidArgument) as refused:
        run_stdio(fastmcp.FastMCP("theirs"))
    assert refused.value.name == "server"


def test_a_line_longer_than_the_limit_ends_a_stdio_server_as_end_of_file_does(
    tmp_path: Path, piped: Callable[[list[str]], Piped]
) -> None:
    from mcp_elicit.server.stdin import MAX_STDIN_LINE_BYTES

    server = piped(command("serve-reference", tmp_path))
    assert "serverInfo" in server.initialize()["result"]
    assert server.proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):  # the server may stop reading before the end
        server.proc.stdin.write(b"x" * (MAX_STDIN_LINE_BYTES + 65_536))
        server.proc.stdin.flush()
    server.wait_for_stderr(str(MAX_STDIN_LINE_BYTES))  # the one warning, then the end
    assert server.exit_code() == 0


STUBBORN = """
import logging, sys
import anyio
from mcp_elicit.server.signals import run_until_signalled
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")

async def serve(stop):
    print("{}", flush=True)  # serving, its signals watched
    await stop.wait()
    print("{}", flush=True)  # told to stop, and it never finishes stopping
    await anyio.sleep_forever()

run_until_signalled(serve)
"""


@pytest.mark.parametrize(("first", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_second_signal_while_stopping_exits_at_once_with_the_first_ones_status(
    piped: Callable[[list[str]], Piped], first: signal.Signals, status: int
) -> None:
    stubborn = piped([sys.executable, "-c", STUBBORN])
    stubborn.receive(lambda m: m == {})  # serving
    stubborn.proc.send_signal(first)
    stubborn.wait_for_stderr(f"stopping on {first.name}")
    stubborn.receive(lambda m: m == {})  # stopping
    stubborn.proc.send_signal(signal.SIGINT)
    assert stubborn.exit_code() == status
    assert not any("Traceback" in line for line in stubborn.stderr)


# --- a port in use, a bad file ------------------------------------------------------------------


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as holder:
        yield holder.getsockname()[1]


@pytest.mark.parametrize(
    "args",
    [
        ["gateway", "--config", "{servers}", "--listen", "127.0.0.1:{port}"],
        ["serve-reference", "--transport", "http", "--port", "{port}"],
        ["serve-data", "--transport", "http", "--port", "{port}"],
        ["audit", "serve", "--db", "{trail}", "--port", "{port}"],
    ],
)
def test_a_port_in_use_is_one_line_and_status_1(tmp_path: Path, taken_port: int, args: list[str]) -> None:
    servers = write_config(tmp_path / "servers.json", reference=False)
    trail = tmp_path / "trail.sqlite3"
    open_audit_sink(AuditConfig(path=trail)).close()
    filled = [a.format(port=taken_port, servers=servers, trail=trail) for a in args]
    done = subprocess.run(
        [sys.executable, "-m", "mcp_elicit", *filled], capture_output=True, text=True, timeout=BOUND, cwd=ROOT
    )
    assert done.returncode == 1
    assert done.stderr == f"Error: cannot listen on 127.0.0.1:{taken_port}: address already in use\n"


def test_a_bad_gateway_config_file_is_a_usage_error_as_a_missing_one_is(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    missing = CliRunner().invoke(main, ["gateway", "--config", str(tmp_path / "none.json")])
    broken = CliRunner().invoke(main, ["gateway", "--config", str(bad)])
    assert (missing.exit_code, broken.exit_code) == (2, 2)
    assert "not JSON" in broken.output


@pytest.mark.parametrize(
    ("listen", "named"),
    [
        ("127.0.0.1:99999", "'99999'"),
        ("127.0.0.1:-1", "'-1'"),
        ("127.0.0.1:abc", "'abc'"),
        ("127.0.0.1:", "''"),
        (":0", "':0'"),
        ("host:abc", "'host:abc'"),
    ],
)
def test_a_bad_listen_address_is_a_one_line_usage_error_naming_it(
    tmp_path: Path, listen: str, named: str
) -> None:
    """Found by a new user: a port over 65535 ended with Python's own "bind(): port must be
    0-65535." and status 1."""
    servers = write_config(tmp_path / "servers.json", reference=False)
    done = CliRunner().invoke(main, ["gateway", "--config", str(servers), "--listen", listen])
    assert done.exit_code == 2
    [error] = [line for line in done.output.splitlines() if line.startswith("Error:")]
    assert "'--listen'" in error
    assert named in error
    assert "Traceback" not in done.output


# --- the audit trail the gateway records to ---------------------------------------------------------


def test_the_stdio_gateway_says_once_at_start_which_sqlite_file_it_records_to(
    tmp_path: Path, piped: Callable[[list[str]], Piped]
) -> None:
    gateway = piped(command("gateway", tmp_path))
    gateway.initialize()
    assert gateway.proc.stdin is not None
    gateway.proc.stdin.close()
    assert gateway.exit_code() == 0
    expected = Path(os.environ["XDG_DATA_HOME"]).resolve() / "mcp-elicit" / "audit.sqlite3"
    lines = [line for line in gateway.stderr if "audit trail:" in line]
    assert lines == [f"INFO mcp_elicit.gateway: audit trail: SQLite file {expected} (level metadata)\n"]


def test_the_audit_trail_line_names_a_postgres_table_without_the_password_or_says_none() -> None:
    postgres = AuditConfig(
        sink="postgres", postgres="postgresql://ann:s3cret@db.example:5433/audit", table="t1"
    )
    assert (
        audit_trail_line(postgres)
        == "audit trail: PostgreSQL table t1 on db.example:5433/audit (level metadata)"
    )
    assert "s3cret" not in audit_trail_line(postgres)
    assert (
        audit_trail_line(AuditConfig(level="none"))
        == 'audit trail: none (the configuration\'s [audit] level is "none")'
    )
    jsonl = AuditConfig(sink="jsonl", path=Path("/var/log/trail.jsonl"))
    assert audit_trail_line(jsonl) == "audit trail: JSON Lines file /var/log/trail.jsonl (level metadata)"


def test_the_replicas_line_names_the_redis_and_prefix_without_the_password() -> None:
    line = replicas_line("redis://:s3cret@cache.example:6380/2", "team-a:")
    assert line == "replicas: rounds shared through Redis at cache.example:6380/2 (key prefix 'team-a:')"


def ctrl_c_stops(term: pexpect.spawn) -> str:
    """Ctrl-C in `term`'s terminal: the process ends with 130 after one line, no traceback, no
    click "Aborted!"; what it said."""
    term.sendintr()
    term.expect(pexpect.EOF)
    term.close()
    assert term.exitstatus == 130
    said = term.before or ""
    assert "Traceback" not in said
    assert "Aborted!" not in said
    assert said.count("stopping on SIGINT") == 1
    return said


@pytest.mark.parametrize("stop", ["EOF", "SIGTERM", "SIGHUP"])  # SIGHUP: its terminal closed
def test_serve_data_closes_its_sqlite_trail_on_the_way_out(
    tmp_path: Path, piped: Callable[[list[str]], Piped], stop: str
) -> None:
    """Closed: the journal merged and SQLite's WAL checkpointed, nothing left beside the file."""
    trail = tmp_path / "trail" / "audit.sqlite3"
    server = piped([*command("serve-data", tmp_path), "--audit-db", str(trail)])
    server.initialize()
    params = {"name": "query", "arguments": {"sql": "SELECT 1 AS one"}}
    server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
    assert "ran_unasked" in json.dumps(server.receive(lambda m: m.get("id") == 2))
    if stop != "EOF":
        server.proc.send_signal(getattr(signal, stop))
    else:
        assert server.proc.stdin is not None
        server.proc.stdin.close()
    assert server.exit_code() == {"EOF": 0, "SIGTERM": 143, "SIGHUP": 129}[stop]
    assert sorted(p.name for p in trail.parent.iterdir()) == ["audit.sqlite3"]

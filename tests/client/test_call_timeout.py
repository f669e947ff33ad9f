"""`run_call` and `mcp-elicit call` bound the wait on a server that never answers."""

from __future__ import annotations

import math
import shlex
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from mcp_elicit.cli import call_command, main
from mcp_elicit.cli.call import DEFAULT_CALL_TIMEOUT_SECONDS, _ServerWait, run_call
from mcp_elicit.client.connection import ServerSpec

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("misbehaving_server.py")
BOUND_SECONDS = 30.0  # the test's own outer bound; the call's timeout below is far shorter


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_tool_call_the_server_never_answers_ends_with_a_timeout() -> None:
    spec = ServerSpec(argv=(sys.executable, str(SERVER), "silent"))
    with anyio.fail_after(BOUND_SECONDS):
        report = await run_call(spec, "anything", timeout=0.5)
    assert report.completed is False
    assert report.error is not None
    assert report.error["type"] == "TimeoutError"


def test_the_command_has_a_default_timeout_and_takes_timeout() -> None:
    option = next(p for p in call_command.params if p.name == "timeout")
    assert option.default == DEFAULT_CALL_TIMEOUT_SECONDS
    server = shlex.join([sys.executable, str(SERVER), "silent"])
    result = CliRunner().invoke(
        main, ["call", "--server", server, "--tool", "x", "--timeout", "0.5", "--json"]
    )
    assert result.exit_code == 1
    assert '"TimeoutError"' in result.output


async def test_time_with_the_person_does_not_count_and_the_clock_restarts_after() -> None:
    scope = anyio.CancelScope()
    wait = _ServerWait(scope, 5.0)
    assert scope.deadline <= anyio.current_time() + 5.0
    await wait(None)
    await wait(None)  # two questions open at once
    assert scope.deadline == math.inf
    wait.ended(None, None)  # type: ignore[arg-type]
    assert scope.deadline == math.inf
    before = anyio.current_time()
    wait.ended(None, None)  # type: ignore[arg-type]
    assert before + 5.0 <= scope.deadline <= anyio.current_time() + 5.0

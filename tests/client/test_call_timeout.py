"""`run_call` and `mcp-elicit call` bound the wait on a server that never answers."""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
from click.testing import CliRunner

from mcp_elicit.cli import call_command, main
from mcp_elicit.cli.call import DEFAULT_CALL_TIMEOUT_SECONDS, _ServerWait, run_call
from mcp_elicit.client.connection import ServerSpec
from mcp_elicit.client.pipeline import Pipeline
from mcp_elicit.client.url import UrlMode, UrlSettings
from mcp_elicit.ui.scripted import ScriptedUI

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("misbehaving_server.py")
LATE_CANCEL_SERVER = Path(__file__).with_name("late_cancel_server.py")
# Timed-out calls in the test below: the server orders the moments, but when the client's SDK
# closes its read stream is still its own; each run hit the old traceback 4 times in 5.
LATE_CANCEL_RUNS = 3
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


def url_wait(seconds: float) -> tuple[anyio.CancelScope, _ServerWait, UrlMode]:
    async def opener(url: str) -> None:
        return None

    pipeline = Pipeline(ScriptedUI())
    mode = UrlMode(opener=opener, settings=UrlSettings(wait_timeout=600.0))
    mode.install(pipeline)
    scope = anyio.CancelScope()
    wait = _ServerWait(scope, seconds)
    wait.install(pipeline)
    return scope, wait, mode


async def test_time_on_a_web_page_the_client_waits_on_does_not_count_and_the_clock_restarts_after() -> None:
    """The waiting screen after a -32042 (or a retry's backoff): the person is on the page."""
    scope, _, mode = url_wait(5.0)
    with mode.waiting_on_person(False):
        assert scope.deadline == math.inf
    before = anyio.current_time()
    assert before <= scope.deadline <= anyio.current_time() + 5.0


async def test_a_page_accepted_on_a_2025_push_holds_the_clock_until_its_completion_arrives() -> None:
    """The server's tool waits on the page, so the call does: the page wait's bound applies, not
    the wait on the server, until the server says the page is done."""
    scope, wait, mode = url_wait(5.0)
    mode.tracker.expect("page-1")
    await wait(None)
    push = SimpleNamespace(elicitation_id="page-1", url_listed=False, protocol="2025-11-25")
    wait.ended(push, SimpleNamespace(action="accept"))  # type: ignore[arg-type]
    assert scope.deadline >= anyio.current_time() + 599.0
    before = anyio.current_time()
    assert mode.tracker.complete("page-1")
    assert before + 5.0 <= scope.deadline <= anyio.current_time() + 5.0


async def test_a_declined_page_or_a_2026_retry_does_not_hold_the_clock() -> None:
    scope, wait, _ = url_wait(5.0)
    for push, action in (
        (SimpleNamespace(elicitation_id="p", url_listed=False, protocol="2025-11-25"), "decline"),
        (SimpleNamespace(elicitation_id=None, url_listed=False, protocol="2026-07-28"), "accept"),
        (SimpleNamespace(elicitation_id="q", url_listed=True, protocol="2025-11-25"), "accept"),
    ):
        await wait(None)
        wait.ended(push, SimpleNamespace(action=action))  # type: ignore[arg-type]
        assert scope.deadline <= anyio.current_time() + 5.0


async def test_a_2026_retry_held_for_the_page_is_bounded_by_the_page_wait_not_the_timeout() -> None:
    """The server holds the retry until the page is done (the person's time), yet it is a request:
    a server that never answers still ends the call, at the page wait's bound."""
    scope, _, mode = url_wait(5.0)
    with mode.waiting_on_person(True):
        assert anyio.current_time() + 599.0 <= scope.deadline <= anyio.current_time() + 600.0
    assert scope.deadline <= anyio.current_time() + 5.0


def test_a_scripted_call_that_times_out_while_a_pushed_page_waits_says_one_line_without_a_traceback(
    tmp_path: Path,
) -> None:
    """`call --timeout` while a 2025-11-25 page waits: the server answers the abandoned call (-32800)
    while the client closes (`late_cancel_server.py` puts it in that order); the message read after
    the session closed is dropped in one DEBUG line, not printed with the SDK's traceback."""
    from tests.test_cli_stop import Piped

    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"steps": [{"url": "open", "repeat": True}]}))
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "MCP_ELICIT_BROWSER": f"{sys.executable} -c pass",  # "opens" the page; nobody fills it in
    }
    server = Piped([sys.executable, str(LATE_CANCEL_SERVER)])
    try:
        server.wait_for_stderr("late-cancel: http://")
        [url] = [line.split()[-1] for line in server.stderr if line.startswith("late-cancel: ")]
        call = [sys.executable, "-m", "mcp_elicit", "call", "--server", url, "--tool", "connect_service"]
        for _ in range(LATE_CANCEL_RUNS):
            done = subprocess.run(
                [*call, "--answers", str(answers), "--protocol", "legacy", "--timeout", "2", "--no-audit"],
                capture_output=True,
                text=True,
                env=env,
                cwd=tmp_path,
                timeout=BOUND_SECONDS,
                check=False,
            )
            assert done.returncode == 1
            assert "Traceback" not in done.stderr
            assert "BrokenResourceError" not in done.stderr
            errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
            assert [e.split(":")[1].strip() for e in errors] == ["UrlHandoffStopped"]
    finally:
        server.close()

"""`mcp-elicit call` (a real process) over streamable HTTP to a real server process that is killed
while the call waits on a question: one line saying the server's stream ended before it answered,
exit status 1, no traceback, not the SDK's "SSE stream ended without a response"."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from mcp_elicit.cli.call import STREAM_ENDED
from tests.support import lines_of
from tests.test_cli_stop_http import said_url

BOUND = 30.0  # seconds any one wait may take on a loaded machine


def test_a_server_killed_during_a_call_is_one_line_saying_its_stream_ended_and_status_1(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "NO_COLOR": "1"}
    env.pop("MCP_ELICIT_CONFIG", None)
    env.pop("MCP_ELICIT_AUDIT_DB", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "http", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    call: subprocess.Popen[str] | None = None
    try:
        url = said_url(server, "reference server")
        assert url
        script = str(Path(sys.executable).with_name("mcp-elicit"))
        args = ["call", "--server", url, "--tool", "deploy", "--args", json.dumps({"service": "x"})]
        call = subprocess.Popen(
            [sys.executable, script, *args, "--ui", "browser"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        lines = lines_of(call.stderr)
        said: list[str] = []
        while not said or "a question is waiting for you at" not in said[-1]:
            line = lines.get(timeout=BOUND)
            assert line is not None, said
            said.append(line)
        server.send_signal(signal.SIGKILL)  # the call is open on the server, its question in the page
        assert call.wait(timeout=BOUND) == 1
        after = []
        while (line := lines.get(timeout=BOUND)) is not None:
            after.append(line)
        assert after == [f"error: {STREAM_ENDED}\n"]
    finally:
        for process in (call, server):
            if process is not None and process.poll() is None:
                process.kill()
            if process is not None:
                process.communicate()

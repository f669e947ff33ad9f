"""`mcp-elicit connect` and the interactive `make demo`: scripted sessions in-process, keystrokes in a pty."""

from __future__ import annotations

import io
import shlex
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel
from rich.console import Console

from mcp_elicit import demo
from mcp_elicit.cli import main
from mcp_elicit.cli.connect import ConnectSession
from mcp_elicit.client.connection import AUTO_LEGACY_REASON, ProtocolChoice
from mcp_elicit.reference import build_reference_server
from mcp_elicit.ui.terminal import CTRL_C, injected_input
from tests.e2e.servers import serving_http
from tests.ui.screen import Terminal

REFERENCE_STDIO = shlex.join([sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "stdio"])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def console() -> Console:
    return Console(
        file=io.StringIO(),
        width=200,
        color_system=None,
        force_terminal=False,
        legacy_windows=False,
        markup=False,
        emoji=False,
        highlight=False,
        _environ={},
    )


async def session(spec: str, lines: list[str], protocol: ProtocolChoice = "auto") -> tuple[int, str]:
    out = console()
    code = await ConnectSession(
        spec, protocol=protocol, console=out, read_line=injected_input(out, lines)
    ).run()
    return code, out.file.getvalue()  # type: ignore[attr-defined]


# Answers to `call deploy` on the reference server: service, environment 2 (production), region
# kept, replicas 3, then on the review change region (2) to US East, send; confirm yes, send.
DEPLOY_KEYS = ["call deploy", "checkout", "2", "", "3", "2", "2", "", "y", ""]
DEPLOYED = "Result:\nDeployed checkout to production in us-east with 3 replicas.\n"


# -- in-process sessions with injected input ----------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("protocol", ["legacy", "modern", "auto"])
async def test_a_scripted_session_over_stdio_lists_tools_and_answers_forms_in_both_eras(
    protocol: ProtocolChoice,
) -> None:
    code, transcript = await session(REFERENCE_STDIO, ["tools", *DEPLOY_KEYS, "quit"], protocol)
    assert code == 0
    assert f"Connected to mcp-elicit-reference 0.1.0 at {REFERENCE_STDIO}\n" in transcript
    # auto takes the handshake when the server offers it (servers that push can ask), and says so.
    version = "2026-07-28" if protocol == "modern" else "2025-11-25"
    why = f" ({AUTO_LEGACY_REASON})" if protocol == "auto" else f" (--protocol {protocol})"
    assert f"Protocol {version}{why}. Type help for commands, quit to leave.\n" in transcript
    assert "  deploy\n      Deploy a service: asks where to, then confirms before production.\n" in transcript
    assert "service (string, required): checkout\n" in transcript
    assert 'For     tool deploy {"service": "checkout"}\n' in transcript
    assert transcript.count("Review your answers") == 3  # deploy form twice (after a change), confirm once
    assert DEPLOYED in transcript


@pytest.mark.anyio
async def test_a_scripted_session_over_streamable_http_with_json_arguments() -> None:
    keys = ['call deploy {"service": "web"}', "1", "", "", ":cancel", "quit"]
    async with serving_http(build_reference_server()) as url:
        code, transcript = await session(url, keys)
    assert code == 0
    assert f"Connected to mcp-elicit-reference 0.1.0 at {url}\n" in transcript
    assert f"Where   {url}\n" in transcript
    assert "Cancelled: the server is told you dismissed the question.\n" in transcript
    assert "Result:\nNothing deployed (cancel).\n" in transcript


class Name(BaseModel):
    name: str


def hostile_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("hostile\x1b[31m")

    @server.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Hi \x1b[31mred\x1b[0m see https://evil.example/x \u202eend", Name)
        return f"{answer.action}: {getattr(answer, 'data', None)}"

    return server


@pytest.mark.anyio
async def test_questions_go_through_the_client_kit_pipeline_before_the_terminal_ui() -> None:
    """The pipeline cleans server text (escape sequences removed, URLs defanged, bidi marked) and
    validates; the UI's own escaping would show `\\u001b`, so its absence proves the pipeline ran."""
    async with serving_http(hostile_server()) as url:
        code, transcript = await session(url, ["call greet {}", "ada", "", "quit"], "legacy")
    assert code == 0
    assert "Hi red see https[:]//evil.example/x ⟨U+202E⟩end\n" in transcript
    assert "\\u001b" not in transcript
    assert "\x1b" not in transcript
    assert "Result:\naccept: name='ada'\n" in transcript


@pytest.mark.anyio
async def test_declining_and_cancelling_reach_the_server_as_such() -> None:
    """C3: the tool sees decline and cancel, and the session goes on after each."""
    keys = ['call deploy {"service": "a"}', ":decline", 'call deploy {"service": "b"}', CTRL_C, "quit"]
    code, transcript = await session(REFERENCE_STDIO, keys, "legacy")
    assert code == 0
    assert "Result:\nNothing deployed (decline).\n" in transcript
    assert "Result:\nNothing deployed (cancel).\n" in transcript


@pytest.mark.anyio
async def test_mistakes_at_the_prompt_are_explained_and_the_session_goes_on() -> None:
    keys = [
        "help",
        "frobnicate",
        "call",
        "call nosuchtool",
        "call deploy {not json",
        "call deploy [1]",
        "call deploy",
        "",
        ":cancel",
        CTRL_C,
        "",
        "log",
        "exit",
    ]
    code, transcript = await session(REFERENCE_STDIO, keys, "legacy")
    assert code == 0
    assert "Commands:\n  tools" in transcript
    assert "Unknown command 'frobnicate'; type help.\n" in transcript
    assert "Usage: call NAME [JSON arguments]\n" in transcript
    assert "No tool named 'nosuchtool'; type tools to list them.\n" in transcript
    assert "The arguments are not JSON: " in transcript
    assert "The arguments must be a JSON object.\n" in transcript
    assert "service (string, required): \n  This argument is required.\n" in transcript
    assert "service (string, required): :cancel\nCall abandoned.\n" in transcript
    assert "mcp> ^C\n(type quit or press Ctrl-D to leave)\n" in transcript


@pytest.mark.anyio
async def test_end_of_input_at_the_prompt_leaves_the_session() -> None:
    code, transcript = await session(REFERENCE_STDIO, [])
    assert code == 0
    assert transcript.endswith("mcp> ^D\n")


@pytest.mark.anyio
async def test_an_unusable_spec_or_a_server_that_does_not_start_exits_1() -> None:
    code, transcript = await session("   ", [])
    assert code == 1
    assert "Cannot use the server spec: " in transcript
    code, transcript = await session("/nonexistent/mcp-server --stdio", [])
    assert code == 1
    assert (
        "Connection to /nonexistent/mcp-server --stdio failed: cannot start the server: "
        "command not found: /nonexistent/mcp-server"
    ) in transcript


@pytest.mark.anyio
async def test_a_server_stderr_is_kept_off_the_terminal_and_shown_escaped_when_it_fails() -> None:
    """A stdio server's stderr could carry escape sequences; it is shown through plain() only."""
    crash = "import sys; sys.stderr.write('boom \\x1b[2J\\x1b]8;;https://evil.example/\\x07'); sys.exit(3)"
    code, transcript = await session(shlex.join([sys.executable, "-c", crash]), [])
    assert code == 1
    assert "failed or broke" in transcript
    assert (
        "The server's stderr (last lines):\nboom \\u001b[2J\\u001b]8;;https://evil.example/\\u0007\n"
        in transcript
    )
    assert "\x1b" not in transcript


def test_the_command_help_names_the_keys_and_the_spec_forms() -> None:
    result = CliRunner().invoke(main, ["connect", "--help"])
    assert result.exit_code == 0
    for text in (":decline or Ctrl-D declines", "Ctrl-C or Esc cancels", "http(s)://", "--protocol"):
        assert text in " ".join(result.output.split())


def test_the_command_without_a_terminal_reads_plain_lines_and_exits_0() -> None:
    spec = REFERENCE_STDIO
    result = CliRunner().invoke(
        main, ["connect", "--server", spec, "--protocol", "legacy"], input="tools\nquit\n"
    )
    assert result.exit_code == 0, result.output
    assert "mcp> " in result.output
    assert "signup" in result.output


def test_an_empty_spec_is_a_usage_error_before_anything_starts() -> None:
    result = CliRunner().invoke(main, ["connect", "--server", ""], input="")
    assert result.exit_code == 2  # as for call: the spec is read before connecting


# -- the demo -------------------------------------------------------------------------------------


def test_the_demo_without_a_terminal_keeps_the_scripted_run(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    async def scripted(out: Any = None) -> None:
        ran.append("scripted")

    monkeypatch.setattr(demo, "run_demo", scripted)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    demo.main()
    assert ran == ["scripted"]


@pytest.mark.anyio
async def test_the_scripted_demo_still_runs_both_eras() -> None:
    out = io.StringIO()
    await demo.run_demo(out)
    text = out.getvalue()
    assert "=== 2025-11-25: server-to-client elicitation/create ===" in text
    assert "=== 2026-07-28: InputRequiredResult rounds ===" in text
    assert text.count("[deploy] result: Deployed checkout to production in us-east with 3 replicas.") == 2


# -- a real terminal ------------------------------------------------------------------------------


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    started: list[Terminal] = []
    yield started
    for term in started:
        term.close()


def connect_in_pty(terminals: list[Terminal], protocol: str) -> Terminal:
    argv = [
        sys.executable,
        "-m",
        "mcp_elicit",
        "connect",
        "--server",
        REFERENCE_STDIO,
        "--protocol",
        protocol,
    ]
    term = Terminal(argv)
    terminals.append(term)
    term.wait_for("Connected to mcp-elicit-reference 0.1.0")
    term.wait_for("mcp>")
    return term


def approve_once(term: Terminal) -> None:
    """Let the server ask: the first question of a session waits for the person's approval."""
    term.wait_for("This server wants to ask you a question for the tool deploy.")
    term.wait_for("Allow? [allow]:")  # an approval, not an empty form to "send"
    term.type_line("")
    term.wait_for("Allowed: the server's request follows.")


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
def test_a_person_deploys_through_the_real_command_in_a_pty(terminals: list[Terminal], protocol: str) -> None:
    """The whole path with keystrokes: connect, call, fill in, change on review (F6), confirm, result."""
    term = connect_in_pty(terminals, protocol)
    term.type_line("call deploy")
    term.wait_for("service (string, required):")
    term.type_line("checkout")
    approve_once(term)  # the default policy asks first (C4); once per server and session
    term.wait_for("mcp-elicit-reference asks you to fill in a form")
    term.wait_for('For     tool deploy {"service": "checkout"}')
    term.wait_for("Environment:")
    term.type_line("2")
    term.wait_for("Region [1]:")
    term.type_line("")
    term.wait_for("Replicas [2]:")
    term.type_line("3")
    term.wait_for("Send? [send]:")
    term.type_line("2")
    term.wait_for("Region [1]:")
    term.type_line("2")
    term.wait_for("2) Region       US East (Virginia)")
    term.wait_for("Send? [send]:")
    term.type_line("")
    term.wait_for("This affects live traffic.")
    term.wait_for("Yes, go ahead (y/n) [no]:")
    term.type_line("y")
    term.wait_for("Send? [send]:")
    term.type_line("")
    term.wait_for("Deployed checkout to production in us-east with 3 replicas.")
    term.wait_for("mcp>")
    term.type_line("quit")
    assert term.exit_code() == 0


def test_ctrl_c_and_esc_cancel_a_form_and_ctrl_d_leaves_in_a_pty(terminals: list[Terminal]) -> None:
    """C3: Ctrl-C in a form is a cancel the server sees, not a crash; the session goes on."""
    term = connect_in_pty(terminals, "legacy")
    term.type_line('call deploy {"service": "checkout"}')
    approve_once(term)
    term.wait_for("Environment:")
    term.type_line("2")
    term.wait_for("Region [1]:")
    term.send("\x03")
    term.wait_for("Cancelled: the server is told you dismissed the question.")
    term.wait_for("Nothing deployed (cancel).")
    term.wait_for("mcp>")
    term.type_line('call deploy {"service": "checkout"}')
    term.wait_for("Environment:")
    term.send("\x1b")
    term.wait_for("Nothing deployed (cancel).")
    term.wait_for("mcp>")
    term.send("\x04")
    assert term.exit_code() == 0
    assert "Traceback" not in term.screen()


def test_make_demo_in_a_terminal_starts_connect_with_an_intro(terminals: list[Terminal]) -> None:
    term = Terminal([sys.executable, "-m", "mcp_elicit.demo"])
    terminals.append(term)
    term.wait_for("mcp-elicit demo: you are talking to the reference server")
    term.wait_for("call deploy")
    term.wait_for("Connected to mcp-elicit-reference 0.1.0")
    term.wait_for("mcp>")
    term.type_line("call signup")
    term.wait_for("Step 1 of 3: choose your account name.")
    term.wait_for("Username:")
    term.type_line("ada")
    term.wait_for("Email address:")
    term.type_line("ada@example.org")
    term.wait_for("Send? [send]:")
    term.type_line("")
    term.wait_for("Step 2 of 3: preferences for ada.")
    term.wait_for("[no]:")
    term.type_line(":decline")
    term.wait_for("Signup stopped at step 2 (decline).")
    term.wait_for("mcp>")
    term.type_line("quit")
    assert term.exit_code() == 0


@pytest.mark.anyio
async def test_a_failed_http_connection_says_nothing_of_a_stderr_it_never_had() -> None:
    code, transcript = await session("http://127.0.0.1:9/mcp", [])
    assert code == 1
    assert "failed or broke" in transcript
    assert "stderr" not in transcript

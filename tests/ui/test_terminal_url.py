"""The terminal UI's URL screens with injected input: consent (full URL, site, warnings, open /
decline / cancel) and the waiting screen (retry, open again, cancel), then the whole flow through
`ElicitClient` against a hostile server (U2, U3, U6, U8, C3, C4)."""

from __future__ import annotations

import io
import os
import re
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from rich.console import Console

from mcp_elicit.client import ElicitClient
from mcp_elicit.client.model import Elicitation
from mcp_elicit.client.ui_protocol import Purpose, Requester, UIResult, UrlPrompt, UrlWaiting
from mcp_elicit.client.url import UrlMode, UrlSettings
from mcp_elicit.core.urls import check_url
from mcp_elicit.ui.terminal import CTRL_C, CTRL_D, TerminalUI, injected_input, stream_input
from tests.client.url_hostile_server import HostileUrlServer

pytestmark = pytest.mark.anyio

BOUND_SECONDS = 20.0
BANK = Requester("bank", "https://mcp.bank.example/mcp", version="2.1")
FOR = Purpose("tools/call", "connect_account", {"bank": "main"})
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b-\u200f]")


async def nothing(url: str) -> None:
    return None


def prompt_for(url: str, message: str = "Sign in to your bank to connect it.") -> UrlPrompt:
    e = Elicitation(params={}, protocol="2025-11-25", requester=BANK, purpose=FOR, message=message)
    return UrlMode(opener=nothing).prompt(e, check_url(url))


def terminal(lines: list[str]) -> tuple[TerminalUI, io.StringIO]:
    out = io.StringIO()
    screen = Console(file=out, width=100, color_system=None, markup=False, emoji=False, highlight=False)
    return TerminalUI(screen, injected_input(screen, lines)), out


async def test_the_consent_screen_shows_who_asks_the_full_url_its_site_and_opens_only_on_open_U3() -> None:
    ui, out = terminal(["maybe", "open"])
    result = await ui.ask_url(prompt_for("https://Login.Bank.example.co.uk/oauth?state=abc"))
    assert result == UIResult("accept")
    assert out.getvalue().split("\n", 1)[1] == (
        "Server  bank 2.1\n"
        "Where   https://mcp.bank.example/mcp\n"
        'For     tool connect_account {"bank": "main"}\n'
        "\n"
        "Sign in to your bank to connect it.\n"
        "\n"
        "Page    https://login.bank.example.co.uk/oauth?state=abc\n"
        "Sent as https://Login.Bank.example.co.uk/oauth?state=abc\n"
        "Site    example.co.uk\n"
        "It opens in your browser; nothing is fetched before you type open.\n"
        "Nothing opens unless you type open · :decline or Ctrl-D declines · :cancel cancels\n"
        "Open this page? maybe\n"
        "  Type open, :decline or :cancel.\n"
        "Open this page? open\n"
        "Accepted: the page may be opened now.\n"
    )


async def test_with_no_browser_the_consent_screen_says_the_link_is_shown_not_opened() -> None:
    from mcp_elicit.client.opener import ShowLink

    e = Elicitation(params={}, protocol="2025-11-25", requester=BANK, purpose=FOR, message="Sign in.")
    headless = UrlMode(opener=ShowLink(lambda text: None)).prompt(
        e, check_url("https://login.bank.example/x")
    )
    ui, out = terminal([":cancel"])
    await ui.ask_url(headless)
    assert headless.headless
    assert "opens in your browser" not in out.getvalue()
    assert "Its link is shown here" in out.getvalue()


async def test_the_registrable_domain_is_emphasised_U3() -> None:
    out = io.StringIO()
    screen = Console(file=out, width=100, color_system="standard", force_terminal=True, markup=False)
    ui = TerminalUI(screen, injected_input(screen, [":cancel"]))
    await ui.ask_url(prompt_for("https://login.bank.example.co.uk/x"))
    assert "\x1b[1;4mexample.co.uk\x1b[0m/x" in out.getvalue()  # bold underline on the site only


@pytest.mark.parametrize(("line", "action"), [("no", "decline"), (CTRL_D, "decline"), (CTRL_C, "cancel")])
async def test_the_consent_screen_declines_or_cancels_C3_C4(line: str, action: str) -> None:
    ui, _ = terminal([line])
    assert (await ui.ask_url(prompt_for("https://bank.example.com/"))).action == action


async def test_a_blocked_url_shows_every_warning_escaped_and_no_open_option_U3_U4() -> None:
    ui, out = terminal(["open"])
    result = await ui.ask_url(prompt_for("https://p\u0430ypal.com/\u202egnp.exe"))
    shown = out.getvalue()
    assert result == UIResult("decline")
    assert "This page is blocked: it cannot be opened from here." in shown
    assert "Open this page?" not in shown
    assert "Warning: The site name looks like paypal.com but is a different site. (lookalike)" in shown
    assert "(bidi_chars)" in shown
    assert "\\u202e" in shown
    assert RAW.findall(shown) == []


async def test_the_waiting_screen_checks_now_opens_again_and_gives_up_U6_U8() -> None:
    prompt = prompt_for("https://bank.example.com/connect")
    ui, out = terminal(["", "x", ":open", ":cancel"])
    choices = [
        await ui.wait_url(UrlWaiting(prompt, "retry", True, 1, 40, 1.0)),
        await ui.wait_url(UrlWaiting(prompt, "retry", True, 2, 40, 2.0)),
        await ui.wait_url(UrlWaiting(prompt, "completion", False)),
    ]
    assert choices == ["retry", "open", "cancel"]
    assert out.getvalue() == (
        "\n"
        "Waiting for the page on example.com in your browser.\n"
        "When you have finished there, the request goes on; checking again in 1 s (check 1 of 40).\n"
        "Enter or :retry checks now · :open opens the page again · :cancel or Ctrl-C gives up\n"
        "Waiting (Enter checks now): \n"
        "Checking now.\n"
        "Still waiting for the page on example.com: checking again in 2 s (check 2 of 40).\n"
        "Waiting (Enter checks now): x\n"
        "  Enter or :retry checks now · :open opens the page again · :cancel or Ctrl-C gives up.\n"
        "Waiting (Enter checks now): :open\n"
        "Opening the page again.\n"
        "\n"
        "Waiting for the page on example.com in your browser.\n"
        "The server goes on when you have finished there.\n"
        ":open opens the page again · :cancel or Ctrl-C gives up\n"
        "Waiting: :cancel\n"
        "Stopped waiting: the request is cancelled.\n"
    )


async def test_enter_does_not_retry_while_the_server_itself_waits() -> None:
    ui, out = terminal(["", CTRL_C])
    choice = await ui.wait_url(UrlWaiting(prompt_for("https://bank.example.com/"), "completion", False))
    assert choice == "cancel"
    assert "Checking now." not in out.getvalue()


async def test_at_the_end_of_input_the_waiting_screen_waits_until_the_wait_ends_on_its_own() -> None:
    ui, out = terminal([])
    with anyio.move_on_after(0.05) as scope:
        await ui.wait_url(UrlWaiting(prompt_for("https://bank.example.com/"), "completion", True))
    assert scope.cancelled_caught
    assert out.getvalue().endswith(
        "No more input: waiting until the page is done.\nChecking with the server…\n"
    )


async def test_a_whole_2026_flow_in_the_terminal_consent_once_then_bounded_checks() -> None:
    """The server keeps asking for the page: one consent, then the waiting screen (no more input),
    automatic checks with backoff, and a clean end when the bound is reached."""

    async def no_time(seconds: float) -> None:
        await anyio.lowlevel.checkpoint()

    opened: list[str] = []

    async def opener(url: str) -> None:
        opened.append(url)

    ui, out = terminal(["open"])
    mode = UrlMode(opener=opener, settings=UrlSettings(max_checks=2, sleep=no_time))
    hostile = HostileUrlServer()
    with anyio.fail_after(BOUND_SECONDS):
        async with ElicitClient(hostile.server, ui=ui, protocol="modern", url_mode=mode) as c:
            with pytest.raises(MCPError):
                await c.call_tool("embedded_forever", {"url": "https://accounts.example.com/connect"})
    shown = out.getvalue()
    flowing = " ".join(shown.split())
    assert opened == ["https://accounts.example.com/connect"]
    assert shown.count("asks you to open a web page") == 1
    assert "Waiting for the page on example.com in your browser." in shown
    assert "Still waiting for the page on example.com: checking again in 2 s (check 2 of 2)." in shown
    assert "The server kept asking for the same page (2 checks): the request was stopped." in flowing
    assert RAW.findall(shown) == []


def test_nothing_here_imports_a_browser(monkeypatch: Any) -> None:
    """The terminal UI only returns decisions: opening is the client's (client/opener.py)."""
    import mcp_elicit.ui.terminal as terminal_module

    assert "webbrowser" not in vars(terminal_module)
    assert "subprocess" not in vars(terminal_module)


async def test_a_line_typed_while_a_waiting_screen_ended_is_kept_for_the_next_question() -> None:
    """Plain stdin (no terminal): the read a waiting screen abandons keeps its line, so the next
    prompt gets it instead of losing it to a forgotten thread."""
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "r") as stream, os.fdopen(write_fd, "w") as writer:
        out = io.StringIO()
        read = stream_input(Console(file=out, width=100, color_system=None), stream)
        with anyio.move_on_after(0.05) as scope:  # the wait ends on its own before anything is typed
            await read("Waiting: ")
        assert scope.cancelled_caught
        writer.write("open\n")
        writer.flush()
        with anyio.fail_after(BOUND_SECONDS):
            assert await read("Open this page? ") == "open"

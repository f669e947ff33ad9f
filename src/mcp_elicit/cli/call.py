"""`run_call`: one tool call with the pipeline behind its questions (what `mcp-elicit call` runs).

Who answers the questions:

1. the `ui` given, else
2. the scripted answers file (`answers`, see `mcp_elicit.ui.scripted`), else
3. the terminal UI when there is a terminal (`interactive`, default: stdin is a tty) and
   `mcp_elicit.ui.terminal` is installed, else
4. nobody: every question is cancelled at once with `decided_by="no_terminal"`, and a notice on
   `notices` says so. `run_call` never waits for input that cannot come.

URL mode (`url_mode`, see `client/url.py`): by default (None) it is on when someone can consent
(the given UI if it is URL-capable, the scripted answers, the terminal) and this machine can open a
browser (`client/opener.py`); True requires it (ConfigError when impossible), False turns it off,
and a `UrlMode` brings its own opener and bounds. Without URL mode the client does not declare it
and servers cannot ask for a page.

With a `config` (`mcp_elicit.config.Config`, what `mcp-elicit call` reads), its policy guards the
questions and, unless `audit=False`, every question is recorded in its audit sink. When the policy
says "ask first", a terminal asks the person; scripted answers and no terminal only get a notice
(the script is the approval; nobody could approve anyway).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import signal
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Final, TextIO

import anyio

from mcp_elicit.cli.options import MODERN_REFUSED_HINT
from mcp_elicit.client.connection import ElicitClient, ServerSpec
from mcp_elicit.client.model import Outcome
from mcp_elicit.client.oauth import OAuthLogin, link_printer
from mcp_elicit.client.opener import NO_BROWSER_REASON, ShowLink, system_opener
from mcp_elicit.client.pipeline import Pipeline
from mcp_elicit.client.sdk import connection_closed, error_code, stream_ended, unfit_answer
from mcp_elicit.client.sdk_transport import Spawned, noting_spawns
from mcp_elicit.client.servers import process_end, start_failure, unreachable
from mcp_elicit.client.stages import AnswerWithoutAsking
from mcp_elicit.client.ui_protocol import (
    FormPrompt,
    Requester,
    UIResult,
    UrlCapableUI,
    UrlPrompt,
    UserInterface,
)
from mcp_elicit.client.url import UrlMode, UrlSettings
from mcp_elicit.client.url_flow import URL_RECHECK_REASON
from mcp_elicit.config import Config
from mcp_elicit.core.redact import redact_where
from mcp_elicit.core.revisions import is_modern
from mcp_elicit.core.text import clean_text
from mcp_elicit.errors import AuthorizationFailed, ConfigError, UrlHandoffStopped

__all__ = [
    "DEFAULT_CALL_TIMEOUT_SECONDS",
    "KIT_WORDED",
    "STREAM_ENDED",
    "CallReport",
    "questions_of",
    "run_call",
]

# How long `run_call` (and `mcp-elicit call`) waits on the server: connecting, then the tool's
# result. Time a question spends with the person does not count; the clock restarts when it
# ends. A server that never answers ends the call after this, instead of hanging it.
DEFAULT_CALL_TIMEOUT_SECONDS: Final = 120.0

_ERROR_TEXT_CHARS = 2_000  # characters of an error message kept in the report

# What `call` and `connect` say, in place of the SDK's "SSE stream ended without a response", when
# an HTTP server's stream for the call ended before its answer (a report's error reason
# "stream_ended").
STREAM_ENDED: Final = "the server's stream ended before it answered (the server may have restarted)"
# The report's error reasons whose message is the kit's own sentence, shown without the error's type.
KIT_WORDED: Final = ("stream_ended", "server_exited")


@dataclass
class CallReport:
    """What happened: the tool result (or the error) and every question the server asked."""

    tool: str
    completed: bool
    server: Requester | None = None
    protocol: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    elicitations: list[Outcome] = field(default_factory=list)
    server_log: str | None = None  # cleaned tail of a stdio server's stderr, when the call failed
    url_mode: str = ""  # which URL mode was in effect, and why
    era: str = ""  # why this protocol revision (e.g. what --protocol auto chose)

    def to_json(self) -> dict[str, Any]:
        server = self.server
        return {
            "tool": self.tool,
            "completed": self.completed,
            "server": None
            if server is None
            else {
                "name": server.name,
                "title": server.title,
                "version": server.version,
                "where": server.where,
            },
            "protocol": self.protocol,
            "era": self.era,
            "url_mode": self.url_mode,
            "result": self.result,
            "error": self.error,
            "elicitations": [o.to_json() for o in self.elicitations],
            "server_log": self.server_log,
        }


class _NoticesOnly:
    """A UI for when nobody can answer: notices go to a stream; it is never asked anything."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        return UIResult("cancel")

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        return UIResult("cancel")

    async def notice(self, requester: Requester, text: str) -> None:
        _print_notice(self.stream, requester, text)


def _print_notice(stream: TextIO, requester: Requester, text: str) -> None:
    who = requester.name or requester.where or "server"
    print(clean_text(f"mcp-elicit: {who}: {text}", limit=1_000, multiline=False), file=stream)


def _pipeline(
    ui: UserInterface | None, answers: str | Path | None, interactive: bool | None, notices: TextIO
) -> Pipeline:
    if ui is not None:
        return Pipeline(ui)
    if answers is not None:
        return Pipeline(_script_printing_notices(answers, notices))
    if interactive is None:
        interactive = sys.stdin.isatty()
    reason, text = "no_terminal", "No terminal to ask on and no --answers: the question was cancelled."
    if interactive:
        try:
            terminal = importlib.import_module("mcp_elicit.ui.terminal")
        except ImportError:
            reason, text = "no_terminal_ui", "The terminal UI is not installed: the question was cancelled."
        else:
            return Pipeline(terminal.TerminalUI())
    quiet = _NoticesOnly(notices)
    pipeline = Pipeline(quiet)
    pipeline.insert(AnswerWithoutAsking(quiet, "cancel", "no_terminal", reason, text))
    return pipeline


def _script_printing_notices(answers: str | Path, notices: TextIO) -> UserInterface:
    """The answers file, whose notices (a refused secret-seeking form, a blocked link, ...) are
    printed as well as kept: the person running the command learns why, as `connect` says it."""
    from mcp_elicit.ui.scripted import ScriptedUI

    class Script(ScriptedUI):
        async def notice(self, requester: Requester, text: str) -> None:
            await super().notice(requester, text)
            _print_notice(notices, requester, text)

    return Script.from_file(answers)


def _asks_a_person(pipeline: Pipeline) -> bool:
    from mcp_elicit.ui.scripted import ScriptedUI

    return not isinstance(pipeline.ui, ScriptedUI | _NoticesOnly)


def _with_url_mode(
    pipeline: Pipeline,
    url_mode: bool | UrlMode | None,
    notices: TextIO = sys.stderr,
    wait_timeout: float | None = None,
) -> tuple[Pipeline, str]:
    """Install URL mode in `pipeline` as `url_mode` says (see the module docstring); also say which
    URL mode is in effect and why, in one line for the person."""
    if url_mode is False:
        return pipeline, "off (--no-url)"
    if url_mode is None and not isinstance(pipeline.ui, UrlCapableUI):
        return pipeline, "off: nobody can consent to open a page here (no terminal, no --answers)"
    if isinstance(url_mode, UrlMode):
        url_mode.install(pipeline)
        return pipeline, "on, " + url_mode.describe()
    if not isinstance(pipeline.ui, UrlCapableUI):
        raise ConfigError("url_mode", "nobody can consent to open a page here (no terminal, no --answers)")
    opener = system_opener()
    why = ""
    if opener is None:
        # Over SSH or in a container: the person consents, then gets the link to open elsewhere.
        opener, why = ShowLink(link_printer(notices)), f" ({NO_BROWSER_REASON})"
    settings = None
    if wait_timeout is not None and not _asks_a_person(pipeline):
        # A script cannot finish a page: its wait is bounded like the wait on the server.
        settings = UrlSettings(wait_timeout=wait_timeout)
    mode = UrlMode(opener=opener, settings=settings)
    mode.install(pipeline)
    return pipeline, "on, " + mode.describe() + why


async def run_call(
    server: str | ServerSpec | Any,
    tool: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    answers: str | Path | None = None,
    ui: UserInterface | None = None,
    protocol: str = "auto",
    interactive: bool | None = None,
    read_timeout: float | None = None,
    notices: TextIO = sys.stderr,
    url_mode: bool | UrlMode | None = None,
    config: Config | None = None,
    audit: bool = True,
    timeout: float | None = DEFAULT_CALL_TIMEOUT_SECONDS,
    oauth: OAuthLogin | None = None,
) -> CallReport:
    """Connect, call `tool` once, and report. Never raises for a failed call: see `completed`.

    A stdio server's stderr goes to a temporary file, never to the terminal (it is the server's
    text, escape sequences and all); when the call fails, its cleaned tail is in `server_log`.
    Raises `ConfigError` for an unreadable answers file and `ValueError` for an empty server spec
    (the caller's mistakes, before anything is started). `timeout` bounds the wait on the server
    (None: no bound); past it the report's error is a `TimeoutError`. `oauth` signs in to an HTTP
    server that requires it, before that bound (a person is signing in); a sign-in that does not
    complete is the report's error (`AuthorizationFailed`, with its `reason`).
    """
    pipeline, url_line = _with_url_mode(
        _pipeline(ui, answers, interactive, notices), url_mode, notices, timeout
    )
    guarded: dict[str, Any] = {}
    if config is not None:
        from mcp_elicit.ui.scripted import ScriptedUI

        asks_a_person = not isinstance(pipeline.ui, ScriptedUI | _NoticesOnly)
        guarded = {
            "policy": config.policy,
            "approval": "form" if asks_a_person else "notice",
            "audit": config.audit if audit else None,
        }
    report = CallReport(tool=tool, completed=False, url_mode=url_line)
    scope = anyio.CancelScope()
    if timeout is not None:
        _ServerWait(scope, timeout).install(pipeline)
    spawned = Spawned()  # a stdio server's process: how it ended, when it ends the call
    with (
        _interrupt_noted(pipeline),
        noting_spawns(spawned),
        tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog,
    ):
        client = ElicitClient(
            server,
            pipeline=pipeline,
            protocol=protocol,
            read_timeout=read_timeout,
            errlog=errlog,
            oauth=oauth,
            **guarded,
        )
        try:
            await client.sign_in()
            with scope:
                await _in_scope(client, tool, arguments, report)
            if scope.cancelled_caught:
                raise TimeoutError(f"the server did not answer within {timeout:g} s")
        except ConfigError:
            raise  # the configuration cannot be used (say, its checkpoint's key is missing): exit 2
        except Exception as exc:  # the report is the interface: any failure is described, not raised
            not_started = start_failure(exc, client.stdio_command)
            if not_started is not None:  # one line naming the command; there is no server log
                report.error = {
                    "type": type(not_started.error).__name__,
                    "message": not_started.text,
                    "reason": not_started.reason,
                    "command": not_started.command,
                }
            else:
                report.error = _describe(exc)
                if client.http_url and unreachable(exc):  # where it looked (`call` prints it)
                    report.error["url"] = redact_where(client.http_url)
                if client.stdio_command and connection_closed(exc) and spawned.exit_status is not None:
                    # the SDK says "Connection closed"; the process says why
                    ended = process_end(spawned.exit_status).removeprefix("its ")
                    report.error.update(
                        message=f"the server's {ended} before it answered", reason="server_exited"
                    )
                    report.error["exit_status"] = spawned.exit_status
                if client.discover_refused is not None and "hint" not in report.error:
                    report.error["hint"] = MODERN_REFUSED_HINT
                report.server_log = _tail(errlog) or None
    report.elicitations = questions_of(client.handler.outcomes)
    return report


@contextlib.contextmanager
def _interrupt_noted(pipeline: Pipeline) -> Iterator[None]:
    """While the call runs, a Ctrl-C (SIGINT) first tells the pipeline (`Pipeline.interrupt`: a
    question open then is recorded as the person's cancel, reason ``interrupted``, not as one
    withdrawn by ``timeout``), then goes to the handler in place: the event loop's, which stops the
    run (`mcp-elicit call` then says so in one line and exits 130). Signals reach the main thread
    only: elsewhere, and under a handler that is not a function, nothing changes."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield
        return
    handler = previous

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        pipeline.interrupt()
        handler(signum, frame)

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is on_sigint:
            signal.signal(signal.SIGINT, previous)


def questions_of(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """The outcomes a report lists: an automatic re-check of a page already consented to (a
    2026-07-28 retry) is no question, and the trail does not record it either."""
    return [o for o in outcomes if not (o.action == "accept" and o.reason == URL_RECHECK_REASON)]


class _ServerWait:
    """The deadline on the server: suspended while a question is open or the client waits on the
    person's web page, restarted when that ends.

    A stage placed first in the pipeline (a question opened) and an observer (it ended). With URL
    mode, a wait on a page (`UrlMode.waiting_on_person`) stops it too. Where the server is waiting
    on the page as well (a page accepted on a 2025-11-25 push, until its completion arrives; a
    2026-07-28 retry the server holds for it) it becomes at least the page wait's bound
    (`UrlSettings.wait_timeout`): a person's time, but a server that never answers still ends."""

    name = "server_wait"

    def __init__(self, scope: anyio.CancelScope, seconds: float) -> None:
        self.scope, self.seconds, self.open, self.held = scope, seconds, 0, 0
        self.pages: set[str] = set()
        self.mode: UrlMode | None = None
        scope.deadline = anyio.current_time() + seconds

    def install(self, pipeline: Pipeline) -> None:
        pipeline.stages.insert(0, self)
        pipeline.observers.append(self.ended)
        mode = getattr(pipeline.stage("check_url"), "mode", None) if "check_url" in pipeline.names else None
        if isinstance(mode, UrlMode):  # a script's page wait is bounded by --timeout (_with_url_mode)
            self.mode = mode
            mode.waiting_on_person = self.person
            mode.tracker.on_complete = self.page_done

    async def __call__(self, e: Any) -> None:
        self.open += 1
        self._restart()
        return None

    def ended(self, e: Any = None, outcome: Outcome | None = None) -> None:
        # A page accepted on a 2025-11-25 push: the server's tool waits on it, and so does the call.
        pushed = e is not None and e.elicitation_id is not None and not e.url_listed
        accepted = outcome is not None and outcome.action == "accept" and pushed and not is_modern(e.protocol)
        if accepted and self.mode is not None and not self.mode.tracker.completed(e.elicitation_id):
            self.pages.add(e.elicitation_id)
        self.open = max(0, self.open - 1)
        self._restart()

    def page_done(self, elicitation_id: str) -> None:
        self.pages.discard(elicitation_id)
        self._restart()

    def _restart(self) -> None:
        if self.open:
            self.scope.deadline = math.inf
            return
        seconds = self.seconds
        if (self.pages or self.held) and self.mode is not None:
            seconds = max(seconds, self.mode.settings.wait_timeout)
        self.scope.deadline = anyio.current_time() + seconds

    @contextlib.contextmanager
    def person(self, held: bool = False) -> Iterator[None]:
        if held:
            self.held += 1
        else:
            self.open += 1
        self._restart()
        try:
            yield
        finally:
            if held:
                self.held -= 1
            else:
                self.open = max(0, self.open - 1)
            self._restart()


async def _in_scope(
    client: ElicitClient, tool: str, arguments: Mapping[str, Any] | None, report: CallReport
) -> None:
    async with client:
        report.server = client.server
        report.protocol = client.protocol_version
        report.era = client.era_reason
        result = await client.call_tool(tool, arguments or {})
        report.result = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        report.completed = True


def _tail(log: Any) -> str:
    """The last characters of the log (read as bytes: a text file cannot seek to an offset)."""
    log.flush()
    raw = log.buffer
    size = raw.seek(0, 2)
    raw.seek(max(0, size - 4 * _ERROR_TEXT_CHARS))
    text = raw.read().decode("utf-8", errors="replace")
    return clean_text(text[-_ERROR_TEXT_CHARS:], limit=_ERROR_TEXT_CHARS)


def _describe(exc: BaseException) -> dict[str, Any]:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    error: dict[str, Any] = {
        "type": type(exc).__name__,
        "message": clean_text(str(exc) or type(exc).__name__, limit=_ERROR_TEXT_CHARS),
    }
    code = error_code(exc)
    if code is not None:
        error["code"] = code
    if stream_ended(exc):  # the SDK's words name its plumbing, not what happened
        error.update(message=STREAM_ENDED, reason="stream_ended")
    unfit = unfit_answer(exc)
    if unfit is not None:  # pydantic's report runs over several lines, with links
        error.update(
            message=clean_text(unfit, limit=_ERROR_TEXT_CHARS, multiline=False), reason="unfit_answer"
        )
    if isinstance(exc, UrlHandoffStopped | AuthorizationFailed):
        error["reason"] = exc.reason
    if isinstance(exc, AuthorizationFailed) and exc.status is not None:
        error["status"] = exc.status
        error["hint"] = _CREDENTIALS_HINT
    return error


# What to do when an HTTP server answers 401/403 (the `call` and `connect` options that give access).
_CREDENTIALS_HINT: Final = (
    "give credentials with --bearer TOKEN (or $MCP_ELICIT_BEARER), --header 'NAME: VALUE', "
    "or --oauth to sign in"
)

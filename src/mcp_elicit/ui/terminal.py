"""The terminal UI: who asks and why, the form field by field, a review screen, then send, decline or cancel.

Keys (shown on screen with every question, and again by `:help`):

=================================  ================================================================
input                              effect
=================================  ================================================================
Enter on an empty line             keep the value in [brackets] (a default, or an earlier answer)
``:decline`` or Ctrl-D             decline: an explicit no (C3)
``:cancel``, Ctrl-C or Esc         cancel: dismiss without a choice (C3)
``:clear``                         leave an optional field empty (it is then not sent)
``:none``                          select nothing in a multi select
``:help``                          show the keys again
``::text``                         the text ``:text`` (a leading colon is doubled)
review: Enter or ``:send``         send the answers
review: a field's number           change that answer (F6), then back to the review
=================================  ================================================================

Input comes from a `LineReader`: an async callable that shows a prompt and returns one line, or
raises `EOFError` (Ctrl-D) or `KeyboardInterrupt` (Ctrl-C, Esc). `terminal_input()` reads a real
terminal through prompt_toolkit (plain lines when stdin is not a terminal); `injected_input()`
answers from a list, echoing each line into the console like a terminal would, so a test can assert
the exact transcript.

Safety. The pipeline hands this UI cleaned text; as a second line of defence every string that came
from a server is passed through `plain()` (control, format, bidi, invisible and separator
characters become visible ``\\uXXXX`` escapes) and printed as a rich `Text`, never as markup: no
styles, no emoji codes, no highlighting and no hyperlinks (F8: a URL in a form is plain text; rich
emits OSC 8 links only for styles that carry a link, and none here does). Terminal emulators that
detect URLs in plain text on their own are outside this module's reach.

URL mode (`ask_url`, `wait_url`): the full URL with its site emphasised and every warning; nothing
opens unless the person types ``open``, and a URL whose check says block (`UrlPrompt.verdict`)
offers no open option at all. The UI only returns the person's decision: the client opens the page
(`client/url.py`) and then shows the waiting screen, where Enter or ``:retry`` checks now, ``:open``
opens the page again, ``:cancel`` or Ctrl-C gives up, and Ctrl-D stops reading input (the wait goes
on and ends on its own).
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from concurrent.futures import Future
from typing import Any, Final, TextIO

import anyio
import anyio.to_thread
from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from mcp_elicit.client.ui_protocol import (
    FormPrompt,
    Purpose,
    Requester,
    UIResult,
    UrlPrompt,
    UrlWaiting,
    WaitChoice,
)
from mcp_elicit.core.answers import check_value
from mcp_elicit.core.forms import Field, Form

__all__ = [
    "CTRL_C",
    "CTRL_D",
    "ESC",
    "KEYS_HELP",
    "MAX_ARGUMENTS_CHARS",
    "MAX_VALUE_CHARS",
    "LineReader",
    "TerminalUI",
    "injected_input",
    "plain",
    "terminal_input",
]

LineReader = Callable[[str], Awaitable[str]]
"""Shows `prompt`, returns the line typed (no newline); EOFError = Ctrl-D, KeyboardInterrupt = Ctrl-C/Esc."""

# Sentinels for `injected_input`: a line equal to one of these acts like that key.
CTRL_C: Final = "\x03"
CTRL_D: Final = "\x04"
ESC: Final = "\x1b"

# Characters of a tool call's arguments shown in the "For" line. The arguments are the person's
# own, but a long JSON blob would push the server's identity off the screen.
MAX_ARGUMENTS_CHARS: Final = 300

# Characters of one answer shown in [brackets] and on the review screen. Answers may be up to
# 64 Ki characters (core.limits.MAX_STRING_LENGTH); the review needs one line per field to stay
# readable. The full value is still what gets sent.
MAX_VALUE_CHARS: Final = 200

KEYS_HELP: Final = (
    "Keys: Enter keeps the [value] · :help shows all keys\n"
    "      :decline or Ctrl-D declines · :cancel, Ctrl-C or Esc cancels"
)
_MORE_KEYS: Final = "      :clear empties an optional field · :none picks nothing · ::x types ':x'"

_COMMANDS: Final = frozenset({":decline", ":cancel", ":clear", ":none", ":help", ":send"})
_YES: Final = frozenset({"y", "yes", "true", "1"})
_NO: Final = frozenset({"n", "no", "false", "0"})
_SEND: Final = frozenset({"", ":send", "send", "s"})
_OPEN: Final = frozenset({"open", "o", "y", "yes"})
_RETRY: Final = frozenset({"", ":retry", "retry", "r"})
_REOPEN: Final = frozenset({":open", "open", "o"})
_VERBS: Final = {"tools/call": "tool", "prompts/get": "prompt", "resources/read": "resource"}
_HINTS: Final = {
    "email": "an email address, like name@example.org",
    "uri": "an absolute URI, like https://example.org/page",
    "date": "a date, YYYY-MM-DD",
    "date-time": "a date and time, YYYY-MM-DDTHH:MM:SSZ (or an offset such as +02:00)",
}
_INTEGER_RE: Final = re.compile(r"[+-]?[0-9]+")
_UNSAFE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})


def plain(text: str) -> str:
    """`text` safe for a terminal: controls, format characters (bidi, zero-width), private-use and
    line/paragraph separators written as visible escapes; newlines kept, tabs become spaces."""
    if text.isprintable():
        return text
    out: list[str] = []
    for ch in text:
        if ch == "\n":
            out.append(ch)
        elif ch == "\t":
            out.append(" ")
        elif unicodedata.category(ch) in _UNSAFE_CATEGORIES:
            code = ord(ch)
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Decline(Exception):
    pass


class _Cancel(Exception):
    pass


# -- readers ------------------------------------------------------------------------------------


def injected_input(console: Console, lines: Iterable[str]) -> LineReader:
    """A reader answering from `lines` and echoing prompt and answer into `console` (tests, automation).

    `CTRL_C` and `ESC` act like those keys (KeyboardInterrupt), `CTRL_D` like Ctrl-D (EOFError);
    running out of lines is an end of input, like Ctrl-D.
    """
    pending = iter(lines)
    shown = {CTRL_C: "^C", CTRL_D: "^D", ESC: "^["}

    async def read(prompt: str) -> str:
        line = next(pending, CTRL_D)
        console.print(Text(plain(prompt + shown.get(line, line))))
        if line in (CTRL_C, ESC):
            raise KeyboardInterrupt
        if line == CTRL_D:
            raise EOFError
        return line

    return read


def stream_input(console: Console, stream: TextIO) -> LineReader:
    """A reader of plain lines from `stream` (stdin when it is not a terminal); end of input is Ctrl-D.

    A read that is cancelled (a waiting screen that ended on its own) keeps its pending line for
    the next read, so no line typed meanwhile is lost.
    """
    pending: list[Future[str]] = []

    def start() -> Future[str]:
        future: Future[str] = Future()

        def run() -> None:
            try:
                future.set_result(stream.readline())
            except BaseException as exc:  # handed to the reader, which raises it
                future.set_exception(exc)

        threading.Thread(target=run, name="mcp-elicit-input", daemon=True).start()
        return future

    async def read(prompt: str) -> str:
        console.print(Text(plain(prompt)), end="")
        if not pending:
            pending.append(start())
        line = await anyio.to_thread.run_sync(pending[0].result, abandon_on_cancel=True)
        pending.clear()
        if not line:
            console.print()
            raise EOFError
        return line.rstrip("\r\n")

    return read


def terminal_input(console: Console, stdin: TextIO | None = None) -> LineReader:
    """Line editing with prompt_toolkit on a terminal (Esc bound to cancel); plain lines otherwise."""
    stream = stdin if stdin is not None else sys.stdin
    if not stream.isatty():
        return stream_input(console, stream)
    from prompt_toolkit import PromptSession
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    bindings = KeyBindings()

    # Not eager: Esc followed by a key is still Alt+key; a lone Esc fires after prompt_toolkit's
    # key timeout (about a second).
    @bindings.add("escape")
    def _escape(event: KeyPressEvent) -> None:
        event.app.exit(exception=KeyboardInterrupt(), style="class:aborting")

    session: PromptSession[str] = PromptSession(key_bindings=bindings)

    async def read(prompt: str) -> str:
        # SIGINT stays with the application (connect uses it to abandon a running call); in the
        # editor Ctrl-C is a key press, raised as KeyboardInterrupt.
        return await session.prompt_async(prompt, handle_sigint=False)

    return read


# -- the UI -------------------------------------------------------------------------------------


class TerminalUI:
    """Asks forms and URL hand-offs in a terminal; implements `mcp_elicit.ui.base.UserInterface`.

    `console` defaults to one on stdout with markup, emoji and highlighting off; `read_line`
    defaults to `terminal_input(console)`. Questions are asked one at a time (a lock), so two
    elicitations arriving together never interleave on screen.
    """

    def __init__(self, console: Console | None = None, read_line: LineReader | None = None) -> None:
        self.console = console or Console(markup=False, emoji=False, highlight=False)
        self._read = read_line or terminal_input(self.console)
        self._lock = anyio.Lock()

    # UserInterface ------------------------------------------------------------------------------

    async def ask_form(self, prompt: FormPrompt) -> UIResult:
        async with self._lock:
            return await self._decide(self._form(prompt))

    async def ask_url(self, prompt: UrlPrompt) -> UIResult:
        async with self._lock:
            return await self._decide(self._url(prompt))

    async def wait_url(self, waiting: UrlWaiting) -> WaitChoice:
        async with self._lock:
            try:
                return await self._waiting(waiting)
            except anyio.get_cancelled_exc_class():
                # The wait ended on its own (the page is done, a check is due, a question came).
                self._say("Checking with the server…", "dim")
                raise

    async def notice(self, requester: Requester, text: str) -> None:
        async with self._lock:
            line = Text("Note about ", style="yellow")
            line.append(_name(requester), style="bold")
            line.append(f" ({plain(requester.where)}): {plain(text)}")
            self.console.print(line)

    # plumbing -----------------------------------------------------------------------------------

    async def _decide(self, flow: Awaitable[UIResult]) -> UIResult:
        try:
            result = await flow
        except _Decline:
            self._say("Declined: the server is told no.", "yellow")
            return UIResult("decline")
        except _Cancel:
            self._say("Cancelled: the server is told you dismissed the question.", "yellow")
            return UIResult("cancel")
        except anyio.get_cancelled_exc_class():
            # The pipeline's idle timeout, or the call ended: say so before the prompt goes away.
            self._say("The question was withdrawn (no answer in time, or the call ended).", "yellow")
            raise
        return result

    def _say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style))

    async def _ask(self, prompt: str) -> str:
        """One line; decline and cancel (typed or keys) end the whole question."""
        try:
            line = await self._read(prompt)
        except KeyboardInterrupt:
            raise _Cancel from None
        except EOFError:
            raise _Decline from None
        line = line.strip()
        if line == ":decline":
            raise _Decline
        if line == ":cancel":
            raise _Cancel
        return line

    def _header(self, requester: Requester, purpose: Purpose, what: str) -> None:
        title = Text(f"{_name(requester)} {what}")
        self.console.print(Rule(title, style="cyan"))
        server = Text()
        if requester.title and requester.title != requester.name:
            server.append(plain(requester.title), style="bold")
            server.append(f" ({_name(requester)}")
            server.append(f" {plain(requester.version)})" if requester.version else ")")
        else:
            server.append(_name(requester), style="bold")
            if requester.version:
                server.append(f" {plain(requester.version)}")
        self._row("Server", server)
        self._row("Where", Text(plain(requester.where), style="bold"))
        self._row("For", Text(_purpose(purpose)))

    def _row(self, label: str, value: Text) -> None:
        line = Text()
        line.append(f"{label:<7} ", style="dim")  # only the label is dim, not the value
        line.append_text(value)
        self.console.print(line)

    def _message(self, message: str, warnings: Iterable[str]) -> None:
        self.console.print()
        self.console.print(Text(plain(message)))
        for warning in warnings:
            self.console.print(Text(f"Warning: {plain(warning)}", style="bold yellow"))
        self.console.print()

    # forms --------------------------------------------------------------------------------------

    async def _form(self, prompt: FormPrompt) -> UIResult:
        form = prompt.form
        self._header(prompt.requester, prompt.purpose, "asks you to fill in a form")
        self._message(prompt.message, prompt.warnings)
        self._say(KEYS_HELP, "dim")
        values: dict[str, Any] = {k: v for k, v in prompt.values.items() if k in form.names}
        for f in form.fields:  # a multi select answers with a JSON array, whatever came in
            if f.kind == "multi_select" and isinstance(values.get(f.name), tuple):
                values[f.name] = list(values[f.name])
        for name, why in prompt.errors.items():
            if name not in form.names:
                self._say(f"Your last answer was refused: {plain(why)}", "red")
        refused = [f for f in form.fields if f.name in prompt.errors]
        # A retry asks only the refused fields again; everything else is on the review screen.
        for f in refused or form.fields:
            await self._field(f, values, prompt.errors.get(f.name))
        while True:
            choice = await self._review(form, values)
            if choice is None:
                missing = [f for f in form.fields if f.required and f.name not in values]
                if not missing:
                    content = {f.name: values[f.name] for f in form.fields if f.name in values}
                    self._say("Sent.", "green")
                    return UIResult("accept", content)
                self._say("Some required answers are missing.", "red")
                for f in missing:
                    await self._field(f, values, None)
            else:
                await self._field(form.fields[choice], values, None)

    async def _field(self, f: Field, values: MutableMapping[str, Any], error: str | None) -> None:
        """Ask one field until it has an acceptable answer (or stays empty, if optional)."""
        label = plain(f.title or f.name)
        self.console.print()
        head = Text(label, style="bold")
        head.append(" · required" if f.required else " · optional", style="dim")
        head.append(f" · {_hint(f)}", style="dim")
        self.console.print(head)
        if f.description:
            self.console.print(Text("  " + plain(f.description), style="italic"))
        if error:
            self._say(f"  Refused last time: {plain(error)}", "red")
        self._options(f, values.get(f.name))
        while True:
            ask = label + (" (y/n)" if f.kind == "boolean" else "")
            if f.name in values:
                ask += f" [{_cut(_shown(f, values[f.name], numbered=True), MAX_VALUE_CHARS)}]"
            line = await self._ask(ask + ": ")
            if line == ":help":
                self._say(KEYS_HELP, "dim")
                self._say(_MORE_KEYS, "dim")
                continue
            if line == "":
                if f.name in values or not f.required:
                    return
                self._say("  An answer is needed here (or :decline, :cancel).", "red")
                continue
            if line == ":clear":
                if f.required:
                    self._say("  This field is required; it cannot be left empty.", "red")
                    continue
                values.pop(f.name, None)
                return
            if line.startswith("::"):
                line = line[1:]
            elif line.startswith(":") and (line != ":none" or f.kind != "multi_select"):
                known = "not here" if line in _COMMANDS else "unknown command"
                self._say(f"  {plain(line)}: {known} (:help lists the keys).", "red")
                continue
            value, problem = _parse(f, line)
            if problem is None:
                checked = check_value(f, value)
                problem = None if checked is None else checked.detail or checked.code
            if problem is not None:
                self._say(f"  {problem}; try again.", "red")
                continue
            values[f.name] = value
            return

    def _options(self, f: Field, current: Any) -> None:
        if f.kind == "single_select":
            for i, o in enumerate(f.options, 1):
                mark = "›" if o.value == current else " "
                self.console.print(Text(f" {mark} {i}) {plain(o.title or o.value)}"))
        elif f.kind == "multi_select":
            chosen = set(current or ())
            for i, o in enumerate(f.options, 1):
                box = "[x]" if o.value in chosen else "[ ]"
                self.console.print(Text(f"  {box} {i}) {plain(o.title or o.value)}"))

    async def _review(self, form: Form, values: Mapping[str, Any]) -> int | None:
        """The review screen (F6): None to send, or the index of the field to change."""
        self.console.print()
        self._say("Review your answers", "bold")
        if not form.fields:
            self._say("  (this form has no fields)")
        width = min(max((len(plain(f.title or f.name)) for f in form.fields), default=0), 30)
        for i, f in enumerate(form.fields, 1):
            row = Text(f"  {i}) {_cut(plain(f.title or f.name), 30):<{width}}  ")
            if f.name in values:
                row.append(_cut(_shown(f, values[f.name]), MAX_VALUE_CHARS))
            else:
                row.append("(empty)" + (", required" if f.required else ""), style="dim")
            self.console.print(row)
        n = len(form.fields)
        change = f" · 1-{n} changes that answer" if n > 1 else (" · 1 changes the answer" if n else "")
        self._say(f"Enter sends{change} · :decline · :cancel", "dim")
        while True:
            line = await self._ask("Send? [send]: ")
            if line in _SEND:
                return None
            if line.isdigit() and 1 <= int(line) <= n:
                return int(line) - 1
            self._say(f"  Press Enter to send{', or type a number from 1 to ' + str(n) if n else ''}.", "red")

    # URL mode -----------------------------------------------------------------------------------

    async def _url(self, prompt: UrlPrompt) -> UIResult:
        self._header(prompt.requester, prompt.purpose, "asks you to open a web page")
        self._message(prompt.message, ())
        self._row("Page", _page(prompt))
        if prompt.display.get("raw"):
            self._row("Sent as", Text(plain(prompt.display["raw"])))
        site = prompt.display.get("registrable_domain")
        if site:
            self._row("Site", Text(plain(site), style="bold"))
        for warning in prompt.warnings:
            self._say(f"Warning: {plain(warning)}", "bold yellow")
        if prompt.verdict == "block":
            self._say("This page is blocked: it cannot be opened from here.", "bold red")
            self._say("Enter declines · :cancel cancels", "dim")
            await self._ask("Decline? [decline]: ")
            raise _Decline
        self._say("It opens in your browser; nothing is fetched before you type open.", "dim")
        self._say("Nothing opens unless you type open · :decline or Ctrl-D declines · :cancel cancels", "dim")
        while True:
            line = (await self._ask("Open this page? ")).lower()
            if line in _OPEN:
                self._say("Accepted: the page may be opened now.", "green")
                return UIResult("accept")
            if line in ("n", "no"):
                raise _Decline
            self._say("  Type open, :decline or :cancel.", "red")

    async def _waiting(self, waiting: UrlWaiting) -> WaitChoice:
        site = plain(waiting.prompt.display.get("registrable_domain") or waiting.prompt.url)
        keys = "Enter or :retry checks now · " if waiting.can_retry else ""
        keys += ":open opens the page again · :cancel or Ctrl-C gives up"
        when = ""
        if waiting.next_check_seconds is not None:
            when = f"checking again in {_number(round(waiting.next_check_seconds, 1))} s"
            if waiting.max_checks:
                when += f" (check {waiting.check} of {waiting.max_checks})"
        if waiting.reason == "retry" and waiting.check > 1:
            self._say(f"Still waiting for the page on {site}: {when}.", "dim")
        else:
            self.console.print()
            head = Text("Waiting for the page on ")
            head.append(site, style="bold")
            head.append(" (opened in your browser).")
            self.console.print(head)
            if waiting.reason == "retry":
                self._say(f"When you have finished there, the request goes on; {when}.")
            elif waiting.can_retry:
                self._say("When the server says the page is done, the request is sent again.")
            else:
                self._say("The server goes on when you have finished there.")
            self._say(keys, "dim")
        ask = "Waiting (Enter checks now): " if waiting.can_retry else "Waiting: "
        while True:
            try:
                line = (await self._read(ask)).strip().lower()
            except KeyboardInterrupt:
                line = ":cancel"
            except EOFError:
                self._say("No more input: waiting until the page is done.", "dim")
                await anyio.sleep_forever()
            if waiting.can_retry and line in _RETRY:
                self._say("Checking now.", "dim")
                return "retry"
            if line in _REOPEN:
                self._say("Opening the page again.", "dim")
                return "open"
            if line in (":cancel", "cancel"):
                self._say("Stopped waiting: the request is cancelled.", "yellow")
                return "cancel"
            if line:
                self._say(f"  {keys}.", "red")


# -- helpers ------------------------------------------------------------------------------------


def _page(prompt: UrlPrompt) -> Text:
    """The full URL, its registrable domain emphasised (U3)."""
    display, url = prompt.display, Text()
    if display.get("registrable_domain"):
        url.append(plain(display.get("scheme", "") + display.get("subdomain", "")))
        url.append(plain(display["registrable_domain"]), style="bold underline")
        url.append(plain(display.get("rest", "")))
    else:
        url.append(plain(prompt.url))
    return url


def _name(requester: Requester) -> str:
    # A 2026-07-28 server need not introduce itself; "where" then identifies it.
    return plain(requester.name) or "(unnamed server)"


def _purpose(purpose: Purpose) -> str:
    if purpose.method is None and purpose.target is None:
        return "not known: the server asked outside any request of yours"
    verb = _VERBS.get(purpose.method or "", purpose.method or "request")
    text = f"{verb} {purpose.target}" if purpose.target else verb
    if purpose.arguments:
        try:
            args = json.dumps(dict(purpose.arguments), ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            args = str(dict(purpose.arguments))
        text += " " + _cut(args, MAX_ARGUMENTS_CHARS)
    return plain(text)


def _number(x: int | float) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def _hint(f: Field) -> str:
    if f.kind == "string":
        parts = [_HINTS[f.format] if f.format else "text"]
        if f.min_length is not None and f.max_length is not None:
            parts.append(f"{f.min_length} to {f.max_length} characters")
        elif f.min_length is not None:
            parts.append(f"at least {f.min_length} characters")
        elif f.max_length is not None:
            parts.append(f"at most {f.max_length} characters")
        return ", ".join(parts)
    if f.kind in ("number", "integer"):
        what = "a whole number" if f.kind == "integer" else "a number"
        if f.minimum is not None and f.maximum is not None:
            return f"{what} from {_number(f.minimum)} to {_number(f.maximum)}"
        if f.minimum is not None:
            return f"{what}, at least {_number(f.minimum)}"
        if f.maximum is not None:
            return f"{what}, at most {_number(f.maximum)}"
        return what
    if f.kind == "boolean":
        return "yes or no"
    if f.kind == "single_select":
        return "choose one by number"
    low, high = f.min_items, f.max_items
    bounds = ""
    if low is not None and high is not None:
        bounds = f" ({low} to {high})"
    elif low is not None:
        bounds = f" (at least {low})"
    elif high is not None:
        bounds = f" (at most {high})"
    return f"choose any{bounds} by number, e.g. 1,3 (:none for none)"


def _shown(f: Field, value: Any, numbered: bool = False) -> str:
    """A value as the person reads it: titles for options, yes/no for booleans."""
    if f.kind == "boolean":
        return "yes" if value else "no"
    if f.kind in ("number", "integer") and isinstance(value, int | float):
        return _number(value)
    if f.kind in ("single_select", "multi_select"):
        picked = list(value) if f.kind == "multi_select" and isinstance(value, list | tuple) else [value]
        if numbered:
            index = {o.value: str(i) for i, o in enumerate(f.options, 1)}
            return ",".join(index.get(v, plain(str(v))) for v in picked) or "none"
        titles = {o.value: o.title or o.value for o in f.options}
        return ", ".join(plain(titles.get(v, str(v))) for v in picked) or "none"
    return plain(str(value))


def _parse(f: Field, line: str) -> tuple[Any, str | None]:
    """(value, None) or (None, why the line is not an answer to `f`)."""
    if f.kind == "string":
        return line, None
    if f.kind in ("number", "integer"):
        if _INTEGER_RE.fullmatch(line):
            return int(line), None
        try:
            number = float(line)
        except ValueError:
            return None, "not a number"
        return (number, None) if math.isfinite(number) else (None, "not a finite number")
    if f.kind == "boolean":
        word = line.lower()
        if word in _YES:
            return True, None
        if word in _NO:
            return False, None
        return None, "answer y or n"
    if f.kind == "single_select":
        return _option(f, line)
    if line == ":none":
        return [], None
    picked: list[str] = []
    for token in re.split(r"[,\s]+", line):
        if token:
            value, problem = _option(f, token)
            if problem is not None:
                return None, problem
            if value not in picked:
                picked.append(value)
    return picked, None


def _option(f: Field, token: str) -> tuple[Any, str | None]:
    """An option by its number or its exact value."""
    if token.isdigit():
        i = int(token)
        if 1 <= i <= len(f.options):
            return f.options[i - 1].value, None
        return None, f"{token} is not a number from 1 to {len(f.options)}"
    if token in f.option_values:
        return token, None
    return None, f"{plain(_cut(token, 40))} is not one of the options"

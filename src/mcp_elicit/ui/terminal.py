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

from collections.abc import Awaitable, Iterable, Mapping, MutableMapping
from typing import Any, Final

import anyio
import anyio.to_thread
from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from mcp_elicit.client.guardrails import APPROVAL_TAIL
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
from mcp_elicit.core.forms import MISSING, Field, Form
from mcp_elicit.core.redact import redact_where
from mcp_elicit.ui.terminal_fields import cut, hint, number, parse, shown
from mcp_elicit.ui.terminal_input import (
    CTRL_C,
    CTRL_D,
    ESC,
    LineReader,
    injected_input,
    plain,
    stream_input,
    terminal_input,
)
from mcp_elicit.ui.wording import purpose_text

__all__ = [
    "CTRL_C",
    "CTRL_D",
    "ESC",
    "KEYS_HELP",
    "MAX_VALUE_CHARS",
    "LineReader",
    "TerminalUI",
    "injected_input",
    "plain",
    "stream_input",
    "terminal_input",
]

# Characters of a tool call's arguments shown in the "For" line. The arguments are the person's
# own, but a long JSON blob would push the server's identity off the screen.

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
_SEND: Final = frozenset({"", ":send", "send", "s"})
_OPEN: Final = frozenset({"open", "o", "y", "yes"})
_RETRY: Final = frozenset({"", ":retry", "retry", "r"})
_REOPEN: Final = frozenset({":open", "open", "o"})


class _Decline(Exception):
    pass


class _Cancel(Exception):
    pass


# -- the UI -------------------------------------------------------------------------------------


class TerminalUI:
    """Asks forms and URL hand-offs in a terminal; implements `mcp_elicit.client.ui_protocol.UserInterface`.

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
        self._row("Where", Text(plain(redact_where(requester.where)), style="bold"))
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

    async def _approval(self, prompt: FormPrompt) -> UIResult:
        """The policy's ask-first approval: allow or refuse; nothing of the person's is sent."""
        self._header(prompt.requester, prompt.purpose, "asks for your approval")
        self._message(prompt.message.split(APPROVAL_TAIL, 1)[0], prompt.warnings)
        while True:
            line = (await self._ask("Allow? [allow]: ")).strip().lower()
            if line in ("", "y", "yes", "a", "allow"):
                self._say("Allowed: the server's request follows.", "green")
                return UIResult("accept", {})
            if line in ("n", "no", ":decline", "refuse"):
                raise _Decline
            if line == ":cancel":
                raise _Cancel
            self._say("  Enter or y allows · n or :decline refuses · :cancel dismisses", "red")

    async def _form(self, prompt: FormPrompt) -> UIResult:
        form = prompt.form
        if prompt.approval and not form.fields:
            return await self._approval(prompt)
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
        head.append(f" · {hint(f)}", style="dim")
        self.console.print(head)
        if f.description:
            self.console.print(Text("  " + plain(f.description), style="italic"))
        if error:
            self._say(f"  Refused last time: {plain(error)}", "red")
        self._options(f, values.get(f.name))
        while True:
            ask = label + (" (y/n)" if f.kind == "boolean" else "")
            if f.name in values:
                ask += f" [{cut(shown(f, values[f.name], numbered=True), MAX_VALUE_CHARS)}]"
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
                if f.default is not MISSING:
                    # Left out, the field takes the form's default: say what will be sent.
                    sent = cut(shown(f, f.default), MAX_VALUE_CHARS)
                    self._say(f"  Cleared: the server's default, {sent}, applies to an empty answer.", "dim")
                return
            if line.startswith("::"):
                line = line[1:]
            elif line.startswith(":") and (line != ":none" or f.kind != "multi_select" or f.min_items):
                known = "not here" if line in _COMMANDS else "unknown command"
                self._say(f"  {plain(line)}: {known} (:help lists the keys).", "red")
                continue
            value, problem = parse(f, line, values.get(f.name))
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
            row = Text(f"  {i}) {cut(plain(f.title or f.name), 30):<{width}}  ")
            if f.name in values:
                row.append(cut(shown(f, values[f.name]), MAX_VALUE_CHARS))
            elif f.default is not MISSING:
                row.append(
                    f"(empty: the default {cut(shown(f, f.default), MAX_VALUE_CHARS)} applies)", style="dim"
                )
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
        if prompt.headless:  # no browser here: the link is shown to open on another device
            self._say("Its link is shown here to open in a browser; nothing is fetched from here.", "dim")
        else:
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
            when = f"checking again in {number(round(waiting.next_check_seconds, 1))} s"
            if waiting.max_checks:
                when += f" (check {waiting.check} of {waiting.max_checks})"
        if waiting.reason == "retry" and waiting.check > 1:
            self._say(f"Still waiting for the page on {site}: {when}.", "dim")
        else:
            self.console.print()
            head = Text("Waiting for the page on ")
            head.append(site, style="bold")
            head.append(" in your browser.")  # opened there, or shown as a link to open (headless)
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
    return plain(purpose_text(purpose))

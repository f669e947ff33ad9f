"""Where the terminal UI reads its lines from, and `plain()`, which makes server text safe to print.

A `LineReader` is an async callable that shows a prompt and returns one line, or raises `EOFError`
(Ctrl-D) or `KeyboardInterrupt` (Ctrl-C, Esc): `terminal_input()` (prompt_toolkit on a terminal,
plain lines otherwise), `stream_input()` and `injected_input()` (tests and automation). Re-exported
by `mcp_elicit.ui.terminal`.
"""

from __future__ import annotations

import sys
import threading
import unicodedata
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Future
from typing import Final, TextIO

import anyio
import anyio.to_thread
from rich.console import Console
from rich.text import Text

__all__ = [
    "CTRL_C",
    "CTRL_D",
    "ESC",
    "LineReader",
    "injected_input",
    "plain",
    "stream_input",
    "terminal_input",
]

LineReader = Callable[[str], Awaitable[str]]
"""Shows `prompt`, returns the line typed (no newline); EOFError = Ctrl-D, KeyboardInterrupt = Ctrl-C/Esc."""

# Sentinels for `injected_input`: a line equal to one of these acts like that key.
CTRL_C: Final = "\x03"
CTRL_D: Final = "\x04"
ESC: Final = "\x1b"

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

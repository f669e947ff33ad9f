"""Drive a program through a real pseudo-terminal and read what it shows, escape sequences stripped."""

from __future__ import annotations

import os
import re
import time

import pexpect

# Every wait on a pty is bounded by this; a program starting a server and the SDK handshake on a
# busy 2-core machine takes a few seconds, never thirty.
PTY_BOUND_SECONDS = 30.0

# CSI (colours, cursor moves), OSC (titles, hyperlinks), charset and keypad selections, carriage returns.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78MDEHc]|\r"
)


def strip_ansi(raw: str) -> str:
    return _ANSI.sub("", raw)


class Terminal:
    """A program in a pty of `rows` x `cols`; `raw` is everything it wrote, `screen()` the same as text."""

    def __init__(self, argv: list[str], *, cols: int = 100, rows: int = 50, cwd: str | None = None) -> None:
        env = dict(os.environ)
        # prompt_toolkit asks the terminal where the cursor is; pexpect never answers, so skip the question.
        env |= {"TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1", "PYTHONIOENCODING": "utf-8"}
        env.pop("COLUMNS", None)
        env.pop("LINES", None)
        self.child = pexpect.spawn(
            argv[0],
            argv[1:],
            dimensions=(rows, cols),
            encoding="utf-8",
            codec_errors="replace",
            env=env,
            cwd=cwd,
            timeout=PTY_BOUND_SECONDS,
        )
        self.raw = ""
        self._seen = 0
        self._eof = False

    def screen(self) -> str:
        return strip_ansi(self.raw)

    def _read(self, timeout: float) -> None:
        try:
            self.raw += self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            self._eof = True

    def wait_for(self, text: str, timeout: float = PTY_BOUND_SECONDS) -> None:
        """Wait until `text` appears after the previous match (bounded); fail showing the screen."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            found = shown.find(text, self._seen)
            if found >= 0:
                self._seen = found + len(text)
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._eof:
                why = "the program ended" if self._eof else f"{timeout}s passed"
                raise AssertionError(f"{text!r} did not appear ({why}); screen tail:\n{shown[-3000:]}")
            self._read(min(remaining, 1.0))

    def send(self, keys: str) -> None:
        self.child.send(keys)

    def type_line(self, text: str) -> None:
        self.child.send(text + "\r")

    def exit_code(self, timeout: float = PTY_BOUND_SECONDS) -> int | None:
        """Read to the end (bounded) and return the exit status."""
        deadline = time.monotonic() + timeout
        while not self._eof:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"the program did not end; screen tail:\n{self.screen()[-3000:]}")
            self._read(min(remaining, 1.0))
        self.child.close()
        return self.child.exitstatus

    def close(self) -> None:
        if self.child.isalive():
            self.child.close(force=True)

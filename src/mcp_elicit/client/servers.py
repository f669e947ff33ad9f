"""Naming a server: spec strings with `VAR=value` prefixes, HTTP headers, and `mcpServers` files.

A spec is an `http(s)://` URL (streamable HTTP) or a command line for a stdio server, split like a
shell would (`shlex.split`) and never run through one. Leading `NAME=value` words are environment
variables for the server, as a shell would read them: `GITHUB_TOKEN=x npx some-server`.

People keep their servers in JSON files in the format Claude Desktop, Cursor and VS Code use:

```json
{"mcpServers": {"files": {"command": "npx", "args": ["-y", "server"], "env": {"ROOT": "/tmp"}},
                "hosted": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}}}}
```

(VS Code's `servers` key is read the same way.) `servers_in(path)` reads such a file;
`server_from_file(path, name)` picks one entry as a `ServerSpec`.
"""

from __future__ import annotations

import json
import re
import shlex
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

import httpx2

from mcp_elicit.core.text import clean_text
from mcp_elicit.errors import ConfigError

__all__ = [
    "MAX_SERVERS_FILE_BYTES",
    "MAX_SHOWN_COMMAND_CHARS",
    "ServerSpec",
    "StartFailure",
    "parse_header",
    "parse_server_spec",
    "process_end",
    "server_from_file",
    "servers_in",
    "signal_name",
    "start_failure",
    "unreachable",
]

# Bytes read from an mcpServers file: a configuration, not a data set.
MAX_SERVERS_FILE_BYTES: Final = 1_000_000
MAX_SHOWN_COMMAND_CHARS: Final = 300  # characters of a command named in a StartFailure

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """Where a server runs: a streamable HTTP `url` (with `headers`), or the `argv` of a stdio
    server (with `env` added to the inherited environment)."""

    url: str | None = None
    argv: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def kind(self) -> Literal["http", "stdio"]:
        return "http" if self.url is not None else "stdio"

    @property
    def where(self) -> str:
        """For display: the URL or the command line; never the values of `env` or `headers`."""
        return self.url if self.url is not None else shlex.join(self.argv)

    def with_headers(self, headers: Mapping[str, str]) -> ServerSpec:
        if self.url is None and headers:
            raise ConfigError("header", "HTTP headers need an http(s):// server, not a command line")
        return ServerSpec(self.url, self.argv, self.env, (*self.headers, *headers.items()))


@dataclass(frozen=True, slots=True)
class StartFailure:
    """A stdio server's `command` the operating system would not start: `reason` is "not_found",
    "not_executable" or "failed"; `error` the OSError; `text` one line, the gateway's wording:
    "cannot start the server: command not found: mcp-elicit"."""

    command: str
    reason: Literal["not_found", "not_executable", "failed"]
    error: OSError

    @property
    def text(self) -> str:
        shown = clean_text(self.command, limit=MAX_SHOWN_COMMAND_CHARS, multiline=False, defang=False)
        if self.reason == "not_found":
            said = f"command not found: {shown}"
        elif self.reason == "not_executable":
            said = f"command not executable: {shown}, permission denied"
        else:
            words = self.error.strerror or str(self.error) or type(self.error).__name__
            words = clean_text(words, limit=MAX_SHOWN_COMMAND_CHARS, multiline=False)
            said = f"could not start {shown}: {words}"
        return f"cannot start the server: {said}"


def start_failure(exc: BaseException, command: str) -> StartFailure | None:
    """A `StartFailure` when `exc` (or an error inside it: groups, causes) is the operating system
    refusing to start `command`, the first word of a stdio server's command line; else None."""
    todo, seen = [exc], set()
    while command and todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.filename is not None and str(current.filename) == command:
            if isinstance(current, FileNotFoundError):
                return StartFailure(command, "not_found", current)
            if isinstance(current, PermissionError):
                return StartFailure(command, "not_executable", current)
            return StartFailure(command, "failed", current)
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def unreachable(exc: BaseException) -> bool:
    """Whether `exc` (or an error inside it: groups, causes) is the HTTP client failing to reach a
    server at all: nothing listens there, the name does not resolve, the connection or TLS fails."""
    todo, seen = [exc], set()
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, httpx2.ConnectError | httpx2.ConnectTimeout):
            return True
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return False


def process_end(status: int | None) -> str:
    """How a stdio server's process ended, once connected: "its process exited with status 3",
    "its process was killed by signal 9 (SIGKILL)", or, its status not known, "its connection
    closed"."""
    if status is None:
        return "its connection closed"
    if status < 0:
        return f"its process was killed by signal {signal_name(-status)}"
    return f"its process exited with status {status}"


def signal_name(number: int) -> str:
    """A signal's number with its name, "9 (SIGKILL)", or the number alone when it has none."""
    try:
        return f"{number} ({signal.Signals(number).name})"
    except ValueError:
        return str(number)


def parse_server_spec(spec: str) -> ServerSpec:
    """A URL (`http://`, `https://`) or a command line, split with `shlex.split` (no shell)."""
    if spec.startswith(("http://", "https://")):
        return ServerSpec(url=spec)
    words = shlex.split(spec)
    env: list[tuple[str, str]] = []
    while words and _ASSIGNMENT.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env.append((name, value))
    if not words:
        raise ConfigError("server", "the server spec is empty: give a URL or a command line")
    return ServerSpec(argv=tuple(words), env=tuple(env))


def parse_header(text: str) -> tuple[str, str]:
    """`Name: value` (as curl takes it) as a pair; a clear error otherwise."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
        raise ConfigError("header", f"expected 'Name: value', got {text[:80]!r}")
    return name.strip(), value.strip()


def servers_in(path: str | Path) -> dict[str, ServerSpec]:
    """Every server of an `mcpServers` (or VS Code `servers`) JSON file, by name."""
    file = Path(path)
    try:
        with file.open("rb") as f:
            raw = f.read(MAX_SERVERS_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError("config", f"cannot read {file}: {exc.strerror}") from None
    if len(raw) > MAX_SERVERS_FILE_BYTES:
        raise ConfigError("config", f"{file} is over {MAX_SERVERS_FILE_BYTES} bytes")
    try:
        document = json.loads(raw)
    except ValueError as exc:
        raise ConfigError("config", f"{file} is not JSON: {exc}") from None
    table = document.get("mcpServers", document.get("servers")) if isinstance(document, dict) else None
    if not isinstance(table, dict):
        raise ConfigError("config", f"{file} has no mcpServers object")
    return {str(name): _entry(str(name), entry) for name, entry in table.items()}


def server_from_file(path: str | Path, name: str) -> ServerSpec:
    servers = servers_in(path)
    if name not in servers:
        known = ", ".join(sorted(servers)) or "none"
        raise ConfigError("server", f"no server named {name!r} in {path} (it has: {known})")
    return servers[name]


def _strings(name: str, key: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError("config", f"server {name!r}: {key} must be an object of strings")
    return {str(k): v for k, v in value.items()}


def _entry(name: str, entry: Any) -> ServerSpec:
    if not isinstance(entry, dict):
        raise ConfigError("config", f"server {name!r} must be an object")
    url = entry.get("url")
    if isinstance(url, str):
        if not url.startswith(("http://", "https://")):
            raise ConfigError("config", f"server {name!r}: url must be http(s)://")
        return ServerSpec(url=url, headers=tuple(_strings(name, "headers", entry.get("headers")).items()))
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not command:
        raise ConfigError("config", f"server {name!r} needs a command or a url")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError("config", f"server {name!r}: args must be a list of strings")
    env = _strings(name, "env", entry.get("env"))
    return ServerSpec(argv=(command, *args), env=tuple(env.items()))

"""`mcp-elicit connect`: an interactive session with one server; its elicitations go through the terminal UI.

Commands at the ``mcp>`` prompt: ``tools`` lists the tools with their descriptions; ``call NAME``
asks for each argument from the tool's input schema (or ``call NAME {"json": "object"}`` passes
them at once), calls the tool and prints the result; ``log`` shows what the server wrote on its
stderr; ``help``; ``quit`` (or Ctrl-D) leaves. Ctrl-C while a call is running abandons the call;
Ctrl-C at the prompt only clears the line.

A server is named by a SPEC: an ``http://`` or ``https://`` URL (streamable HTTP), or a command
line for a stdio server, split like a shell would (`shlex.split`) and never run through one. A
stdio server's stderr goes to a temporary file, never straight to the terminal (it could carry
escape sequences); ``log`` and connection errors show its tail through `plain()`.

Everything the server sends is printed through `plain()` as rich `Text`: tool names, descriptions
and results included, not only forms.

URL mode (a server asks you to open a page, `client/url.py`) is on when this machine can open a
browser (`client/opener.py`: `MCP_ELICIT_BROWSER`, or the desktop's opener) unless turned off; the
consent and waiting screens are the terminal UI's.
"""

from __future__ import annotations

import json
import math
import signal
import tempfile
import typing
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, TextIO

import anyio
from rich.console import Console
from rich.text import Text

from mcp_elicit.cli.call import STREAM_ENDED
from mcp_elicit.cli.options import MODERN_REFUSED_HINT
from mcp_elicit.client import ElicitClient
from mcp_elicit.client.connection import ProtocolChoice
from mcp_elicit.client.oauth import OAuthLogin
from mcp_elicit.client.opener import NO_BROWSER_REASON, ShowLink, system_opener
from mcp_elicit.client.sdk import (
    CallToolResult,
    RoundsExceeded,
    SdkError,
    TextContent,
    Tool,
    discover_identity,
    stream_ended,
    unfit_answer,
)
from mcp_elicit.client.servers import ServerSpec, start_failure
from mcp_elicit.client.ui_protocol import Requester
from mcp_elicit.client.url import UrlMode
from mcp_elicit.config import Config
from mcp_elicit.core.redact import redact_where
from mcp_elicit.core.revisions import LATEST
from mcp_elicit.errors import UrlHandoffStopped
from mcp_elicit.ui.terminal import LineReader, TerminalUI, plain, terminal_input

__all__ = [
    "HELP",
    "MAX_RESULT_CHARS",
    "MAX_STDERR_TAIL_CHARS",
    "MAX_TOOL_DESCRIPTION_CHARS",
    "ConnectSession",
    "Opener",
    "SessionClient",
    "open_pipeline_client",
]

# Seconds `connect` waits for a server to answer the handshake (`--timeout`): a command that is
# not an MCP server (`sleep 100`) must end with a message, not hang.
DEFAULT_CONNECT_TIMEOUT_SECONDS: Final = 30.0

# Characters of a tool description in the `tools` list: one line per tool keeps the list scannable.
MAX_TOOL_DESCRIPTION_CHARS: Final = 200

# Characters of a tool result printed; a result is the server's text and could flood the terminal.
MAX_RESULT_CHARS: Final = 20_000

# Characters of the server's stderr shown by `log` and after a failed connection.
MAX_STDERR_TAIL_CHARS: Final = 4_000

HELP: Final = """Commands:
  tools                 list the server's tools
  call NAME             call a tool; asks for each argument
  call NAME {JSON}      call a tool with these arguments
  log                   what the server wrote on stderr (stdio servers)
  help                  this list
  quit                  leave (or Ctrl-D)
In a form: Enter keeps the [value], :decline or Ctrl-D declines,
:cancel, Ctrl-C or Esc cancels. Ctrl-C while a call runs abandons the call.
A web page (URL mode): type open to open it in your browser; while
waiting, Enter checks again, :open opens it again, :cancel gives up."""


class SessionClient(typing.Protocol):
    """What the session needs from a connection; `mcp_elicit.client.ElicitClient` has this shape."""

    @property
    def server(self) -> Requester: ...

    @property
    def protocol_version(self) -> str: ...

    async def list_tools(self) -> list[Tool]: ...

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> CallToolResult: ...


Opener = Callable[[Any, TerminalUI, ProtocolChoice, TextIO], AbstractAsyncContextManager[SessionClient]]
"""Opens a connection to SPEC whose questions go to the UI; a stdio server's stderr goes to the file.
Raises ValueError for an unusable SPEC."""


def open_pipeline_client(
    spec: str | ServerSpec,
    ui: TerminalUI,
    protocol: ProtocolChoice,
    errlog: TextIO,
    *,
    config: Config | None = None,
    audit: bool = True,
    oauth: OAuthLogin | None = None,
) -> ElicitClient:
    """The client kit's connection: every question goes through the pipeline, then this UI.

    With a `config` (what `mcp-elicit connect` reads), its policy guards the questions ("ask first"
    asks the person in this terminal) and, unless `audit=False`, its audit sink records them.
    `oauth` signs in to an HTTP server that requires it (`client/oauth.py`).
    """
    if config is None:
        return ElicitClient(spec, ui=ui, protocol=protocol, errlog=errlog, oauth=oauth)
    return ElicitClient(
        spec,
        ui=ui,
        protocol=protocol,
        errlog=errlog,
        oauth=oauth,
        policy=config.policy,
        approval="form",
        audit=config.audit if audit else None,
    )


class ConnectSession:
    """One interactive session: connect, then read commands until quit or end of input.

    `read_line` and `console` are injectable (tests); by default both use the real terminal. The
    same reader serves the session prompt and the forms, so a test can script a whole session.
    `opener` makes the connection (default: the client kit's `ElicitClient` with the pipeline).
    `url_mode`: None turns URL mode on (headless when this machine cannot open a browser), False off; a
    `UrlMode` brings its own opener (tests). It applies to `ElicitClient` connections.
    """

    def __init__(
        self,
        spec: str | ServerSpec,
        *,
        protocol: ProtocolChoice = "auto",
        console: Console | None = None,
        read_line: LineReader | None = None,
        opener: Opener | None = None,
        url_mode: bool | UrlMode | None = None,
        timeout: float = DEFAULT_CONNECT_TIMEOUT_SECONDS,
    ) -> None:
        self.spec = spec
        self.where = spec.where if isinstance(spec, ServerSpec) else spec
        self.timeout = timeout
        self.protocol: ProtocolChoice = protocol
        self.console = console or Console(markup=False, emoji=False, highlight=False)
        self.read = read_line or terminal_input(self.console)
        self.ui = TerminalUI(self.console, self.read)
        self.opener: Opener = opener or open_pipeline_client
        self._call_scope: anyio.CancelScope | None = None
        self._errlog: TextIO | None = None  # the stdio server's stderr, while connected
        self.url_mode = url_mode
        self._noted = False  # the note on a server that refused server/discover was said
        self._stdio = True  # a stdio server, whose stderr `log` and a failure show

    def _say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style))

    async def run(self) -> int:
        """0 when the person left; 1 when the spec is unusable or the connection failed or broke."""
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            self._errlog = errlog
            try:
                connection = self.opener(self.spec, self.ui, self.protocol, errlog)
            except ValueError as exc:
                self._say(f"Cannot use the server spec: {plain(str(exc))}", "red")
                return 1
            if isinstance(connection, ElicitClient):
                self._url_mode(connection)
                self._stdio = bool(connection.stdio_command)  # an HTTP server has no stderr here
            code = 1
            # The handshake is bounded (--timeout); the session, once connected, is not.
            bound = anyio.CancelScope(deadline=anyio.current_time() + self.timeout)
            try:
                if isinstance(connection, ElicitClient):
                    await connection.sign_in()  # before the bound: a person may be signing in
                with bound:
                    async with connection as client, anyio.create_task_group() as tg:
                        if isinstance(client, ElicitClient):
                            await _discover_identity(client)
                        bound.deadline = math.inf
                        tg.start_soon(self._abandon_calls_on_interrupt, client)
                        code = await self._session(client)
                        tg.cancel_scope.cancel()
                if bound.cancelled_caught:
                    raise TimeoutError
            except TimeoutError:
                self._say(
                    f"{plain(self.where)} did not answer within {self.timeout:g} s (--timeout); "
                    "is it an MCP server?",
                    "red",
                )
                if self._stdio:  # an HTTP server's stderr is not here
                    self._show_log()
                return 1
            except Exception as exc:  # the connection failed or broke: say so, never a traceback
                command = connection.stdio_command if isinstance(connection, ElicitClient) else ""
                not_started = start_failure(exc, command)
                if not_started is not None:  # no process, so no stderr to show
                    self._say(f"Connection to {plain(self.where)} failed: {plain(not_started.text)}", "red")
                    return 1
                self._say(
                    f"Connection to {plain(self.where)} failed or broke: {plain(_describe(exc))}", "red"
                )
                if isinstance(connection, ElicitClient):
                    self._note_discover_refused(connection)
                if self._stdio:  # an HTTP server's stderr is not here
                    self._show_log()
                return 1
            return code

    def _note_discover_refused(self, client: ElicitClient) -> None:
        """Once per run: a connection pinned to 2026-07-28 whose server refused `server/discover`."""
        if client.discover_refused is not None and not self._noted:
            self._noted = True
            self._say(f"Note: {MODERN_REFUSED_HINT}.", "yellow")

    def _url_mode(self, client: ElicitClient) -> None:
        """Add URL mode to the connection unless turned off: headless when no browser can open."""
        mode = self.url_mode
        if mode is False:
            client.url_off_reason = "turned off (--no-url)"
        if mode is False or client.url is not None:
            return
        if not isinstance(mode, UrlMode):
            opener = system_opener()
            if opener is None:
                # Over SSH or in a container: show the link for the person to open elsewhere.
                opener = ShowLink(self._show_link)
                self._say(f"URL mode is headless: {NO_BROWSER_REASON}.", "dim")
            mode = UrlMode(opener=opener)
        client.enable_url_mode(mode)

    def _show_link(self, url: str) -> None:
        self._say("Open this link in a browser (on any device you trust):", "bold")
        self.console.print(Text(plain(url)), soft_wrap=True)
        self._say("This client waits here until the page is done; it never sees what you type there.", "dim")

    async def _abandon_calls_on_interrupt(self, client: SessionClient) -> None:
        # The line editor reads Ctrl-C as a key; a SIGINT only arrives while a call runs. A question
        # open then (in the page, or a web page waited on) is the person's cancel, not a timeout.
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                if self._call_scope is not None:
                    if isinstance(client, ElicitClient):
                        client.pipeline.interrupt()
                    self._call_scope.cancel()

    async def _session(self, client: SessionClient) -> int:
        server = client.server
        who = plain((server.name or "(unnamed server)") + (f" {server.version}" if server.version else ""))
        self._say(f"Connected to {who} at {plain(redact_where(server.where))}", "bold")
        why = f" ({client.era_reason})" if isinstance(client, ElicitClient) and client.era_reason else ""
        self._say(
            f"Protocol {plain(client.protocol_version)}{why}. Type help for commands, quit to leave.", "dim"
        )
        if isinstance(client, ElicitClient):
            self._say(url_mode_line(client), "dim")
            self._note_discover_refused(client)
        while True:
            try:
                line = (await self.read("mcp> ")).strip()
            except EOFError:
                return 0
            except KeyboardInterrupt:
                self._say("(type quit or press Ctrl-D to leave)", "dim")
                continue
            command, _, rest = line.partition(" ")
            if command in ("quit", "exit"):
                return 0
            if command == "":
                continue
            if command in ("help", "?"):
                self._say(HELP)
            elif command == "tools":
                await self._list_tools(client)
            elif command == "call":
                await self._call(client, rest.strip())
            elif command == "log":
                self._show_log()
            else:
                self._say(f"Unknown command {plain(command)!r}; type help.", "red")

    async def _tools(self, client: SessionClient) -> list[Tool] | None:
        try:
            return await client.list_tools()
        except SdkError as exc:
            self._say(f"The server refused to list its tools: {plain(_describe(exc))}", "red")
            return None

    async def _list_tools(self, client: SessionClient) -> None:
        tools = await self._tools(client)
        if tools is None:
            return
        if not tools:
            self._say("The server has no tools.")
        for tool in tools:
            self.console.print(Text("  " + plain(tool.name), style="bold"))
            first = (tool.description or "").strip().splitlines()[:1]
            if first:
                self.console.print(Text("      " + plain(first[0])[:MAX_TOOL_DESCRIPTION_CHARS]))

    async def _call(self, client: SessionClient, rest: str) -> None:
        name, _, raw_args = rest.partition(" ")
        if not name:
            self._say("Usage: call NAME [JSON arguments]", "red")
            return
        arguments: dict[str, Any] | None
        if raw_args.strip():
            try:
                parsed = json.loads(raw_args)
            except ValueError as exc:
                self._say(f"The arguments are not JSON: {exc}", "red")
                return
            if not isinstance(parsed, dict):
                self._say("The arguments must be a JSON object.", "red")
                return
            arguments = parsed
        else:
            tools = await self._tools(client)
            tool = next((x for x in tools or () if x.name == name), None)
            if tool is None:
                if tools is not None:
                    self._say(f"No tool named {plain(name)!r}; type tools to list them.", "red")
                return
            arguments = await self._ask_arguments(tool)
            if arguments is None:
                self._say("Call abandoned.", "yellow")
                return
        self._say(f"Calling {plain(name)}… (Ctrl-C abandons the call)", "dim")
        try:
            with anyio.CancelScope() as scope:
                self._call_scope = scope
                result = await client.call_tool(name, arguments)
        except SdkError as exc:
            self._say(f"The call failed: {plain(_describe(exc))}", "red")
            return
        except (UrlHandoffStopped, RoundsExceeded) as exc:
            self._say(f"The call stopped: {plain(_describe(exc))}", "red")
            return
        finally:
            self._call_scope = None
        if scope.cancelled_caught:
            self._say("Call abandoned (Ctrl-C).", "yellow")
            return
        self._show_result(result)

    async def _ask_arguments(self, tool: Tool) -> dict[str, Any] | None:
        """Each argument of the tool's input schema in turn; None when the person gives up."""
        schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        arguments: dict[str, Any] = {}
        if not isinstance(properties, dict):
            return arguments
        if properties:
            self._say(f"Arguments of {plain(tool.name)} (:cancel or Ctrl-C gives up)", "dim")
        for name, prop in properties.items():
            prop = prop if isinstance(prop, dict) else {}
            kind: str = prop["type"] if isinstance(prop.get("type"), str) else "json"
            need = "required" if name in required else "optional, Enter skips"
            if isinstance(prop.get("description"), str):
                self._say(f"  {plain(prop['description'])}", "italic")
            while True:
                try:
                    line = (await self.read(f"{plain(str(name))} ({plain(kind)}, {need}): ")).strip()
                except (KeyboardInterrupt, EOFError):
                    return None
                if line == ":cancel":
                    return None
                if line == "":
                    if name in required:
                        self._say("  This argument is required.", "red")
                        continue
                    break
                value, problem = _argument(kind, line)
                if problem is None:
                    arguments[name] = value
                    break
                self._say(f"  {problem}; try again.", "red")
        return arguments

    def _show_result(self, result: CallToolResult) -> None:
        texts: list[str] = []
        for block in result.content:
            if isinstance(block, TextContent):
                texts.append(block.text)
            else:
                texts.append(f"[{block.type} content]")
        if not texts and result.structured_content is not None:
            texts.append(json.dumps(result.structured_content, indent=2, ensure_ascii=False))
        body = "\n".join(texts)
        if len(body) > MAX_RESULT_CHARS:
            body = body[:MAX_RESULT_CHARS] + f"\n… ({len(body) - MAX_RESULT_CHARS} more characters not shown)"
        if result.is_error:
            self._say("The tool reported an error:", "bold red")
        else:
            self._say("Result:", "bold green")
        self.console.print(Text(plain(body)))

    def _show_log(self) -> None:
        if not self._stdio:
            self._say("(not a stdio server: what it logs stays where it runs)", "dim")
            return
        if self._errlog is None or self._errlog.closed:
            return
        self._errlog.flush()
        self._errlog.seek(0)
        text = self._errlog.read()
        self._errlog.seek(0, 2)
        if not text.strip():
            self._say("(the server wrote nothing on stderr)", "dim")
            return
        self._say("The server's stderr (last lines):", "dim")
        self.console.print(Text(plain(text[-MAX_STDERR_TAIL_CHARS:])))


def url_mode_line(client: ElicitClient) -> str:
    """Which URL mode is in effect, and why, in one line (`connect` and `call` print it)."""
    mode = client.url
    if mode is None:
        return "Web pages (URL mode) are off: " + (client.url_off_reason or "not asked for") + "."
    if mode.in_page:  # the browser UI: the person clicks the link in its page
        return "Web pages are on (URL mode), " + mode.describe() + "."
    return "Web pages are on (URL mode), " + mode.describe() + "; nothing opens unless you type open."


def _argument(kind: str, line: str) -> tuple[Any, str | None]:
    """A typed tool argument from one line: strings as typed, numbers, y/n, else JSON."""
    if kind == "string":
        return line, None
    if kind == "boolean":
        if line.lower() in ("y", "yes", "true"):
            return True, None
        if line.lower() in ("n", "no", "false"):
            return False, None
        return None, "answer y or n"
    try:
        value = json.loads(line)
    except ValueError:
        return None, "not valid JSON" if kind not in ("integer", "number") else "not a number"
    if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
        return None, "not a whole number"
    if kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
        return None, "not a number"
    return value, None


async def _discover_identity(client: ElicitClient) -> None:
    """Learn who the server is when the connection adopted 2026-07-28 without a discovery
    (`--protocol modern`): the SDK then knows no name, and a question would show none."""
    sdk = client.sdk
    if sdk.server_info is None and sdk.protocol_version == LATEST:
        await discover_identity(sdk.session)


def _describe(exc: BaseException) -> str:
    """One line about an error, looking inside exception groups (anyio task groups wrap errors)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if stream_ended(exc):
        return STREAM_ENDED
    unfit = unfit_answer(exc)
    if unfit is not None:
        return unfit
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text.strip() else type(exc).__name__

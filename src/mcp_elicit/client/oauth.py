"""Signing in to an MCP server that requires OAuth: the settings, the token file and the loopback
callback. The flow itself is the SDK's (`OAuthClientProvider`, behind `client/sdk_transport.py`).

```
async with ElicitClient("https://mcp.example.com/mcp", ui=ui, oauth=OAuthLogin()) as client:
    ...
```

What happens on a server that answers 401 with the MCP authorization flow (RFC 9728 protected
resource metadata, then the authorization server's metadata, dynamic client registration,
authorization code with PKCE, then the token):

- the authorization link is checked like any URL (`core.urls.check_url`; a `block` verdict is never
  opened) and opened in the person's browser (`client/opener.py`), or, with no browser here,
  shown for the person to open elsewhere (the headless URL mode's wording);
- the browser comes back to a listener of this client on 127.0.0.1 (RFC 8252 §7.3), which accepts
  only the `state` of the request it made (anything else gets 400 and is not the answer), and stops
  after `OAUTH_CALLBACK_TIMEOUT_SECONDS`;
- tokens and the client registration are kept in a JSON file (`default_token_path()`, mode 0600),
  keyed by the server's URL, so the next run does not ask again; the SDK refreshes them.

`OAuthLogin(when="asked")` (what `mcp-elicit call` and `connect` do by default) signs in only when
the server's 401 names its `resource_metadata` (the MCP authorization spec's signal), or tokens for
it are already stored; `when="always"` (`--oauth`) signs in on any 401.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import SocketAttribute, SocketStream

from mcp_elicit.client.opener import ShowLink, UrlOpener, system_opener
from mcp_elicit.core.text import clean_text
from mcp_elicit.core.urls import MAX_URL_INPUT_LENGTH, check_url
from mcp_elicit.errors import AuthorizationFailed, ConfigError

__all__ = [
    "CALLBACK_PATH",
    "MAX_OAUTH_CALLBACK_REFUSALS",
    "MAX_OAUTH_CALLBACK_REQUEST_BYTES",
    "MAX_TOKEN_FILE_BYTES",
    "OAUTH_CALLBACK_READ_TIMEOUT_SECONDS",
    "OAUTH_CALLBACK_TIMEOUT_SECONDS",
    "TOKENS_ENV",
    "CallbackResult",
    "LoopbackCallback",
    "OAuthLogin",
    "TokenFile",
    "default_token_path",
    "link_printer",
]

# How long the client waits for the browser to come back from the authorization server: a person
# signs in (password, second factor) within minutes; past this the sign-in ends with "timeout".
OAUTH_CALLBACK_TIMEOUT_SECONDS: Final = 300.0
# One connection to the loopback listener must send its request line and headers within this.
OAUTH_CALLBACK_READ_TIMEOUT_SECONDS: Final = 10.0
# Bytes read of one request to the loopback listener (the request line and headers).
MAX_OAUTH_CALLBACK_REQUEST_BYTES: Final = 8_192
# Requests the listener refuses (a foreign `state`, another path) before it gives up the wait.
MAX_OAUTH_CALLBACK_REFUSALS: Final = 20
# Bytes read from the token file: a few records per server, not a data set.
MAX_TOKEN_FILE_BYTES: Final = 1_000_000

TOKENS_ENV: Final = "MCP_ELICIT_OAUTH_TOKENS"
CALLBACK_PATH: Final = "/callback"

_PAGE = (
    "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n"
    "Referrer-Policy: no-referrer\r\nConnection: close\r\n\r\n<!doctype html><title>mcp-elicit</title>"
    "<p>{text}</p>"
)


def default_token_path() -> Path:
    """`$MCP_ELICIT_OAUTH_TOKENS`, else `$XDG_STATE_HOME/mcp-elicit/oauth-tokens.json`, else
    `~/.local/state/mcp-elicit/oauth-tokens.json`."""
    env = os.environ.get(TOKENS_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "mcp-elicit" / "oauth-tokens.json"


def link_printer(stream: Any = None) -> Callable[[str], None]:
    """Print a checked link on its own line for the person to open elsewhere (headless mode)."""

    def show(url: str) -> None:
        out = sys.stderr if stream is None else stream
        print("Open this link in a browser (on any device you trust):", file=out)
        shown = clean_text(url, limit=MAX_URL_INPUT_LENGTH, multiline=False, defang=False)
        print(shown, file=out, flush=True)

    return show


@dataclass
class OAuthLogin:
    """How the client signs in to an HTTP server that requires OAuth.

    `when`: "always" signs in on any 401; "asked" only when the 401 names `resource_metadata` or
    tokens for the server are stored. `token_file`: where tokens are kept (default
    `default_token_path()`). `opener` opens the authorization link (default: this machine's browser;
    with none, `show_link` prints it). `say` gets one-line notices for the person (default stderr).
    """

    when: Literal["always", "asked"] = "always"
    token_file: Path | None = None
    opener: UrlOpener | None = None
    show_link: Callable[[str], None] | None = None
    say: Callable[[str], None] | None = None
    client_name: str = "mcp-elicit"
    scope: str | None = None
    callback_timeout: float = OAUTH_CALLBACK_TIMEOUT_SECONDS

    def tokens(self) -> TokenFile:
        return TokenFile(self.token_file if self.token_file is not None else default_token_path())

    def notice(self, text: str) -> None:
        if self.say is not None:
            self.say(text)
        else:
            print(f"mcp-elicit: {text}", file=sys.stderr, flush=True)

    def browser(self) -> tuple[UrlOpener, bool]:
        """The opener for the authorization link, and whether it only shows the link (headless)."""
        if self.opener is not None:
            return self.opener, bool(getattr(self.opener, "headless", False))
        found = system_opener()
        if found is not None:
            return found, False
        return ShowLink(self.show_link or link_printer()), True


class TokenFile:
    """The token file: one JSON object, keyed by the server's URL, written with mode 0600.

    An entry holds the SDK's `tokens` and `client_info` as JSON, `expires_at` (seconds since the
    epoch) and the authorization server's `metadata`, so a later run can refresh without asking.
    A file that others can read is refused (as ssh refuses a private key).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            with self.path.open("rb") as f:
                mode = os.fstat(f.fileno()).st_mode
                raw = f.read(MAX_TOKEN_FILE_BYTES + 1)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError("oauth", f"cannot read {self.path}: {exc.strerror}") from None
        if mode & 0o077:
            raise ConfigError("oauth", f"{self.path} is readable by others; chmod 600 it (it holds tokens)")
        if len(raw) > MAX_TOKEN_FILE_BYTES:
            raise ConfigError("oauth", f"{self.path} is over {MAX_TOKEN_FILE_BYTES} bytes")
        try:
            document = json.loads(raw)
        except ValueError:
            raise ConfigError("oauth", f"{self.path} is not JSON") from None
        servers = document.get("servers") if isinstance(document, dict) else None
        return servers if isinstance(servers, dict) else {}

    def entry(self, server: str) -> dict[str, Any]:
        found = self._read().get(server)
        return found if isinstance(found, dict) else {}

    def update(self, server: str, **parts: Any) -> None:
        """Set (or, with None, drop) parts of one server's entry; the file is replaced atomically."""
        servers = self._read()
        entry = dict(servers.get(server) or {})
        for key, value in parts.items():
            if value is None:
                entry.pop(key, None)
            else:
                entry[key] = value
        servers[server] = entry
        self._write({"servers": servers})

    def forget(self, server: str) -> None:
        servers = self._read()
        if servers.pop(server, None) is not None:
            self._write({"servers": servers})

    def _write(self, document: dict[str, Any]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(document, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise


@dataclass(frozen=True)
class CallbackResult:
    """What the authorization server sent back through the browser (never logged)."""

    code: str
    state: str
    iss: str | None = None


@dataclass
class LoopbackCallback:
    """The redirect target: a listener on 127.0.0.1 that takes exactly one authorization response.

    `port` 0 picks a free port when the listener starts; `redirect_uri` is known once it has. The
    SDK calls `redirect` (bind, remember the request's `state`, open the link) and then `wait`
    (serve until the answer, a denial, too many refusals, or the timeout).
    """

    server: str
    login: OAuthLogin
    port: int = 0
    clock: Callable[[], float] = time.monotonic
    refused: int = 0
    _listener: Any = field(default=None, repr=False)
    _state: str | None = field(default=None, repr=False)

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def bind(self) -> None:
        """Bind the listener (the port is then fixed); a port in use raises OSError."""
        if self._listener is None:
            self._listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
            self.port = self._listener.extra(SocketAttribute.local_port)  # noqa: S610 - anyio, not Django

    async def redirect(self, url: str) -> None:
        """Open (or show) the authorization link, after checking it."""
        verdict = check_url(url)
        if not url.startswith(("https://", "http://")) or verdict.verdict == "block":
            await self.close()
            raise AuthorizationFailed(self.server, "blocked_url", ",".join(verdict.reasons) or "not http(s)")
        states = parse_qs(urlsplit(url).query).get("state") or []
        self._state = states[0] if states else None
        await self.bind()
        opener, headless = self.login.browser()
        site = verdict.registrable_domain or verdict.parts.registrable_domain or urlsplit(url).hostname or "?"
        if headless:
            self.login.notice(
                f"{self.server} asks you to sign in at {site}. The sign-in ends at {self.redirect_uri} on "
                f"this machine: over SSH, forward that port first (ssh -L {self.port}:127.0.0.1:{self.port})."
            )
        else:
            self.login.notice(f"{self.server} asks you to sign in at {site}: opening your browser.")
        try:
            await opener(url)
        except Exception as exc:
            await self.close()
            why = f"the browser could not be opened ({exc})"
            raise AuthorizationFailed(self.server, "failed", why) from None

    async def wait(self) -> CallbackResult:
        """Serve the listener until the authorization response arrives (or the bounds end it)."""
        if self._listener is None:
            await self.bind()
        done: list[CallbackResult | AuthorizationFailed] = []
        try:
            with anyio.move_on_after(self.login.callback_timeout):
                async with anyio.create_task_group() as tg:

                    async def handle(stream: SocketStream) -> None:
                        answer = await self._one(stream)
                        if answer is not None and not done:
                            done.append(answer)
                            tg.cancel_scope.cancel()

                    tg.start_soon(self._listener.serve, handle, tg)
        finally:
            await self.close()
        if not done:
            why = f"no answer within {self.login.callback_timeout:g} s"
            raise AuthorizationFailed(self.server, "timeout", why)
        if isinstance(done[0], AuthorizationFailed):
            raise done[0]
        return done[0]

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.aclose()

    async def _one(self, stream: SocketStream) -> CallbackResult | AuthorizationFailed | None:
        """One browser request: the answer, a denial, or None (refused; the wait goes on)."""
        async with stream:
            try:
                with anyio.fail_after(OAUTH_CALLBACK_READ_TIMEOUT_SECONDS):
                    head = await _read_head(stream)
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return self._refuse_quietly()
            target = _target_of(head)
            if target is None or urlsplit(target).path != CALLBACK_PATH:
                await _send(stream, "404 Not Found", "Not found.")
                return self._refuse_quietly()
            query = {k: v[0] for k, v in parse_qs(urlsplit(target).query).items() if v}
            state = query.get("state")
            if self._state is None or state is None or not secrets.compare_digest(state, self._state):
                await _send(stream, "400 Bad Request", "This answer is not for this client's sign-in.")
                return self._refuse_quietly()
            if "error" in query:
                await _send(stream, "200 OK", "Sign-in refused. You can close this tab.")
                error = clean_text(query["error"], limit=80, multiline=False)
                return AuthorizationFailed(self.server, "denied", error)
            code = query.get("code")
            if not code:
                await _send(stream, "400 Bad Request", "No authorization code.")
                return self._refuse_quietly()
            await _send(stream, "200 OK", "Signed in. You can close this tab and go back to mcp-elicit.")
            return CallbackResult(code=code, state=state, iss=query.get("iss"))

    def _refuse_quietly(self) -> AuthorizationFailed | None:
        self.refused += 1
        if self.refused >= MAX_OAUTH_CALLBACK_REFUSALS:
            return AuthorizationFailed(self.server, "failed", "too many foreign requests on the callback")
        return None


async def _read_head(stream: SocketStream) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head and b"\n\n" not in head:
        head += await stream.receive(MAX_OAUTH_CALLBACK_REQUEST_BYTES)
        if len(head) > MAX_OAUTH_CALLBACK_REQUEST_BYTES:
            raise anyio.BrokenResourceError
    return head


def _target_of(head: bytes) -> str | None:
    line = head.split(b"\n", 1)[0].decode("latin-1").strip()
    parts = line.split(" ")
    if len(parts) != 3 or parts[0] != "GET" or not parts[1].startswith("/"):
        return None
    return parts[1]


async def _send(stream: SocketStream, status: str, text: str) -> None:
    with contextlib.suppress(anyio.BrokenResourceError, OSError):
        await stream.send(_PAGE.format(status=status, text=text).encode())

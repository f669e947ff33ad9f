"""The gateway's configuration: the `mcpServers` JSON people already keep, plus the gateway's own keys.

```
{"mcpServers": {
   "files": {"command": "files-server", "args": ["--root", "."], "env": {"LOG": "1"}},
   "tickets": {"url": "https://tickets.example/mcp", "headers": {"Authorization": "Bearer ..."},
               "noElicitation": "refuse"}},
 "users": {"token-of-alice": "alice"}}
```

Instead of `users`, an `oauth` object makes the HTTP gateway an OAuth protected resource whose
users are the tokens' subjects (`gateway/auth.py`, docs/gateway.md).

Per server, `noElicitation` says what happens when the downstream client that made the call cannot
answer a question: "refuse" (a tool error the model can relay) or "browser" (ask through the browser
UI on the gateway's machine). `users` maps downstream bearer tokens to user names (HTTP only). A
server with `"disabled": true` (as Cline and Roo Code keep servers turned off) is left out, named in
`GatewayConfig.disabled`. Pure parsing: bad input is a `ConfigError` naming the key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from mcp_elicit.errors import ConfigError
from mcp_elicit.gateway.auth import GatewayOAuth, parse_oauth

__all__ = ["GatewayConfig", "NoElicitation", "Upstream", "parse_config"]

NoElicitation = Literal["refuse", "browser"]

# Upstream servers one gateway fronts; each costs a connection (a process for stdio) per user.
MAX_UPSTREAMS: Final = 32
# Bearer tokens (users) one HTTP gateway knows.
MAX_USERS: Final = 1000
_KEY: Final = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True, slots=True)
class Upstream:
    """One upstream server: a stdio `command` with `args`/`env`, or an HTTP `url` with `headers`."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    no_elicitation: NoElicitation = "refuse"
    declared_type: str = ""  # the file's "type" ("sse", "http", "stdio"…), said when it fails

    @property
    def argv(self) -> tuple[str, ...]:
        return (self.command, *self.args) if self.command is not None else ()


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    upstreams: tuple[Upstream, ...]
    users: Mapping[str, str] = field(default_factory=dict)
    oauth: GatewayOAuth | None = None
    disabled: tuple[str, ...] = ()  # keys of the file's servers marked "disabled": true, left out


def _strings(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(where, "must be an object of strings")
    return dict(value)


def _upstream(name: str, raw: Any) -> Upstream:
    where = f"mcpServers.{name}"
    if not _KEY.match(name):
        raise ConfigError(where, "a server key is 1-64 letters, digits, '_', '.' or '-'")
    if not isinstance(raw, dict):
        raise ConfigError(where, "must be an object")
    no = raw.get("noElicitation", "refuse")
    if no not in ("refuse", "browser"):
        raise ConfigError(f"{where}.noElicitation", 'must be "refuse" or "browser"')
    declared = raw.get("type", "")
    if not isinstance(declared, str):
        raise ConfigError(f"{where}.type", "must be a string")
    command, url = raw.get("command"), raw.get("url")
    if (command is None) == (url is None):
        raise ConfigError(where, "give either command (stdio) or url (HTTP)")
    if url is not None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}.url", "must be an http:// or https:// URL")
        headers = _strings(raw.get("headers"), f"{where}.headers")
        return Upstream(name, url=url, headers=headers, no_elicitation=no, declared_type=declared)
    args = raw.get("args", [])
    if not isinstance(command, str) or not command:
        raise ConfigError(f"{where}.command", "must be a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}.args", "must be a list of strings")
    return Upstream(
        name,
        command=command,
        args=tuple(args),
        env=_strings(raw.get("env"), f"{where}.env"),
        no_elicitation=no,
    )


def parse_config(text: str) -> GatewayConfig:
    """The gateway configuration from JSON text; `ConfigError` on anything malformed."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError("config", f"not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("mcpServers"), dict):
        raise ConfigError("mcpServers", "the file needs an mcpServers object")
    servers, disabled = {}, []
    for key, entry in raw["mcpServers"].items():
        off = entry.get("disabled", False) if isinstance(entry, dict) else False
        if not isinstance(off, bool):
            raise ConfigError(f"mcpServers.{key}.disabled", "must be true or false")
        if off:
            disabled.append(key)
        else:
            servers[key] = entry
    if disabled and not servers:
        raise ConfigError("mcpServers", 'every server is "disabled": true; nothing to serve')
    if not servers or len(servers) > MAX_UPSTREAMS:
        raise ConfigError("mcpServers", f"give 1 to {MAX_UPSTREAMS} servers")
    users = _strings(raw.get("users"), "users")
    if len(users) > MAX_USERS:
        raise ConfigError("users", f"at most {MAX_USERS} tokens")
    oauth = parse_oauth(raw.get("oauth"))
    if oauth is not None and users:
        raise ConfigError("oauth", "give users (a token map) or oauth, not both")
    upstreams = tuple(_upstream(k, v) for k, v in servers.items())
    return GatewayConfig(upstreams, users, oauth, disabled=tuple(sorted(disabled)))

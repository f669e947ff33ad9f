"""Options and settings that `connect` and `call` share: guardrails, URL mode, the UI, access to
hosted servers, and which server to reach."""

from __future__ import annotations

import typing

import click


# --- guardrail options shared by connect and call ---------------------------------------------------
def _guardrail_options(func: typing.Any) -> typing.Any:
    """--config PATH and --no-audit: the policy and the audit trail of the configuration file."""
    func = click.option("--no-audit", is_flag=True, help="Do not record the questions in the audit trail.")(
        func
    )
    func = click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="Configuration file (default: $MCP_ELICIT_CONFIG, else $XDG_CONFIG_HOME/mcp-elicit/config.toml, "
        "XDG_CONFIG_HOME defaulting to ~/.config; see docs/guardrails.md).",
    )(func)
    return func


def _url_option(func: typing.Any) -> typing.Any:
    """--url/--no-url: URL mode (a server may ask the person to open a page, docs/url-mode-client.md)."""
    return click.option(
        "--url/--no-url",
        "url_mode",
        default=None,
        help="URL mode: a server may ask you to open a web page (consent first, then your browser). "
        "Default: on when someone can consent (a terminal, or --answers); without a browser to open "
        "(MCP_ELICIT_BROWSER, or the desktop's opener) it is headless: the link is shown to open elsewhere.",
    )(func)


def _ui_option(func: typing.Any) -> typing.Any:
    """--ui terminal|browser: where the server's questions are asked (docs/browser-ui.md)."""
    return click.option(
        "--ui",
        "ui_kind",
        type=click.Choice(["terminal", "browser"]),
        default="terminal",
        show_default=True,
        help="Where questions are asked: this terminal, or a local page in your browser (its link "
        "is printed on stderr).",
    )(func)


def _load_config(path: str | None) -> typing.Any:
    """The configuration (all defaults when the default file is missing); a bad file is a usage error."""
    from mcp_elicit.config import load_config
    from mcp_elicit.errors import ConfigError

    try:
        return load_config(path)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc


# The options `connect` and `call` share: which server, which era.
_server_option = click.option(
    "--server",
    "server_spec",
    required=True,
    metavar="SPEC",
    help="An http(s):// URL (streamable HTTP), a command line for a stdio server (never run by a "
    "shell; leading VAR=value words set its environment), or with --config FILE.json the NAME of an "
    "entry in that mcpServers file.",
)


def _access_options(func: typing.Any) -> typing.Any:
    """--header, --bearer and --oauth/--no-oauth: what an HTTP server needs to let the client in."""
    func = click.option(
        "--oauth/--no-oauth",
        "oauth",
        default=None,
        help="Sign in with OAuth (the MCP authorization flow, in your browser; tokens are kept for "
        "the next run). Default: when an HTTP server's 401 asks for it (resource_metadata), unless "
        "an Authorization header is given. --oauth signs in on any 401; --no-oauth never.",
    )(func)
    func = click.option(
        "--bearer",
        envvar="MCP_ELICIT_BEARER",
        default=None,
        metavar="TOKEN",
        help="Send 'Authorization: Bearer TOKEN' to an HTTP server (or set $MCP_ELICIT_BEARER, "
        "which keeps the token out of the process list).",
    )(func)
    func = click.option(
        "--header",
        "headers",
        multiple=True,
        metavar="'NAME: VALUE'",
        help="An HTTP header for every request to an HTTP server; repeatable.",
    )(func)
    return func


def _resolve_server(
    spec: str, config_path: str | None, headers: tuple[str, ...], bearer: str | None
) -> tuple[typing.Any, str | None]:
    """The server to reach, and the path of mcp-elicit's own configuration file.

    `--config FILE.json` is an mcpServers file (Claude Desktop, Cursor, VS Code): `--server NAME`
    is then one of its entries, and mcp-elicit's own configuration is the default one."""
    from mcp_elicit.client.servers import parse_header, parse_server_spec, server_from_file
    from mcp_elicit.errors import ConfigError

    try:
        if config_path is not None and config_path.endswith(".json"):
            server, config_path = server_from_file(config_path, spec), None
        else:
            server = parse_server_spec(spec)
        extra = dict(parse_header(h) for h in headers)
        if bearer:
            extra["Authorization"] = f"Bearer {bearer}"
        return server.with_headers(extra), config_path
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc


def _oauth_login(server: typing.Any, oauth: bool | None) -> typing.Any:
    """The `OAuthLogin` for `--oauth`/`--no-oauth` (None: no OAuth). The default signs in only when
    an HTTP server asks for it and no Authorization header was given (an explicit header wins)."""
    from mcp_elicit.client.oauth import OAuthLogin

    authorization = any(name.lower() == "authorization" for name, _ in server.headers)
    if oauth is False or (oauth is None and (server.kind != "http" or authorization)):
        return None
    if server.kind != "http":
        raise click.UsageError("--oauth needs an http(s):// server, not a command line")
    if authorization:
        raise click.UsageError("--oauth and an Authorization header (--bearer, --header) exclude each other")
    return OAuthLogin(when="always" if oauth else "asked")


# Said after a failure on a connection pinned to 2026-07-28 whose server refused `server/discover`.
MODERN_REFUSED_HINT: typing.Final = (
    "the server refused server/discover, which every 2026-07-28 server answers, so it may speak only "
    "2025-11-25: leave out --protocol (auto, the default, takes its 2025-11-25 handshake) or use "
    "--protocol legacy"
)

_protocol_option = click.option(
    "--protocol",
    type=click.Choice(["legacy", "modern", "auto"]),
    default="auto",
    show_default=True,
    help="legacy = 2025-11-25 handshake, modern = 2026-07-28, auto = the handshake when the server "
    "takes it (servers that push can then ask), else 2026-07-28. connect and call say which is in effect.",
)

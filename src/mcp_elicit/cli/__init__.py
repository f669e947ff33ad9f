"""The `mcp-elicit` command. Each subcommand is a thin shell over a public function."""

from __future__ import annotations

import contextlib
import sys
import typing

import click

from mcp_elicit.cli.options import (
    _access_options,
    _guardrail_options,
    _load_config,
    _oauth_login,
    _protocol_option,
    _resolve_server,
    _server_option,
    _ui_option,
    _url_option,
)

# What a command that Ctrl-C (SIGINT) ended says on stderr, its one line, before exiting 130.
INTERRUPTED_LINE: typing.Final = "mcp-elicit: interrupted (SIGINT), stopped"


@contextlib.contextmanager
def _interrupt_exits_130() -> typing.Iterator[None]:
    try:
        yield
    except KeyboardInterrupt:
        if sys.stderr.isatty():
            click.echo(err=True)  # ends the terminal's ^C echo, as click does
        click.echo(INTERRUPTED_LINE, err=True)
        raise SystemExit(130) from None


class _Main(click.Group):
    """The `mcp-elicit` group. A Ctrl-C that no command turned into its own status (one during
    start-up, before a server watches for signals; `call` waiting on the server or on a question,
    in the terminal or the browser page) says so in one line (`INTERRUPTED_LINE`) and exits 130,
    what a shell reports for a program SIGINT ended and what the servers exit with once they
    watch: not click's "Aborted!" and status 1, and no traceback. Both steps of click's `main`
    are covered: reading the command line, then running the command. (click.Abort, a prompt's
    Ctrl-C or Ctrl-D, stays click's.)"""

    def make_context(self, *args: typing.Any, **kwargs: typing.Any) -> click.Context:
        with _interrupt_exits_130():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> typing.Any:
        with _interrupt_exits_130():
            return super().invoke(ctx)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mcp-elicit")
def main() -> None:
    """Human input for the Model Context Protocol: forms, URL hand-offs, guardrails, audit."""


_F = typing.TypeVar("_F", bound=typing.Callable[..., typing.Any])


def _choice(
    name: str, choices: list[str], default: str, help: str | None = None
) -> typing.Callable[[_F], _F]:
    """An option that takes one of `choices`, with its default shown in --help."""
    return click.option(name, type=click.Choice(choices), default=default, show_default=True, help=help)


def _listen_options(port: int) -> typing.Callable[[_F], _F]:
    """--transport, --host and --port of a server command (`port`: its default)."""

    def add(func: _F) -> _F:
        func = click.option(
            "--port", type=int, default=port, show_default=True, help="Port to listen on (http only)."
        )(func)
        func = click.option(
            "--host", default="127.0.0.1", show_default=True, help="Address to listen on (http only)."
        )(func)
        return _choice("--transport", ["stdio", "http"], "stdio")(func)

    return add


# Subcommands are registered below, one block each, in the order of the README.


# --- serve-reference -------------------------------------------------------------------------------------
@main.command("serve-reference")
@_listen_options(port=8765)
@click.option(
    "--audit-db",
    default=None,
    type=click.Path(dir_okay=False),
    help="SQLite consent trail: one record per question the server asks, refuses or gives up on "
    "(default: none).",
)
@_choice("--audit-level", ["metadata", "request", "request_response"], "metadata", "With --audit-db.")
def serve_reference(transport: str, host: str, port: int, audit_db: str | None, audit_level: str) -> None:
    """Run the reference server (both protocol eras at once).

    It keeps no consent trail of its own unless --audit-db names one (the clients `call` and
    `connect` keep theirs).
    """
    from mcp_elicit.cli.listen import bind_listener
    from mcp_elicit.cli.serving import plain_logs, run_server, sqlite_trail
    from mcp_elicit.reference import build_reference_server
    from mcp_elicit.server.heap import freeze_startup_heap

    plain_logs()
    sink = sqlite_trail(audit_db, audit_level) if audit_db is not None else None
    try:
        sock = bind_listener(host, port) if transport == "http" else None  # a port in use: one line, exit 1
        server = build_reference_server(stdio=transport == "stdio", audit=sink)
        freeze_startup_heap()  # a long-running server: full collections skip what start-up made
        run_server(server, sock, host, "mcp-elicit reference server")
    finally:
        if sink is not None:
            sink.close()


# --- serve-data ------------------------------------------------------------------------------------------
@main.command("serve-data")
@_choice("--engine", ["duckdb", "postgres", "trino"], "duckdb")
@click.option(
    "--dsn",
    default=None,
    help="DuckDB file, PostgreSQL URL or trino://user@host:port/catalog/schema "
    "(DuckDB default: the sample database, created on first use).",
)
@click.option(
    "--catalog",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="TOML with column tags, thresholds and fail-closed settings (docs/data-platform.md).",
)
@_listen_options(port=8766)
@click.option(
    "--audit-db",
    default=None,
    type=click.Path(dir_okay=False),
    help="SQLite consent trail (default: data-server-audit.sqlite3 beside the sample database).",
)
@_choice(
    "--audit-level",
    ["metadata", "request", "request_response"],
    "metadata",
    "request and above also keep the SQL text.",
)
@click.option("--no-audit", is_flag=True, help="Keep no consent trail.")
def serve_data_command(
    engine: str,
    dsn: str | None,
    catalog: str | None,
    transport: str,
    host: str,
    port: int,
    audit_db: str | None,
    audit_level: str,
    no_audit: bool,
) -> None:
    """Run the guarded data server: read-only SQL that asks before expensive or personal-data queries."""
    from mcp_elicit.apps.data import serve_data
    from mcp_elicit.cli.listen import bind_listener
    from mcp_elicit.cli.serving import plain_logs
    from mcp_elicit.errors import AuditWriteError, ConfigError, DataEngineError

    plain_logs()
    sock = bind_listener(host, port) if transport == "http" else None  # a port in use: one line, exit 1
    try:
        trail = "" if no_audit else audit_db
        serve_data(engine, dsn, catalog, transport, host, port, trail, audit_level, sock=sock)
    except (ConfigError, DataEngineError) as exc:
        raise click.UsageError(str(exc)) from exc
    except AuditWriteError as exc:  # as serve-reference says it: one line, exit 1
        raise click.ClickException(f"cannot open the consent trail {exc.target}: {exc.detail}") from None


# --- check-url -------------------------------------------------------------------------------------------
@main.command("check-url")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per URL (JSON Lines).")
@click.option(
    "--trust",
    "trusted",
    multiple=True,
    metavar="DOMAIN",
    help="A domain you already trust; look-alikes of it are blocked. Repeatable.",
)
@click.option("--no-http-loopback", is_flag=True, help="Refuse plain http even for loopback hosts.")
@click.argument("url_args", metavar="URL...", nargs=-1, required=True)
def check_url_command(
    as_json: bool, trusted: tuple[str, ...], no_http_loopback: bool, url_args: tuple[str, ...]
) -> None:
    """Check URLs the way the client does before asking to open them (nothing is fetched).

    Exits 0 once every URL was checked, whatever the verdicts; read them from the output.
    """
    import json

    from mcp_elicit.core.urls import check_url, escape_for_display, verdict_as_json

    allow_http = not no_http_loopback
    verdicts = [check_url(raw, trusted_domains=trusted, allow_http_loopback=allow_http) for raw in url_args]
    if as_json:
        for v in verdicts:
            # ensure_ascii keeps bidi and control characters of a hostile URL out of the terminal
            click.echo(json.dumps(verdict_as_json(v), ensure_ascii=True))
        return
    rows: list[tuple[str, ...]] = [("VERDICT", "SITE", "REASONS", "URL")]
    for v in verdicts:
        reasons = [f"lookalike_of:{v.lookalike_of}" if r == "lookalike" else r for r in v.reasons]
        site = v.registrable_domain or v.parts.registrable_domain or "-"
        shown = v.display_url if v.canonical is not None else v.raw
        rows.append((v.verdict, site, ",".join(reasons) or "-", shown))
    rows = [tuple(escape_for_display(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo("  ".join([*padded, row[3]]))


# --- check-form ------------------------------------------------------------------------------------------
@main.command("check-form")
@click.argument("source", type=click.File("r", encoding="utf-8"))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a summary.")
@_choice(
    "--revision",
    ["2025-06-18", "2025-11-25", "2026-07-28"],
    "2026-07-28",
    "The protocol revision to check against.",
)
def check_form_command(source: typing.TextIO, as_json: bool, revision: str) -> None:
    """Check a requestedSchema (or elicitation/create params) from FILE or - (stdin).

    Reports spec deviations and fields that ask for secrets. Exits 0 for an `allow` or `warn`
    verdict, 1 for `block` (so a CI step fails on a form that would be refused), 2 when the input
    is not JSON.
    """
    import json

    from mcp_elicit.core.form_report import form_report
    from mcp_elicit.core.urls import escape_for_display

    try:
        document = json.load(source)
    except ValueError as exc:
        click.echo(f"Error: not JSON: {exc}", err=True)
        raise SystemExit(2) from None
    report = form_report(document, revision=revision)
    blocked = 1 if report["verdict"] == "block" else 0
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=True))
        raise SystemExit(blocked)
    click.echo(
        f"verdict: {report['verdict']}  (spec-valid: {'yes' if report['valid'] else 'no'}, {revision})"
    )
    for p in report["schema_errors"]:
        click.echo(escape_for_display(f"  schema  {p['field'] or '<form>'}.{p['keyword']}: {p['problem']}"))
    for f in report["fields"]:
        reasons = ",".join(f["reasons"]) or "-"
        click.echo(escape_for_display(f"  field   {f['name']}: {f['verdict']} ({reasons})"))
    raise SystemExit(blocked)


# --- connect ---------------------------------------------------------------------------------------------
@main.command("connect")
@_server_option
@_access_options
@_protocol_option
@click.option(
    "--timeout",
    "connect_timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,  # DEFAULT_CONNECT_TIMEOUT_SECONDS (cli/connect.py), not imported: the CLI loads lazily
    show_default=True,
    help="Seconds to wait for the server to answer the handshake; the session itself has no bound.",
)
@_guardrail_options
@_url_option
@_ui_option
def connect_command(
    server_spec: str,
    headers: tuple[str, ...],
    bearer: str | None,
    oauth: bool | None,
    protocol: str,
    connect_timeout: float,
    config_path: str | None,
    no_audit: bool,
    url_mode: bool | None,
    ui_kind: str,
) -> None:
    """Talk to a server: list and call its tools; its questions appear as forms in this terminal.

    In a form: Enter keeps the [value], :decline or Ctrl-D declines, :cancel, Ctrl-C or Esc cancels;
    a review screen lets you change any answer before it is sent. Exits 1 when the connection fails.
    The configuration file's policy applies, and every question is recorded in its audit trail.
    """
    import functools

    import anyio

    from mcp_elicit.cli.connect import ConnectSession, open_pipeline_client

    server, config_path = _resolve_server(server_spec, config_path, headers, bearer)
    login = _oauth_login(server, oauth)
    config = _load_config(config_path)
    if ui_kind == "browser":
        from mcp_elicit.cli.browser import connect_in_browser

        run = functools.partial(
            connect_in_browser,
            server,
            protocol=protocol,
            config=config,
            audit=not no_audit,
            url_mode=url_mode,
            oauth=login,
        )
        raise SystemExit(anyio.run(run))  # Ctrl-C: one line and 130 (`_interrupt_exits_130`)
    opener = functools.partial(open_pipeline_client, config=config, audit=not no_audit, oauth=login)
    session = ConnectSession(
        server,
        protocol=typing.cast(typing.Any, protocol),
        opener=opener,
        url_mode=url_mode,
        timeout=connect_timeout,
    )
    try:
        code = anyio.run(session.run)
    except KeyboardInterrupt:
        code = 130
    raise SystemExit(code)


# --- call ------------------------------------------------------------------------------------------------
@main.command("call")
@_server_option
@_access_options
@click.option("--tool", required=True, help="The tool to call.")
@click.option(
    "--args", "args_json", default=None, metavar="JSON", help="The tool's arguments, a JSON object."
)
@click.option(
    "--answers",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Scripted answers (JSON, see docs/client.md); without it and without a terminal, every "
    "question is cancelled. Not with --ui browser.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: the result and the questions.")
@_protocol_option
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=120.0,  # DEFAULT_CALL_TIMEOUT_SECONDS (client/call.py), not imported: the CLI loads lazily
    show_default=True,
    help="Seconds to wait on the server (connecting, then the result); time a question spends "
    "with the person does not count.",
)
@_guardrail_options
@_url_option
@_ui_option
def call_command(
    server_spec: str,
    headers: tuple[str, ...],
    bearer: str | None,
    oauth: bool | None,
    tool: str,
    args_json: str | None,
    answers: str | None,
    as_json: bool,
    protocol: str,
    timeout: float | None,
    config_path: str | None,
    no_audit: bool,
    url_mode: bool | None,
    ui_kind: str,
) -> None:
    """Call one tool; the server's questions are answered from --answers, the terminal, or cancelled.

    The configuration file's policy applies, and every question is recorded in its audit trail.
    Exits 0 when the call completed (even with a tool error result), 1 when it failed.
    """
    import functools
    import json

    import anyio

    from mcp_elicit.cli.call import KIT_WORDED, run_call
    from mcp_elicit.core.redact import redact_where
    from mcp_elicit.core.text import clean_text
    from mcp_elicit.errors import ConfigError

    try:
        arguments = json.loads(args_json) if args_json is not None else {}
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--args") from exc
    if not isinstance(arguments, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--args")
    if answers is not None and ui_kind == "browser":  # two answerers: neither would be expected to lose
        raise click.UsageError("--answers answers from a file, --ui browser in a page: choose one")
    server, config_path = _resolve_server(server_spec, config_path, headers, bearer)
    login = _oauth_login(server, oauth)
    config = _load_config(config_path)
    run = functools.partial(
        run_call,
        server,
        tool,
        arguments,
        oauth=login,
        answers=answers,
        protocol=protocol,
        timeout=timeout,
        config=config,
        audit=not no_audit,
        url_mode=url_mode,
    )
    if ui_kind == "browser":
        from mcp_elicit.cli.browser import call_in_browser

        run = functools.partial(call_in_browser, *run.args, **run.keywords)
    try:
        report = anyio.run(run)
    except (ConfigError, ValueError) as exc:
        raise click.UsageError(str(exc)) from exc
    if as_json:
        # ensure_ascii keeps any control or bidi character the server sent out of the terminal
        click.echo(json.dumps(report.to_json(), ensure_ascii=True))
    else:

        def show(text: str) -> str:
            return clean_text(text, limit=20_000)

        server = report.server
        if server is not None:
            named = " ".join(part for part in (server.name or "(unnamed)", server.version) if part)
            # where is what the person typed (a command or a URL), its credentials redacted: shown
            # as typed (a link they can use again), not defanged like the server's own text
            where = clean_text(redact_where(server.where), limit=20_000, multiline=False, defang=False)
            click.echo(show(f"server: {named}") + f" ({where})")
        if report.protocol:
            click.echo(show(f"protocol: {report.protocol}" + (f" ({report.era})" if report.era else "")))
        if report.url_mode:
            click.echo(show(f"web pages (URL mode): {report.url_mode}"))
        for o in report.elicitations:
            about = f" for {o.purpose.method} {o.purpose.target}" if o.purpose.target else ""
            why = f" ({o.reason})" if o.reason else ""
            click.echo(show(f"question{about}: {o.mode or '?'} {o.action} by {o.decided_by}{why}"))
        if report.result is not None:
            label = "result (tool error)" if report.result.get("isError") else "result"
            for item in report.result.get("content", []):
                text = item.get("text") if item.get("type") == "text" else f"<{item.get('type')} content>"
                click.echo(show(f"{label}: {text}"))
        if report.error is not None:
            hint = f"; {report.error['hint']}" if report.error.get("hint") else ""
            # a server that never started or ended, a stream that ended: the message says it all
            ours = "command" in report.error or report.error.get("reason") in KIT_WORDED
            kind = "" if ours else f"{report.error['type']}: "
            # a URL the person typed, credentials redacted: shown as typed, as on the server line
            url = report.error.get("url")
            at = f" ({clean_text(url, limit=20_000, multiline=False, defang=False)})" if url else ""
            click.echo(show(f"error: {kind}{report.error['message']}") + at + show(hint), err=True)
            if report.server_log:
                click.echo(show(f"server stderr (tail):\n{report.server_log}"), err=True)
    raise SystemExit(0 if report.completed else 1)


# --- conformance-client (hidden: run by .ci/conformance.sh) -------------------------------------------
@main.command("conformance-client", hidden=True)
@click.argument("url")
def conformance_client_command(url: str) -> None:
    """The client the official conformance suite drives: accepts every form with its defaults."""
    from mcp_elicit.cli.conformance import main as conformance_main

    raise SystemExit(conformance_main([url]))


# --- audit (the commands live in mcp_elicit.cli.audit) -----------------------------------------------
def _register_audit() -> None:
    from mcp_elicit.cli.audit import audit_group

    main.add_command(audit_group)


_register_audit()


# --- gateway (the command lives in mcp_elicit.cli.gateway) -------------------------------------------
def _register_gateway() -> None:
    from mcp_elicit.cli.gateway import gateway_command

    main.add_command(gateway_command)


_register_gateway()

"""The `mcp-elicit` command. Each subcommand is a thin shell over a public function."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mcp-elicit")
def main() -> None:
    """Human input for the Model Context Protocol: forms, URL hand-offs, guardrails, audit."""


# Subcommands are registered below, one block each, in the order of the README.


# --- serve-reference -------------------------------------------------------------------------------------
@main.command("serve-reference")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (http only).")
@click.option("--port", type=int, default=8765, show_default=True, help="Port to listen on (http only).")
def serve_reference(transport: str, host: str, port: int) -> None:
    """Run the reference server (both protocol eras at once)."""
    from mcp_elicit.reference import build_reference_server

    server = build_reference_server()
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)


# --- audit -----------------------------------------------------------------------------------------------
import typing as _typing  # noqa: E402

_AUDIT_SOURCE_HELP = "SQLite file (default: $MCP_ELICIT_AUDIT_DB or ~/.local/share/mcp-elicit/audit.sqlite3)."


def _audit_source(func: _typing.Any) -> _typing.Any:
    """Options naming the store to read: a SQLite file (default), a PostgreSQL table or a JSON Lines file."""
    func = click.option("--db", "db", type=click.Path(dir_okay=False), default=None, help=_AUDIT_SOURCE_HELP)(
        func
    )
    func = click.option("--postgres", "postgres", default=None, help="libpq URL of a PostgreSQL database.")(
        func
    )
    func = click.option("--table", default="mcp_elicit_audit", show_default=True, help="PostgreSQL table.")(
        func
    )
    func = click.option(
        "--jsonl", "jsonl", type=click.Path(dir_okay=False), default=None, help="JSON Lines file."
    )(func)
    return func


def _audit_filters(func: _typing.Any) -> _typing.Any:
    func = click.option("--server", default=None, help="Only records of this server name.")(func)
    func = click.option(
        "--action",
        type=click.Choice(["accept", "decline", "cancel", "error"]),
        default=None,
        help="Only this action.",
    )(func)
    func = click.option(
        "--since", default=None, help="ISO date/time (UTC if no zone) or an age: 30m, 12h, 7d."
    )(func)
    func = click.option("--until", default=None, help="Same forms as --since; exclusive.")(func)
    return func


def _audit_time(value: str | None, option: str) -> str | None:
    """An ISO 8601 date/time, or an age such as 90s, 30m, 12h, 7d meaning that long ago."""
    if value is None:
        return None
    import re
    import time

    from mcp_elicit.core.consent import format_time, time_bound

    age = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", value.strip())
    if age:
        seconds = float(age.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[age.group(2)]
        return format_time(time.time() - seconds)
    try:
        return time_bound(value)
    except ValueError as exc:
        raise click.BadParameter(
            f"{value!r} is neither an ISO date/time nor an age like 7d", param_hint=option
        ) from exc


class _AuditOpenError(click.ClickException):
    exit_code = 2


def _open_audit_reader(db: str | None, postgres: str | None, table: str, jsonl: str | None) -> _typing.Any:
    """Open the chosen store for reading; never creates a SQLite file."""
    from mcp_elicit.errors import AuditReadError, AuditWriteError

    if sum(x is not None for x in (db, postgres, jsonl)) > 1:
        raise click.UsageError("choose one of --db, --postgres, --jsonl")
    try:
        if postgres is not None:
            from mcp_elicit.audit.postgres import PostgresAuditSink

            return PostgresAuditSink(postgres, table=table, create=False)
        if jsonl is not None:
            from pathlib import Path

            from mcp_elicit.audit.jsonl import JsonlAuditSink

            if not Path(jsonl).is_file():
                raise AuditReadError("jsonl", jsonl, "no such file")
            return JsonlAuditSink(jsonl)
        from mcp_elicit.audit.sqlite import SqliteAuditSink
        from mcp_elicit.config import default_audit_db_path

        return SqliteAuditSink(db if db is not None else default_audit_db_path(), readonly=True)
    except (AuditReadError, AuditWriteError, ValueError) as exc:
        raise _AuditOpenError(str(exc)) from exc


def _audit_records(
    sink: _typing.Any, server: str | None, action: str | None, since: str | None, until: str | None
) -> _typing.Any:
    from mcp_elicit.errors import AuditReadError

    try:
        yield from sink.iter_records(
            server=server,
            action=action,
            since=_audit_time(since, "--since"),
            until=_audit_time(until, "--until"),
        )
    except AuditReadError as exc:
        raise _AuditOpenError(str(exc)) from exc


@main.group("audit")
def audit_group() -> None:
    """Read, verify and export the consent audit trail."""


@audit_group.command("list")
@_audit_source
@_audit_filters
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show only the last N matches.")
@click.option("--json", "as_json", is_flag=True, help="One JSON record per line instead of a table.")
def audit_list(
    db: str | None,
    postgres: str | None,
    table: str,
    jsonl: str | None,
    server: str | None,
    action: str | None,
    since: str | None,
    until: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """List consent records, oldest first."""
    import collections
    import json

    sink = _open_audit_reader(db, postgres, table, jsonl)
    try:
        records = _audit_records(sink, server, action, since, until)
        shown = collections.deque(records, maxlen=limit) if limit else records
        for r in shown:
            if as_json:
                click.echo(json.dumps(r, sort_keys=True, ensure_ascii=False))
                continue
            who = r.get("server") or {}
            click.echo(
                f"{r.get('time', '?')}  #{r.get('seq', '?'):<6} {who.get('name', '') or '-':<20} "
                f"{r.get('mode', ''):<4} {r.get('action', ''):<7} {r.get('decided_by', ''):<12} "
                f"{r.get('reason', '') or '-':<16} {r.get('id', '')}"
            )
    finally:
        sink.close()


@audit_group.command("show")
@_audit_source
@click.argument("record_id")
def audit_show(db: str | None, postgres: str | None, table: str, jsonl: str | None, record_id: str) -> None:
    """Print one record as JSON; exit 1 when there is no such record."""
    import json

    from mcp_elicit.errors import AuditReadError

    sink = _open_audit_reader(db, postgres, table, jsonl)
    try:
        record = sink.get(record_id)
    except AuditReadError as exc:
        raise _AuditOpenError(str(exc)) from exc
    finally:
        sink.close()
    if record is None:
        click.echo(f"no record with id {record_id}", err=True)
        raise SystemExit(1)
    click.echo(json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False))


@audit_group.command("verify")
@_audit_source
@click.option(
    "--expect-head", default=None, help="The head hash kept elsewhere; catches a cut or rewritten tail."
)
def audit_verify(
    db: str | None, postgres: str | None, table: str, jsonl: str | None, expect_head: str | None
) -> None:
    """Check the hash chain; exit 1 and say where when it is broken."""
    from mcp_elicit.errors import AuditReadError

    sink = _open_audit_reader(db, postgres, table, jsonl)
    try:
        report = sink.verify(expect_head)
    except AuditReadError as exc:
        raise _AuditOpenError(str(exc)) from exc
    finally:
        sink.close()
    if report.ok:
        click.echo(f"ok: {report.count} records, chain intact, head {report.head_hash}")
        return
    click.echo(f"BROKEN: {len(report.breaks)} break(s) in {report.count} records")
    for b in report.breaks:
        seq = "-" if b.seq is None else b.seq
        click.echo(f"  record #{b.index} (seq {seq}, id {b.record_id or '-'}): {b.kind}: {b.detail}")
    raise SystemExit(1)


_CSV_COLUMNS = (
    "seq",
    "id",
    "time",
    "side",
    "protocol",
    "server",
    "server_version",
    "server_where",
    "client",
    "client_version",
    "person",
    "mode",
    "method",
    "request_id",
    "call_name",
    "fields",
    "url_host",
    "url_domain",
    "url_verdict",
    "action",
    "decided_by",
    "reason",
    "latency_ms",
    "message_sha256",
    "prev_hash",
    "hash",
)


def _csv_row(r: dict[str, _typing.Any]) -> list[_typing.Any]:
    server, client = r.get("server") or {}, r.get("client") or {}
    call, url = r.get("call") or {}, r.get("url") or {}
    fields = ";".join(f"{f.get('name')}:{f.get('type')}" for f in r.get("fields") or [])
    return [
        r.get("seq"),
        r.get("id"),
        r.get("time"),
        r.get("side"),
        r.get("protocol"),
        server.get("name"),
        server.get("version"),
        server.get("where"),
        client.get("name"),
        client.get("version"),
        r.get("person"),
        r.get("mode"),
        call.get("method"),
        call.get("request_id"),
        call.get("name"),
        fields,
        url.get("host"),
        url.get("domain"),
        url.get("verdict"),
        r.get("action"),
        r.get("decided_by"),
        r.get("reason"),
        r.get("latency_ms"),
        r.get("message_sha256"),
        r.get("prev_hash"),
        r.get("hash"),
    ]


@audit_group.command("export")
@_audit_source
@_audit_filters
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@click.option(
    "--output", "-o", type=click.File("w", encoding="utf-8"), default="-", help="File to write (- = stdout)."
)
def audit_export(
    db: str | None,
    postgres: str | None,
    table: str,
    jsonl: str | None,
    server: str | None,
    action: str | None,
    since: str | None,
    until: str | None,
    fmt: str,
    output: _typing.Any,
) -> None:
    """Export records as JSON Lines (exact, re-verifiable with --jsonl when unfiltered) or CSV (flattened)."""
    import csv

    from mcp_elicit.core.consent import canonical_json

    sink = _open_audit_reader(db, postgres, table, jsonl)
    try:
        records = _audit_records(sink, server, action, since, until)
        if fmt == "jsonl":
            for r in records:
                output.write(canonical_json(r).decode("utf-8") + "\n")
            return
        writer = csv.writer(output, lineterminator="\n")
        writer.writerow(_CSV_COLUMNS)
        for r in records:
            writer.writerow(_csv_row(r))
    finally:
        sink.close()


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
@click.option(
    "--revision",
    type=click.Choice(["2025-06-18", "2025-11-25", "2026-07-28"]),
    default="2026-07-28",
    show_default=True,
    help="The protocol revision to check against.",
)
def check_form_command(source: _typing.TextIO, as_json: bool, revision: str) -> None:
    """Check a requestedSchema (or elicitation/create params) from FILE or - (stdin).

    Reports spec deviations and fields that ask for secrets; exits 0 when it ran, 2 when the
    input is not JSON.
    """
    import json

    from mcp_elicit.core.form_report import form_report
    from mcp_elicit.core.urls import escape_for_display

    try:
        document = json.load(source)
    except ValueError as exc:
        raise click.ClickException(f"not JSON: {exc}") from None
    report = form_report(document, revision=revision)
    if as_json:
        click.echo(json.dumps(report, ensure_ascii=True))
        return
    click.echo(
        f"verdict: {report['verdict']}  (spec-valid: {'yes' if report['valid'] else 'no'}, {revision})"
    )
    for p in report["schema_errors"]:
        click.echo(escape_for_display(f"  schema  {p['field'] or '<form>'}.{p['keyword']}: {p['problem']}"))
    for f in report["fields"]:
        reasons = ",".join(f["reasons"]) or "-"
        click.echo(escape_for_display(f"  field   {f['name']}: {f['verdict']} ({reasons})"))


# --- guardrail options shared by connect and call ---------------------------------------------------
def _guardrail_options(func: _typing.Any) -> _typing.Any:
    """--config PATH and --no-audit: the policy and the audit trail of the configuration file."""
    func = click.option("--no-audit", is_flag=True, help="Do not record the questions in the audit trail.")(
        func
    )
    func = click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="Configuration file (default: $MCP_ELICIT_CONFIG or ~/.config/mcp-elicit/config.toml; "
        "see docs/guardrails.md).",
    )(func)
    return func


def _url_option(func: _typing.Any) -> _typing.Any:
    """--url/--no-url: URL mode (a server may ask the person to open a page, docs/url-mode-client.md)."""
    return click.option(
        "--url/--no-url",
        "url_mode",
        default=None,
        help="URL mode: a server may ask you to open a web page (consent first, then your browser). "
        "Default: on when this machine can open a browser (MCP_ELICIT_BROWSER, or the desktop's opener).",
    )(func)


def _load_config(path: str | None) -> _typing.Any:
    """The configuration (all defaults when the default file is missing); a bad file is a usage error."""
    from mcp_elicit.config import load_config
    from mcp_elicit.errors import ConfigError

    try:
        return load_config(path)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc


# --- connect ---------------------------------------------------------------------------------------------
@main.command("connect")
@click.option(
    "--server",
    "server_spec",
    required=True,
    metavar="SPEC",
    help="An http(s):// URL (streamable HTTP) or a command line for a stdio server (never run by a shell).",
)
@click.option(
    "--protocol",
    type=click.Choice(["legacy", "modern", "auto"]),
    default="auto",
    show_default=True,
    help="legacy = 2025-11-25 handshake, modern = 2026-07-28, auto = discover and fall back.",
)
@_guardrail_options
@_url_option
def connect_command(
    server_spec: str, protocol: str, config_path: str | None, no_audit: bool, url_mode: bool | None
) -> None:
    """Talk to a server: list and call its tools; its questions appear as forms in this terminal.

    In a form: Enter keeps the [value], :decline or Ctrl-D declines, :cancel, Ctrl-C or Esc cancels;
    a review screen lets you change any answer before it is sent. Exits 1 when the connection fails.
    The configuration file's policy applies, and every question is recorded in its audit trail.
    """
    import functools

    import anyio

    from mcp_elicit.ui.connect import ConnectSession, open_pipeline_client

    config = _load_config(config_path)
    opener = functools.partial(open_pipeline_client, config=config, audit=not no_audit)
    if url_mode:
        from mcp_elicit.client.url import UrlMode
        from mcp_elicit.errors import ConfigError

        try:
            UrlMode()  # fails when no browser can be opened here
        except ConfigError as exc:
            raise click.UsageError(str(exc)) from exc
    session = ConnectSession(
        server_spec, protocol=_typing.cast(_typing.Any, protocol), opener=opener, url_mode=url_mode
    )
    try:
        code = anyio.run(session.run)
    except KeyboardInterrupt:
        code = 130
    raise SystemExit(code)


# --- call ------------------------------------------------------------------------------------------------
@main.command("call")
@click.option(
    "--server",
    "server_spec",
    required=True,
    metavar="SPEC",
    help="An http(s):// URL (streamable HTTP) or a command line for a stdio server (never run by a shell).",
)
@click.option("--tool", required=True, help="The tool to call.")
@click.option(
    "--args", "args_json", default=None, metavar="JSON", help="The tool's arguments, a JSON object."
)
@click.option(
    "--answers",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Scripted answers (JSON, see docs/client.md); without it and without a terminal, every "
    "question is cancelled.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: the result and the questions.")
@click.option(
    "--protocol",
    type=click.Choice(["legacy", "modern", "auto"]),
    default="auto",
    show_default=True,
    help="legacy = 2025-11-25 handshake, modern = 2026-07-28, auto = discover and fall back.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds to wait for each response.",
)
@_guardrail_options
@_url_option
def call_command(
    server_spec: str,
    tool: str,
    args_json: str | None,
    answers: str | None,
    as_json: bool,
    protocol: str,
    timeout: float | None,
    config_path: str | None,
    no_audit: bool,
    url_mode: bool | None,
) -> None:
    """Call one tool; the server's questions are answered from --answers, the terminal, or cancelled.

    The configuration file's policy applies, and every question is recorded in its audit trail.
    Exits 0 when the call completed (even with a tool error result), 1 when it failed.
    """
    import functools
    import json

    import anyio

    from mcp_elicit.client.call import run_call
    from mcp_elicit.core.text import clean_text
    from mcp_elicit.errors import ConfigError

    try:
        arguments = json.loads(args_json) if args_json is not None else {}
    except ValueError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--args") from exc
    if not isinstance(arguments, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--args")
    config = _load_config(config_path)
    run = functools.partial(
        run_call,
        server_spec,
        tool,
        arguments,
        answers=answers,
        protocol=protocol,
        read_timeout=timeout,
        config=config,
        audit=not no_audit,
        url_mode=url_mode,
    )
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
            click.echo(show(f"server: {server.name or '(unnamed)'} {server.version or ''} ({server.where})"))
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
            click.echo(show(f"error: {report.error['type']}: {report.error['message']}"), err=True)
            if report.server_log:
                click.echo(show(f"server stderr (tail):\n{report.server_log}"), err=True)
    raise SystemExit(0 if report.completed else 1)


# --- conformance-client (hidden: run by .ci/conformance.sh) -------------------------------------------
@main.command("conformance-client", hidden=True)
@click.argument("url")
def conformance_client_command(url: str) -> None:
    """The client the official conformance suite drives: accepts every form with its defaults."""
    from mcp_elicit.client.conformance import main as conformance_main

    raise SystemExit(conformance_main([url]))

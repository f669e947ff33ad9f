"""The `mcp-elicit audit` commands: list, show, verify and export the consent trail.

A thin shell over the sinks in this package; `mcp_elicit.cli` registers the group.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import typing as _typing
from dataclasses import dataclass

import click

_T = _typing.TypeVar("_T")
_AUDIT_SOURCE_HELP = (
    "SQLite file. Without --db, --jsonl or --postgres the trail the configuration file names is read "
    "([audit] sink and path, as `call` and `gateway` write it), else $MCP_ELICIT_AUDIT_DB, else "
    "$XDG_DATA_HOME/mcp-elicit/audit.sqlite3 (XDG_DATA_HOME defaults to ~/.local/share)."
)
_CHECKPOINT_HELP = (
    "The keyed checkpoint file the writers keep (key in $MCP_ELICIT_AUDIT_KEY): the records keyed "
    "writers have only in their signed journals are read too, and verify checks the trail against it "
    "(a cut or re-chained tail). Default: the configuration's `checkpoint` when the trail is the one "
    "it names (list, show, export and serve use it only when the key is set)."
)
_CONFIG_HELP = (
    "Configuration file naming the trail (default: $MCP_ELICIT_CONFIG, else "
    "$XDG_CONFIG_HOME/mcp-elicit/config.toml, XDG_CONFIG_HOME defaulting to ~/.config)."
)


def _grouped(
    name: str, make: _typing.Any, names: tuple[str, ...], *options: _typing.Any
) -> _typing.Callable[[_typing.Any], _typing.Any]:
    """A decorator adding `options` (whose values are `names`) to a command, which receives them
    as one argument `name`: ``make(**values)``."""

    def decorate(func: _typing.Any) -> _typing.Any:
        @functools.wraps(func)
        def command(**values: _typing.Any) -> _typing.Any:
            group = make(**{n: values.pop(n) for n in names})
            return func(**{name: group}, **values)

        for option in options:
            command = option(command)
        return command

    return decorate


def _audit_time(value: str | None, option: str) -> str | None:
    """An ISO 8601 date/time, or an age such as 90s, 30m, 12h, 7d meaning that long ago."""
    from mcp_elicit.audit.reading import parse_time
    from mcp_elicit.errors import InvalidArgument

    try:
        return parse_time(value, option)
    except InvalidArgument as exc:
        raise click.BadParameter(exc.problem, param_hint=option) from exc


_DEFAULT_TABLE = "mcp_elicit_audit"


class _AuditOpenError(click.ClickException):
    exit_code = 2


@dataclass(frozen=True, slots=True)
class _Source:
    """The store to read, as the options name it: a SQLite file (default), a PostgreSQL table or a
    JSON Lines file."""

    db: str | None
    postgres: str | None
    table: str | None
    jsonl: str | None
    config: str | None = None
    checkpoint: str | None = None  # --checkpoint
    configured: str | None = None  # the configuration's keyed checkpoint, when it names the store

    def resolved(self) -> _Source:
        """The store the options name; with none named, the one the configuration's ``[audit]``
        names (where `call` and `gateway` write), opened for reading only."""
        from mcp_elicit.cli.options import _load_config
        from mcp_elicit.config import audit_location

        given = self.checkpoint
        if self.db is not None or self.postgres is not None or self.jsonl is not None:
            named = _Source(self.db, self.postgres, self.table or _DEFAULT_TABLE, self.jsonl)
            configured = _configured_checkpoint_of(named, self.config)
            return dataclasses.replace(named, checkpoint=given, configured=configured)
        audit = _load_config(self.config).audit
        where = audit_location(audit)
        table = self.table or audit.table
        cp = None if audit.checkpoint is None else str(audit.checkpoint)
        if audit.sink == "postgres":
            return _Source(None, where, table, None, checkpoint=given, configured=cp)
        if audit.sink == "jsonl":
            return _Source(None, None, table, where, checkpoint=given, configured=cp)
        return _Source(where, None, table, None, checkpoint=given, configured=cp)

    def open(self) -> _typing.Any:
        """Open the chosen store for reading; never creates a SQLite file."""
        from mcp_elicit.audit.reading import open_reader
        from mcp_elicit.errors import AuditReadError, AuditWriteError, ConfigError

        source = self.resolved()
        try:
            table = source.table or _DEFAULT_TABLE
            return open_reader(source.db, source.postgres, table, source.jsonl, source.anchor())
        except ConfigError as exc:
            raise click.UsageError(exc.problem) from exc
        except (AuditReadError, AuditWriteError, ValueError) as exc:
            raise _AuditOpenError(str(exc)) from exc

    def read(self, how: _typing.Callable[[_typing.Any], _T]) -> _T:
        """Open the store, read it with `how` and close it; a failed read exits 2 with its reason."""
        from mcp_elicit.errors import AuditReadError

        sink = self.open()
        try:
            return how(sink)
        except AuditReadError as exc:
            raise _AuditOpenError(str(exc)) from exc
        finally:
            sink.close()

    def anchor(self, *, required: bool = False) -> _typing.Any:
        """The keyed checkpoint of a resolved source: the one given with --checkpoint (its key
        required), else the configured one when its key is in the environment (or `required`),
        else None. With it a reader also merges the journals a keyed writer signed (without it,
        they wait for one) and `verify` checks the trail against it."""
        from mcp_elicit.audit.checkpoint import CHECKPOINT_KEY_ENV, Checkpoint, checkpoint_key_from_env
        from mcp_elicit.errors import ConfigError

        path = self.checkpoint or self.configured
        wanted = self.checkpoint is not None or required or bool(os.environ.get(CHECKPOINT_KEY_ENV))
        if path is None or not wanted:
            return None
        try:
            return Checkpoint(path, checkpoint_key_from_env())
        except ConfigError as exc:  # named: the person gave no key on the command line
            raise click.UsageError(str(exc)) from exc

    @property
    def label(self) -> str:
        source = self.resolved()
        return (source.postgres and f"PostgreSQL table {source.table}") or source.jsonl or source.db or ""


def _configured_checkpoint_of(named: _Source, config: str | None) -> str | None:
    """The configuration's checkpoint when the file named by hand is the trail it names (the
    same file under another path included); None otherwise, or when the configuration is unusable
    (a store named by hand is read without it)."""
    from mcp_elicit.config import audit_location, load_config
    from mcp_elicit.errors import ConfigError

    given = named.db or named.jsonl
    try:
        audit = load_config(config).audit
    except ConfigError:
        return None
    if given is None or audit.checkpoint is None or audit.sink == "postgres":
        return None
    with contextlib.suppress(OSError):
        if os.path.samefile(given, audit_location(audit)):
            return str(audit.checkpoint)
    return None


_audit_source = _grouped(
    "source",
    _Source,
    ("db", "postgres", "table", "jsonl", "config", "checkpoint"),
    click.option("--db", "db", type=click.Path(dir_okay=False), default=None, help=_AUDIT_SOURCE_HELP),
    click.option("--postgres", "postgres", default=None, help="libpq URL of a PostgreSQL database."),
    click.option(
        "--table",
        default=None,
        help=f"PostgreSQL table (default: the configuration's, else {_DEFAULT_TABLE}).",
    ),
    click.option("--jsonl", "jsonl", type=click.Path(dir_okay=False), default=None, help="JSON Lines file."),
    click.option("--config", "config", type=click.Path(dir_okay=False), default=None, help=_CONFIG_HELP),
    click.option("--checkpoint", "checkpoint", default=None, metavar="FILE", help=_CHECKPOINT_HELP),
)


def _filters(
    server: str | None, action: str | None, since: str | None, until: str | None
) -> dict[str, str | None]:
    """The record filters, times parsed now: a bad time is a usage error before anything is
    opened or written (a header row, or an --output file emptied)."""
    return {
        "server": server,
        "action": action,
        "since": _audit_time(since, "--since"),
        "until": _audit_time(until, "--until"),
    }


# The record filters, read by `_audit_records`.
_audit_filters = _grouped(
    "filters",
    _filters,
    ("server", "action", "since", "until"),
    click.option("--server", default=None, help="Only records of this server name."),
    click.option(
        "--action",
        type=click.Choice(["accept", "decline", "cancel", "error"]),
        default=None,
        help="Only this action.",
    ),
    click.option("--since", default=None, help="ISO date/time (UTC if no zone) or an age: 30m, 12h, 7d."),
    click.option("--until", default=None, help="Same forms as --since; exclusive."),
)


def _audit_records(
    sink: _typing.Any, filters: dict[str, str | None], newest: int | None = None
) -> _typing.Any:
    """The records the filters select (the `newest` N only, when given), each checked against its
    hashed body; the ones an edited index column mislabels are left out and named on stderr."""
    from mcp_elicit.audit.reading import CheckedRead
    from mcp_elicit.errors import AuditReadError

    read = CheckedRead(sink, newest=newest, **filters)
    try:
        yield from read
    except AuditReadError as exc:
        raise _AuditOpenError(str(exc)) from exc
    if (note := read.mislabelled_note()) is not None:
        click.echo(f"mcp-elicit: {note}", err=True)


@click.group("audit")
def audit_group() -> None:
    """Read, verify and export the consent audit trail."""


@audit_group.command("list")
@_audit_source
@_audit_filters
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Show only the last N matches.")
@click.option("--json", "as_json", is_flag=True, help="One JSON record per line instead of a table.")
def audit_list(source: _Source, filters: dict[str, str | None], limit: int | None, as_json: bool) -> None:
    """List consent records, oldest first."""
    import collections

    from mcp_elicit.cli.audit_output import inert_json, shown
    from mcp_elicit.core.limits import MAX_SERVER_NAME_CHARS
    from mcp_elicit.core.text import clean_text

    sink = source.open()
    try:
        records = _audit_records(sink, filters, newest=limit)  # a SQL store reads the last N only
        kept = collections.deque(records, maxlen=limit) if limit else records
        if as_json:
            for r in kept:
                click.echo(inert_json(r))
            return
        rows: list[tuple[str, ...]] = [_LIST_HEADER]
        for r in map(shown, kept):  # server text shown inert
            who, call = r.get("server") or {}, r.get("call") or {}
            tool = clean_text(str(call.get("name") or ""), limit=MAX_SERVER_NAME_CHARS, multiline=False)
            rows.append(
                (
                    str(r.get("time", "?")),
                    f"#{r.get('seq', '?')}",
                    who.get("name", "") or "-",
                    tool or "-",
                    r.get("mode", "") or "-",
                    r.get("action", "") or "-",
                    r.get("decided_by", "") or "-",
                    r.get("reason", "") or "-",
                    r.get("id", "") or "-",
                )
            )
        for line in _aligned(rows):
            click.echo(line)
    finally:
        sink.close()


_LIST_HEADER = ("TIME", "SEQ", "SERVER", "TOOL", "MODE", "ACTION", "DECIDED_BY", "REASON", "ID")


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """The lines of `audit list`: each column as wide as its widest cell (a long reason such as
    `user_accepted_masked`, a long server name), two spaces between columns, the last unpadded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]) for row in rows]


@audit_group.command("show")
@_audit_source
@click.argument("record_id", metavar="[RECORD]", required=False)
@click.option("--seq", type=click.IntRange(min=1), default=None, help="The record of this sequence number.")
@click.option(
    "--id",
    "by_id",
    metavar="ID",
    default=None,
    help="The record with this id or id start, digits or not (a bare number is a sequence number).",
)
def audit_show(source: _Source, record_id: str | None, seq: int | None, by_id: str | None) -> None:
    """Print one record as JSON. RECORD is a sequence number as `list` shows it (5, #5 or
    --seq 5), or a record's id or the start of it; an id start of digits only is given as
    --id 0593. Exit 1 when no record matches, 2 when RECORD names several."""
    from mcp_elicit.audit.reading import find_record
    from mcp_elicit.cli.audit_output import inert, inert_json

    if sum(x is not None for x in (record_id, seq, by_id)) != 1:
        raise click.UsageError("give one of RECORD (a seq, '#SEQ', an id or its start), --seq SEQ or --id ID")
    key = f"#{seq}" if seq is not None else str(by_id if by_id is not None else record_id)
    namesakes: list[dict[str, _typing.Any]] = []
    found = source.read(lambda sink: find_record(sink, key, by_id=by_id is not None, namesakes=namesakes))
    shown = inert(key.strip())
    if key.strip().isdigit() and by_id is None:
        shown = f"#{int(key)}"  # a bare number is a seq: say so
    if namesakes:  # digits read as a seq that also start some ids: say how to name those
        seqs = ", ".join(f"#{r.get('seq')}" for r in namesakes[:5]) + (", ..." if len(namesakes) > 5 else "")
        click.echo(
            f"{key.strip()} is read as sequence number {shown}; the id of {len(namesakes)} other"
            f" record(s) ({seqs}) starts with it too: --id {key.strip()} names those",
            err=True,
        )
    if not found:
        click.echo(f"no record {shown}", err=True)
        raise SystemExit(1)
    if len(found) > 1:
        seqs = ", ".join(f"#{r.get('seq')}" for r in found[:5]) + (", ..." if len(found) > 5 else "")
        raise click.UsageError(f"{shown} names {len(found)} records ({seqs}): give more of the id or its seq")
    click.echo(inert_json(found[0], indent=2))


def _refused_lines_note(source: _Source, sink: _typing.Any) -> str | None:
    """How many journal lines a merge refused and kept beside a SQLite trail, and how many of them
    hold a record the chain does not (edited, unsigned or torn before their merge: `verify` cannot
    see those); None when there are none, or the trail is not SQLite."""
    from pathlib import Path

    from mcp_elicit.audit.rejected import kept_lines, rejected_path
    from mcp_elicit.config import default_audit_db_path

    resolved = source.resolved()
    if resolved.postgres is not None or resolved.jsonl is not None:
        return None
    db = Path(resolved.db) if resolved.db else default_audit_db_path()
    try:
        found = kept_lines(db, lambda record_id: sink.get(record_id) is not None)
    except OSError:
        return None
    if not found.kept:
        return None
    kept, copies = rejected_path(db), found.kept - found.unchained
    if not found.unchained:
        return (
            f"{found.kept} refused journal line(s) kept in {kept}, each of a record the chain holds"
            " (a copy changed in its journal before the merge): no record missing"
        )
    more = f"; {copies} more are of records the chain holds" if copies else ""
    return (
        f"{found.unchained} refused journal line(s) kept in {kept} hold records never chained:"
        f" edited, unsigned or torn before their merge{more}"
    )


@audit_group.command("verify")
@_audit_source
@click.option(
    "--expect-head", default=None, help="The head hash kept elsewhere; catches a cut or rewritten tail."
)
def audit_verify(source: _Source, expect_head: str | None) -> None:
    """Check the hash chain; exit 1 and say where when it is broken."""
    from mcp_elicit.audit.reading import break_place
    from mcp_elicit.cli.audit_output import inert

    if expect_head is not None:  # hashes are lower-case hex: a copy kept upper-cased or padded is the same
        expect_head = expect_head.strip().lower()
    anchor = source.resolved().anchor(required=True)  # a configured checkpoint needs its key here

    def verify(sink: _typing.Any) -> _typing.Any:
        sink.checkpoint = anchor
        return sink.verify(expect_head), _refused_lines_note(source, sink)

    report, refused = source.read(verify)
    if refused is not None:
        click.echo(f"mcp-elicit: {refused}", err=True)
    if report.ok:
        records = "1 record" if report.count == 1 else f"{report.count} records"
        checked = ", checkpoint checked" if anchor is not None and anchor.path.exists() else ""
        click.echo(f"ok: {records}, chain intact, head {report.head_hash}{checked}")
        return
    records = "1 record" if report.count == 1 else f"{report.count} records"
    click.echo(f"BROKEN: {len(report.breaks)} break(s) in {records}")
    for b in report.breaks:
        detail = inert(b.detail)
        if b.kind == "no_checkpoint" and anchor is not None:
            detail += f" (looked for {anchor.path})"
        click.echo(f"  {inert(break_place(b))}: {b.kind}: {detail}")  # #SEQ, as `list` and `show`
    raise SystemExit(1)


@audit_group.command("export")
@_audit_source
@_audit_filters
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@click.option(
    "--output", "-o", type=click.File("w", encoding="utf-8"), default="-", help="File to write (- = stdout)."
)
def audit_export(source: _Source, filters: dict[str, str | None], fmt: str, output: _typing.Any) -> None:
    """Export records as JSON Lines (exact, re-verifiable with --jsonl when unfiltered) or CSV
    (flattened). To a file or a pipe the bytes are the trail's own; to a terminal the server's
    text is written inert: JSON escapes controls, bidi and hidden characters as \\uXXXX (the same
    values), CSV cells show them as markers such as ⟨U+202E⟩."""
    from mcp_elicit.cli.audit_output import CSV_COLUMNS, csv_row, csv_writer, inert, inert_line
    from mcp_elicit.core.consent import canonical_json

    isatty = getattr(output, "isatty", None)
    to_terminal = bool(isatty()) if callable(isatty) else False
    sink = source.open()
    try:
        records = _audit_records(sink, filters)
        if fmt == "jsonl":
            for r in records:
                line = canonical_json(r).decode("utf-8")
                output.write((inert_line(line) if to_terminal else line) + "\n")
            return
        writer = csv_writer(output)
        writer.writerow(CSV_COLUMNS)
        for r in records:
            row = csv_row(r)
            writer.writerow([inert(c) if to_terminal and isinstance(c, str) else c for c in row])
    finally:
        sink.close()


@audit_group.command("serve")
@_audit_source
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="0: any free port.")
def audit_serve(source: _Source, port: int) -> None:
    """Show the trail in your browser: records with filters, the chain's status, a chart (read-only).

    Listens on 127.0.0.1 only and prints the page's link (with its session token) on stderr.
    Ctrl-C or SIGTERM stops it (exit 130 or 143, as the servers' commands).
    """
    import logging

    import anyio

    from mcp_elicit.cli.listen import listen_failure
    from mcp_elicit.cli.serving import plain_logs
    from mcp_elicit.server.signals import run_until_signalled
    from mcp_elicit.ui.browser.audit_view import serve_audit
    from mcp_elicit.ui.browser.guard import LOOPBACK, LocalServer

    source.open().close()  # a bad source fails here, not in the page
    try:
        server = LocalServer(port)
    except OSError as exc:  # a port in use: one line, exit 1
        raise listen_failure(LOOPBACK, port, exc) from None
    page = functools.partial(serve_audit, source.open, source.label, port=port, server=server)

    async def serve(stop: anyio.Event) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(page)
            await stop.wait()
            tg.cancel_scope.cancel()  # the page's server shuts down gracefully when cancelled

    plain_logs(logging.WARNING)  # one `LEVEL logger: message` line per record, as the servers write
    log = logging.getLogger("mcp_elicit.audit")
    log.setLevel(logging.INFO)  # the stop's one line
    run_until_signalled(serve, log)

"""What the server commands (`serve-reference`, `serve-data`, `gateway`) share beyond the socket."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import click


def sqlite_trail(path: str, level: str) -> Any:
    """A SQLite consent trail at `path` (its folder made if missing), recording at `level`; one
    that cannot be opened is a one-line error, exit 1."""
    from mcp_elicit.audit import SqliteAuditSink
    from mcp_elicit.errors import AuditWriteError

    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return SqliteAuditSink(path, level=level)  # type: ignore[arg-type]
    except (OSError, AuditWriteError) as exc:
        why = exc.strerror.lower() if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise click.ClickException(f"cannot open the consent trail {path}: {why}") from None


def run_server(server: Any, sock: Any, host: str, name: str) -> None:
    """Serve `server` over stdio (`sock` None: Ctrl-C or SIGTERM stops it as end of file would)
    or streamable HTTP on the bound `sock` (Ctrl-C or SIGTERM: uvicorn's graceful shutdown);
    exit 130 or 143 after the signal."""
    import functools

    from mcp_elicit.server import sdk_serving
    from mcp_elicit.server.signals import run_stdio, run_until_signalled

    if sock is None:
        run_stdio(server)
        return
    click.echo(f"{name}: http://{host}:{sock.getsockname()[1]}/mcp", err=True)
    run_until_signalled(functools.partial(sdk_serving.serve_http, server, sock, host))


# HTTP client libraries log every request at INFO: one line per relayed message would bury the
# server's own lines (upstreams failing, notices) on stderr.
QUIET_LOGGERS = ("httpx", "httpx2", "httpcore")
# One character each: a line break or a terminal control in a message stays on its log line,
# written as an escape (a peer's text cannot start a line that looks like one of ours).
_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))} | {
    0x09: "\t",
    0x0A: "\\n",
    0x0D: "\\r",
}


class PlainLines(logging.Formatter):
    """`LEVEL logger: message`, one line per record whatever the terminal's width (a traceback,
    for a genuine bug only, follows on the lines after it). uvicorn's `uvicorn.error` logger, which
    says what the server does ("Started server process"), is shown as `uvicorn`.

    A record whose exception is only a peer that cannot be reached or went away (the SDK's HTTP
    client logs "Error in post_writer" with the whole traceback when a gateway's HTTP upstream
    stops) is an ordinary outcome: it stays on its line, the error's type and text at its end."""

    def format(self, record: logging.LogRecord) -> str:
        lost = _unreachable(record.exc_info[1]) if record.exc_info else None
        if lost is None:
            return super().format(record)
        line = super().format(logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None}))
        return f"{line} ({type(lost).__name__}: {str(lost).translate(_ESCAPES)})"

    def formatMessage(self, record: logging.LogRecord) -> str:
        name = "uvicorn" if record.name == "uvicorn.error" else record.name
        return f"{record.levelname} {name}: {record.message.translate(_ESCAPES)}"


def _unreachable(exc: BaseException | None) -> BaseException | None:
    """The first error of `exc` when all it holds (through exception groups) says a peer could not
    be reached or closed the connection; else None."""
    import anyio
    import httpx2

    if isinstance(exc, BaseExceptionGroup):
        found = [_unreachable(inner) for inner in exc.exceptions]
        return found[0] if found and all(f is not None for f in found) else None
    lost = (httpx2.TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError)
    return exc if isinstance(exc, lost) else None


def plain_logs(level: int = logging.INFO) -> None:
    """Every log record of a server command, ours, the SDK's and uvicorn's alike, as one plain line
    on stderr (`PlainLines`) from `level` up; the HTTP clients' only from WARNING up. Call it
    before the server is built: the SDK's `MCPServer` installs a rich handler, which draws boxes
    and wraps one record over many lines on a narrow terminal, unless logging is configured
    already (as here, or by an embedder: then this leaves the handlers alone)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PlainLines())
    logging.basicConfig(level=level, handlers=[handler])
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)

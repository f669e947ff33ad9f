"""What the server commands (`serve-reference`, `serve-data`, `gateway`) share beyond the socket."""

from __future__ import annotations

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

"""The configuration file: where it lives, reading it, and opening the audit sink it names.

One TOML file holds the policy (``[default]``, ``[[servers]]``: parsed by core/policy.py) and the
audit settings (``[audit]``: parsed here). Every key is optional; docs/guardrails.md lists them
with their defaults. Paths follow the XDG base directories:

- config: ``$MCP_ELICIT_CONFIG``, else ``$XDG_CONFIG_HOME/mcp-elicit/config.toml``, else
  ``~/.config/mcp-elicit/config.toml``;
- audit database: ``$MCP_ELICIT_AUDIT_DB``, else ``$XDG_DATA_HOME/mcp-elicit/audit.sqlite3``, else
  ``~/.local/share/mcp-elicit/audit.sqlite3``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from mcp_elicit.audit.base import AuditSink
from mcp_elicit.core.consent import DEFAULT_LEVEL, LEVELS, Level
from mcp_elicit.core.policy import Policy, load_policy
from mcp_elicit.errors import ConfigError

__all__ = [
    "AUDIT_DB_ENV",
    "CONFIG_ENV",
    "AuditConfig",
    "Config",
    "audit_location",
    "default_audit_db_path",
    "default_config_path",
    "load_config",
    "open_audit_sink",
    "parse_config",
]

CONFIG_ENV: Final = "MCP_ELICIT_CONFIG"
AUDIT_DB_ENV: Final = "MCP_ELICIT_AUDIT_DB"

OnWriteError = Literal["decline", "cancel", "proceed"]
SinkKind = Literal["sqlite", "jsonl", "postgres"]

# Fail closed: when the audit record cannot be written, the elicitation is declined, so nothing
# happens that the trail does not show. "proceed" trades that for availability.
DEFAULT_ON_WRITE_ERROR: Final[OnWriteError] = "decline"


def default_config_path() -> Path:
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mcp-elicit" / "config.toml"


def default_audit_db_path() -> Path:
    env = os.environ.get(AUDIT_DB_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "mcp-elicit" / "audit.sqlite3"


@dataclass(frozen=True, slots=True)
class AuditConfig:
    """The ``[audit]`` table: how much to record, where, and what to do when writing fails."""

    level: Level = DEFAULT_LEVEL
    on_write_error: OnWriteError = DEFAULT_ON_WRITE_ERROR
    sink: SinkKind = "sqlite"
    path: Path | None = None  # sqlite or jsonl file; None: default_audit_db_path()
    postgres: str | None = None  # libpq URL for sink = "postgres"
    table: str = "mcp_elicit_audit"
    checkpoint: Path | None = None  # keyed checkpoint file (key in $MCP_ELICIT_AUDIT_KEY)
    # sqlite: what a committed record survives, "process_crash" (default) or "power_loss" (fsync each)
    durability: str = "process_crash"


@dataclass(frozen=True, slots=True)
class Config:
    policy: Policy = field(default_factory=Policy)
    audit: AuditConfig = field(default_factory=AuditConfig)
    path: Path | None = None


def _choice(table: dict[str, Any], key: str, choices: tuple[str, ...], default: str) -> Any:
    value = table.get(key, default)
    if value not in choices:
        raise ConfigError(f"audit.{key}", f"must be one of {', '.join(choices)}, not {value!r}")
    return value


def _audit(table: Any) -> AuditConfig:
    if table is None:
        return AuditConfig()
    if not isinstance(table, dict):
        raise ConfigError("audit", "must be a table")
    known = {"level", "on_write_error", "sink", "path", "postgres", "table", "checkpoint", "durability"}
    for key in table:
        if key not in known:
            raise ConfigError(f"audit.{key}", f"unknown key (expected one of {', '.join(sorted(known))})")
    for key in ("path", "postgres", "table", "checkpoint"):
        if key in table and (not isinstance(table[key], str) or not table[key]):
            raise ConfigError(f"audit.{key}", "must be a non-empty string")
    sink = _choice(table, "sink", ("sqlite", "jsonl", "postgres"), "sqlite")
    if sink == "postgres" and "postgres" not in table:
        raise ConfigError("audit.postgres", 'sink = "postgres" needs a postgres = "postgresql://..." URL')
    return AuditConfig(
        level=_choice(table, "level", LEVELS, DEFAULT_LEVEL),
        on_write_error=_choice(
            table, "on_write_error", ("decline", "cancel", "proceed"), DEFAULT_ON_WRITE_ERROR
        ),
        sink=sink,
        path=Path(table["path"]).expanduser() if "path" in table else None,
        postgres=table.get("postgres"),
        table=table.get("table", "mcp_elicit_audit"),
        checkpoint=Path(table["checkpoint"]).expanduser() if "checkpoint" in table else None,
        durability=_choice(table, "durability", ("process_crash", "power_loss"), "process_crash"),
    )


def parse_config(text: str, path: str = "") -> Config:
    """Parse configuration `text`; errors are ConfigError naming the key (and `path`)."""
    try:
        policy = load_policy(text)
        audit = _audit(tomllib.loads(text).get("audit"))
    except ConfigError as exc:
        raise ConfigError(exc.key, exc.problem, path) from exc
    return Config(policy=policy, audit=audit, path=Path(path) if path else None)


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read the configuration file. A missing file at the default path means all defaults; a
    missing file that was named explicitly (argument or ``$MCP_ELICIT_CONFIG``) is a ConfigError."""
    explicit = path is not None or bool(os.environ.get(CONFIG_ENV))
    target = Path(path) if path is not None else default_config_path()
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        if explicit:
            raise ConfigError("", "file not found", str(target)) from exc
        return Config()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"cannot read: {exc}", str(target)) from exc
    return parse_config(text, str(target))


def audit_location(audit: AuditConfig) -> str:
    """Where the trail `audit` names lives: its file (SQLite or JSON Lines, at the default path
    when none is set) or its PostgreSQL URL. `open_audit_sink` writes there; the `mcp-elicit
    audit` commands read there by default."""
    if audit.sink == "postgres":
        return audit.postgres or ""
    if audit.sink == "jsonl":
        return str(audit.path or default_audit_db_path().with_suffix(".jsonl"))
    return str(audit.path or default_audit_db_path())


def open_audit_sink(audit: AuditConfig) -> AuditSink:
    """Open the sink `audit` names (creating its file or table); AuditWriteError when it cannot.

    With ``checkpoint`` set, the key comes from ``$MCP_ELICIT_AUDIT_KEY`` (ConfigError if absent).
    """
    from mcp_elicit.audit.checkpoint import Checkpoint, checkpoint_key_from_env

    cp = None if audit.checkpoint is None else Checkpoint(audit.checkpoint, checkpoint_key_from_env())
    where = audit_location(audit)
    if audit.sink == "postgres":
        from mcp_elicit.audit.postgres import PostgresAuditSink

        return PostgresAuditSink(where, table=audit.table, level=audit.level, checkpoint=cp)
    if audit.sink == "jsonl":
        from mcp_elicit.audit.jsonl import JsonlAuditSink

        return JsonlAuditSink(where, level=audit.level, checkpoint=cp)
    from mcp_elicit.audit.sqlite import SqliteAuditSink

    return SqliteAuditSink(
        where,
        level=audit.level,
        checkpoint=cp,
        durability="power_loss" if audit.durability == "power_loss" else "process_crash",
    )

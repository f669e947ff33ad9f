"""The configuration file: default paths, the [audit] table, and opening the sink it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_elicit.audit.jsonl import JsonlAuditSink
from mcp_elicit.audit.sqlite import SqliteAuditSink
from mcp_elicit.config import (
    AuditConfig,
    Config,
    default_audit_db_path,
    default_config_path,
    load_config,
    open_audit_sink,
    parse_config,
)
from mcp_elicit.core.policy import Policy
from mcp_elicit.errors import ConfigError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("MCP_ELICIT_CONFIG", "MCP_ELICIT_AUDIT_DB", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_default_paths_follow_home_then_xdg_then_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    assert default_config_path() == home / ".config" / "mcp-elicit" / "config.toml"
    assert default_audit_db_path() == home / ".local" / "share" / "mcp-elicit" / "audit.sqlite3"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xc"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xd"))
    assert default_config_path() == tmp_path / "xc" / "mcp-elicit" / "config.toml"
    assert default_audit_db_path() == tmp_path / "xd" / "mcp-elicit" / "audit.sqlite3"
    monkeypatch.setenv("MCP_ELICIT_CONFIG", str(tmp_path / "c.toml"))
    monkeypatch.setenv("MCP_ELICIT_AUDIT_DB", str(tmp_path / "a.db"))
    assert default_config_path() == tmp_path / "c.toml"
    assert default_audit_db_path() == tmp_path / "a.db"


def test_a_missing_default_file_means_every_default() -> None:
    assert load_config() == Config()


def test_a_missing_file_named_explicitly_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.toml")
    assert info.value.path == str(tmp_path / "nope.toml")
    monkeypatch.setenv("MCP_ELICIT_CONFIG", str(tmp_path / "also-nope.toml"))
    with pytest.raises(ConfigError):
        load_config()


def test_the_file_holds_the_policy_and_the_audit_settings(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[default]\nform = "deny"\n\n[audit]\nlevel = "request"\non_write_error = "proceed"\n'
        'sink = "jsonl"\npath = "~/trail.jsonl"\n',
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.policy == Policy(form="deny")
    assert config.audit == AuditConfig(
        level="request", on_write_error="proceed", sink="jsonl", path=Path("~/trail.jsonl").expanduser()
    )
    assert config.path == path


def test_the_audit_defaults_are_metadata_sqlite_and_fail_closed() -> None:
    assert parse_config("").audit == AuditConfig(level="metadata", on_write_error="decline", sink="sqlite")


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('[audit]\nlevel = "all"', "audit.level"),
        ('[audit]\non_write_error = "ignore"', "audit.on_write_error"),
        ('[audit]\nsink = "s3"', "audit.sink"),
        ('[audit]\nsink = "postgres"', "audit.postgres"),
        ("[audit]\npath = 3", "audit.path"),
        ('[audit]\ndurability = "eventually"', "audit.durability"),
        ("[audit]\nlevle = 'none'", "audit.levle"),
        ("audit = 1", "audit"),
        ("[default]\nform = 'maybe'", "default.form"),
    ],
)
def test_a_bad_audit_or_policy_key_is_named_with_the_file(text: str, key: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert (info.value.key, info.value.path) == (key, str(path))


def test_open_audit_sink_opens_the_configured_kind(tmp_path: Path) -> None:
    sqlite = open_audit_sink(AuditConfig(path=tmp_path / "a.sqlite3", level="none"))
    assert isinstance(sqlite, SqliteAuditSink)
    assert sqlite.level == "none"
    sqlite.close()
    jsonl = open_audit_sink(AuditConfig(sink="jsonl", path=tmp_path / "a.jsonl"))
    assert isinstance(jsonl, JsonlAuditSink)
    jsonl.close()


def test_power_loss_durability_opens_a_sqlite_trail_that_syncs_every_commit(tmp_path: Path) -> None:
    config = parse_config(f'[audit]\npath = "{tmp_path / "a.sqlite3"}"\ndurability = "power_loss"\n')
    sink = open_audit_sink(config.audit)
    assert isinstance(sink, SqliteAuditSink)
    assert sink.durability == "power_loss"
    sink.close()


def test_the_default_sink_is_the_sqlite_file_at_the_default_path(tmp_path: Path) -> None:
    sink = open_audit_sink(AuditConfig())
    sink.close()
    assert (tmp_path / "home" / ".local" / "share" / "mcp-elicit" / "audit.sqlite3").is_file()

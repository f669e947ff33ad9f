"""The TOML configuration and catalog: tags, thresholds per engine and table, fail-closed switches."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_elicit.apps.data.catalog import DataConfig, config_from_mapping, load_config
from mcp_elicit.apps.data.engine import ColumnInfo, TableInfo
from mcp_elicit.apps.data.guard import DEFAULT_THRESHOLD_ROWS, FailClosed
from mcp_elicit.errors import ConfigError

TABLE = TableInfo(
    "main",
    "customers",
    (
        ColumnInfo("email", "TEXT"),
        ColumnInfo("segment", "TEXT", "non-pii"),
        ColumnInfo("note", "TEXT", "Sensitive"),
    ),
)

EXAMPLE = """
[guard]
pii_tags = ["pii", "sensitive"]
max_rows = 50
fail_closed = { estimate = false }

[thresholds]
postgres = 5000

[tables."main.customers"]
threshold = 10
[tables."main.customers".columns]
email = "pii"
"""


def test_the_example_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "catalog.toml"
    path.write_text(EXAMPLE)
    config = load_config(path)
    assert config.max_rows == 50
    assert config.fail_closed == FailClosed(estimate=False)
    assert config.thresholds("postgres", "main").total == 5000
    assert config.thresholds("duckdb", "main").total == DEFAULT_THRESHOLD_ROWS
    assert config.thresholds("duckdb", "main").per_table == {"main.customers": 10}
    pii = config.pii_columns([TABLE], {("main.customers", c.name) for c in TABLE.columns}, "main")
    assert [(c.column, c.tags) for c in pii] == [("email", ("pii",)), ("note", ("sensitive",))]


def test_only_columns_the_query_reads_are_reported() -> None:
    config = config_from_mapping({"tables": {"customers": {"columns": {"email": "pii"}}}})
    assert config.pii_columns([TABLE], {("main.customers", "segment")}, "main") == ()
    assert [c.column for c in config.pii_columns([TABLE], {("main.customers", "email")}, "main")] == ["email"]


def test_no_file_means_the_defaults() -> None:
    assert load_config(None) == DataConfig()


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"guard": {"bogus": 1}}, "guard.bogus"),
        ({"guard": {"max_rows": 0}}, "guard.max_rows"),
        ({"guard": {"fail_closed": {"estimate": "no"}}}, "guard.fail_closed"),
        ({"guard": {"fail_closed": {"typo": True}}}, "guard.fail_closed.typo"),
        ({"thresholds": {"duckdb": -1}}, "thresholds.duckdb"),
        ({"tables": {"t": {"columns": {"c": 3}}}}, "tables.t.columns.c"),
        ({"extra": {}}, "extra"),
    ],
)
def test_a_bad_key_or_value_is_a_config_error_naming_it(data: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_mapping(data)
    assert caught.value.key == key


def test_an_unreadable_or_broken_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[guard\n")
    with pytest.raises(ConfigError):
        load_config(bad)

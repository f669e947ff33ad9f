"""The gateway's configuration and its naming rule."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_elicit.core.gateway_names import SEPARATOR, offered_names
from mcp_elicit.errors import ConfigError
from mcp_elicit.gateway import parse_config


def test_an_mcp_servers_file_gives_stdio_and_http_upstreams_with_their_settings() -> None:
    config = parse_config(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"command": "files-server", "args": ["--root", "."], "env": {"A": "1"}},
                    "tickets": {
                        "url": "https://t.example/mcp",
                        "headers": {"X": "y"},
                        "noElicitation": "browser",
                    },
                },
                "users": {"tok": "alice"},
            }
        )
    )
    files, tickets = config.upstreams
    assert files.argv == ("files-server", "--root", ".")
    assert dict(files.env) == {"A": "1"}
    assert files.no_elicitation == "refuse"
    assert tickets.url == "https://t.example/mcp"
    assert dict(tickets.headers) == {"X": "y"}
    assert tickets.no_elicitation == "browser"
    assert dict(config.users) == {"tok": "alice"}


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("not json", "config"),
        ("{}", "mcpServers"),
        ('{"mcpServers": {}}', "mcpServers"),
        ('{"mcpServers": {"a b": {"command": "x"}}}', "mcpServers.a b"),
        ('{"mcpServers": {"a": {}}}', "mcpServers.a"),
        ('{"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}', "mcpServers.a"),
        ('{"mcpServers": {"a": {"url": "ftp://h"}}}', "mcpServers.a.url"),
        ('{"mcpServers": {"a": {"command": "x", "args": "y"}}}', "mcpServers.a.args"),
        ('{"mcpServers": {"a": {"command": "x", "env": {"A": 1}}}}', "mcpServers.a.env"),
        ('{"mcpServers": {"a": {"command": "x", "noElicitation": "ignore"}}}', "mcpServers.a.noElicitation"),
        ('{"mcpServers": {"a": {"command": "x"}}, "users": ["t"]}', "users"),
        ('{"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}', "mcpServers.a.disabled"),
        ('{"mcpServers": {"a": {"command": "x", "disabled": true}}}', "mcpServers"),
    ],
)
def test_a_malformed_configuration_is_a_config_error_naming_the_key(raw: str, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(raw)
    assert err.value.key == key


def test_a_name_offered_once_stays_bare_and_a_shared_one_is_joined_with_its_server() -> None:
    names = offered_names({"files": ["read", "search"], "web": ["search"]})
    assert names == {
        "read": ("files", "read"),
        f"files{SEPARATOR}search": ("files", "search"),
        f"web{SEPARATOR}search": ("web", "search"),
    }


tool = st.text(alphabet="abcd_", min_size=1, max_size=6)


@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "a_b", "a__b", "b__c"]), st.lists(tool, max_size=6), max_size=4
    )
)
def test_offered_names_are_unique_stable_and_lead_back_to_every_tool(listings: dict[str, list[str]]) -> None:
    names = offered_names(listings)
    assert names == offered_names(dict(reversed(list(listings.items()))))  # order does not matter
    assert set(names.values()) == {(s, n) for s, items in listings.items() for n in items}
    assert len(names) == len(set(names.values()))


def test_a_joined_name_that_equals_another_servers_joined_name_loses_no_tool() -> None:
    names = offered_names({"a": ["b__c", "x"], "a__b": ["c", "x"]})
    assert sorted(names.values()) == [("a", "b__c"), ("a", "x"), ("a__b", "c"), ("a__b", "x")]


def test_the_gateway_logs_its_own_lines_but_not_every_http_request() -> None:
    import logging

    from mcp_elicit.cli.gateway import log_to_stderr
    from mcp_elicit.cli.serving import QUIET_LOGGERS

    log_to_stderr()
    for name in QUIET_LOGGERS:
        assert not logging.getLogger(name).isEnabledFor(logging.INFO)

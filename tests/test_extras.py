"""A client, or a server kit without persistence, needs none of the optional dependencies; a part
whose extra is missing says which extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcp_elicit.errors import ConfigError

OPTIONAL = ("duckdb", "sqlglot", "trino", "psycopg", "redis")


def test_the_client_and_server_kits_load_without_any_optional_dependency() -> None:
    code = (
        "import sys\n"
        "import mcp_elicit.client, mcp_elicit.server, mcp_elicit.cli, mcp_elicit.audit\n"
        "from mcp_elicit import ElicitClient, ask, install\n"
        "from mcp_elicit.reference import build_reference_server\n"
        "build_reference_server()\n"
        f"print(sorted(m for m in {OPTIONAL!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_the_data_server_without_its_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp_elicit.apps.data as data

    for name in [m for m in list(sys.modules) if m.startswith("mcp_elicit.apps.data.")]:
        monkeypatch.delitem(sys.modules, name)
    for missing_module in ("duckdb", "sqlglot"):
        monkeypatch.setitem(sys.modules, missing_module, None)  # as if not installed
    with pytest.raises(ConfigError) as info:
        data.__getattr__("build_data_server")
    assert info.value.key == "dependencies"
    assert "mcp-elicit[data]" in info.value.problem

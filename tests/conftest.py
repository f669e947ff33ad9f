"""Settings for the whole suite."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# CI runs on a shared 2-core machine: a slow example is load, not a bug. Every property test still
# explores random inputs; only the timing checks are off.
settings.register_profile("mcp-elicit", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("mcp-elicit")


@pytest.fixture(autouse=True, scope="session")
def _a_home_of_the_tests_own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Commands started with the SDK's or Node's default stdio environment keep only HOME (not the
    XDG variables below), and module fixtures start before them: HOME too is the tests' own, so no
    test writes the machine's configuration or audit trail."""
    home = tmp_path_factory.mktemp("home")
    saved = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    yield
    if saved is None:
        os.environ.pop("HOME", None)
    else:
        os.environ["HOME"] = saved


@pytest.fixture(autouse=True)
def _fresh_user_config_and_audit_trail(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mcp-elicit call` and `connect` read ~/.config/mcp-elicit and write ~/.local/share/mcp-elicit by
    default: every test (and every command it starts) gets fresh, empty ones instead of the machine's."""
    base = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(base / "data"))
    monkeypatch.delenv("MCP_ELICIT_CONFIG", raising=False)
    monkeypatch.delenv("MCP_ELICIT_AUDIT_DB", raising=False)

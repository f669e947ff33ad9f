"""A long-running server freezes what start-up made, so full garbage collections skip it."""

from __future__ import annotations

import gc
import types
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from mcp_elicit.server import freeze_startup_heap


@pytest.fixture
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the rest of the suite runs with the collector as it was


def test_freezing_takes_what_is_alive_out_of_every_collection(unfrozen: None) -> None:
    marker: list[object] = [object()]  # a container: tracked by the collector
    assert any(o is marker for o in gc.get_objects())
    frozen = freeze_startup_heap()
    assert frozen == gc.get_freeze_count() > 0
    assert not any(o is marker for o in gc.get_objects())  # no generation holds it now
    assert marker[0] is not None  # still alive: nothing was freed


class Recorder:
    """Stands in for the SDK server a command builds; `serving` records when it is served over stdio."""

    def __init__(self, events: list[str]) -> None:
        self.events = events


def record_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_elicit.server import sdk_serving

    async def serve_stdio(server: Recorder, stop: Any = None) -> None:
        server.events.append("run stdio")

    monkeypatch.setattr(sdk_serving, "serve_stdio", serve_stdio)


def test_serve_reference_freezes_the_startup_heap_before_it_serves(
    monkeypatch: pytest.MonkeyPatch, unfrozen: None
) -> None:
    from mcp_elicit import reference
    from mcp_elicit.cli import main
    from mcp_elicit.server import heap

    events: list[str] = []
    monkeypatch.setattr(reference, "build_reference_server", lambda stdio, audit=None: Recorder(events))
    monkeypatch.setattr(heap, "freeze_startup_heap", lambda: events.append("freeze") or 0)
    record_serving(monkeypatch)
    result = CliRunner().invoke(main, ["serve-reference", "--transport", "stdio"])
    assert result.exit_code == 0, result.output
    assert events == ["freeze", "run stdio"]


def test_serve_data_freezes_the_startup_heap_before_it_serves(
    monkeypatch: pytest.MonkeyPatch, unfrozen: None
) -> None:
    from mcp_elicit.apps.data import launch
    from mcp_elicit.server import heap

    events: list[str] = []
    engine = types.SimpleNamespace(close=lambda: events.append("close engine"))
    monkeypatch.setattr(launch, "open_engine", lambda engine_name, dsn: engine)
    monkeypatch.setattr(launch, "build_data_server", lambda *args: Recorder(events))
    monkeypatch.setattr(heap, "freeze_startup_heap", lambda: events.append("freeze") or 0)
    record_serving(monkeypatch)
    launch.serve_data(transport="stdio", audit_db="")
    assert events == ["freeze", "run stdio", "close engine"]


def test_the_gateway_freezes_the_startup_heap_before_it_serves(
    monkeypatch: pytest.MonkeyPatch, unfrozen: None, tmp_path: Any
) -> None:
    import json

    import anyio

    from mcp_elicit.cli import main
    from mcp_elicit.server import heap

    events: list[str] = []
    servers = tmp_path / "servers.json"
    servers.write_text(
        json.dumps({"mcpServers": {"ref": {"command": "mcp-elicit", "args": ["serve-reference"]}}})
    )
    monkeypatch.setattr(heap, "freeze_startup_heap", lambda: events.append("freeze") or 0)
    monkeypatch.setattr(anyio, "run", lambda func, *args: events.append("serve"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    result = CliRunner().invoke(main, ["gateway", "--config", str(servers)])
    assert result.exit_code == 0, result.output
    assert events == ["freeze", "serve"]

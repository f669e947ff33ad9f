from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gateway.matrix import TS_ENV, gateway, listening, ts_server_http, write_matrix


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The matrix's mcpServers file (tests/gateway/matrix.py), with the TypeScript server over HTTP
    running for the module."""
    with listening(ts_server_http(), TS_ENV) as ts_web:
        yield write_matrix(tmp_path_factory.mktemp("matrix") / "servers.json", ts_web.url)


@pytest.fixture(scope="module")
def gateway_url(config: Path) -> Iterator[str]:
    """`mcp-elicit gateway --listen 127.0.0.1:0` over the matrix file, one per module."""
    with listening(gateway(config, "--listen", "127.0.0.1:0")) as running:
        yield running.url

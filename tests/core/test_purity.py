"""core/ must not import anything that does I/O (design rule: the sans-I/O core)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import mcp_elicit.core

FORBIDDEN = (
    "mcp",
    "mcp_types",
    "anyio",
    "asyncio",
    "socket",
    "httpx",
    "starlette",
    "uvicorn",
    "rich",
    "prompt_toolkit",
    "sqlite3",
    "redis",
    "psycopg",
    "subprocess",
    "webbrowser",
)


def test_importing_every_core_module_loads_no_io_module() -> None:
    modules = [m.name for m in pkgutil.iter_modules(mcp_elicit.core.__path__, "mcp_elicit.core.")]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""

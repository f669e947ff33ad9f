"""The rules between the package's rooms, read from the source (every import statement, including
those inside functions), so a change that breaks one fails here with the edge that broke it.

Rooms: core/ (pure decisions), server/ and client/ (the two kits), ui/ (what a person sees),
audit/ (the sinks), gateway/ (the kits back to back), the error tree (errors.py). Programs built
on them (cli, reference, demo, conformance_tools, apps/) are users of the library like any other
and may use the SDK directly.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "mcp_elicit"
SDK_PACKAGES = ("mcp", "mcp_types", "fastmcp")
LIBRARY_ROOMS = ("core", "server", "client", "ui", "audit", "gateway")
# The only modules of the library rooms that may import the SDK (or FastMCP): one door per side.
BOUNDARY = frozenset(
    {
        "mcp_elicit.server.sdk",
        "mcp_elicit.server.sdk_fastmcp",
        "mcp_elicit.server.sdk_serving",
        "mcp_elicit.client.sdk",
        "mcp_elicit.client.sdk_transport",
        "mcp_elicit.client.sdk_oauth",
        "mcp_elicit.gateway.sdk",
    }
)
MAX_MODULE_LINES = 500


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node except those under `if TYPE_CHECKING:` (imports only a type checker follows)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imports_of(name: str) -> Iterator[tuple[str, int]]:
    """Every module `name` imports at run time (also inside functions), with the line; `from a import
    b` names a.b when that is a module."""
    path = modules()[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                yield (candidate if candidate in modules() else base), node.lineno


def room_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LIBRARY_ROOMS else None


def internal_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules()}
    for name in modules():
        for target, _ in imports_of(name):
            if target in modules() and target != name:
                graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (as a path that returns to its start), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def package_is_parent(importer: str, imported: str) -> bool:
    """A module importing its own package's __init__ (or an ancestor's) is not an edge we judge."""
    return importer.startswith(imported + ".")


def test_core_imports_nothing_above_it() -> None:
    bad = [
        (name, target, line)
        for name in modules()
        if room_of(name) == "core"
        for target, line in imports_of(name)
        if target.startswith(PACKAGE + ".")
        and not target.startswith("mcp_elicit.core")
        and target != "mcp_elicit.errors"
    ]
    assert bad == []


def test_only_the_boundary_modules_import_the_sdk() -> None:
    bad = [
        (name, target, line)
        for name in modules()
        if room_of(name) is not None and name not in BOUNDARY
        for target, line in imports_of(name)
        if target.split(".")[0] in SDK_PACKAGES
    ]
    assert bad == []


def test_the_client_kit_does_not_import_a_ui() -> None:
    bad = [
        (name, target, line)
        for name in modules()
        if room_of(name) == "client"
        for target, line in imports_of(name)
        if target.startswith("mcp_elicit.ui")
    ]
    assert bad == []


def test_the_audit_sinks_do_not_import_the_command_line() -> None:
    bad = [
        (name, target, line)
        for name in modules()
        if room_of(name) == "audit"
        for target, line in imports_of(name)
        if target.split(".")[0] == "click" or target.startswith("mcp_elicit.cli")
    ]
    assert bad == []


def test_there_is_no_import_cycle_anywhere_in_the_package() -> None:
    graph = internal_graph()
    for name, targets in graph.items():
        graph[name] = {t for t in targets if not package_is_parent(name, t)}
    assert find_cycle(graph) is None


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_is_over_the_size_limit(name: str) -> None:
    lines = modules()[name].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_MODULE_LINES, f"{name} has {lines} lines"


# The checks above must be able to fail: each is shown a module that breaks its rule.


def test_the_cycle_finder_finds_a_cycle_it_is_shown() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_an_sdk_import_outside_the_boundary_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = SRC / PACKAGE / "core" / "forms.py"
    original = fake.read_text(encoding="utf-8")
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: original + "\nimport mcp\n")
    targets = [target for target, _ in imports_of("mcp_elicit.core.forms")]
    assert "mcp" in targets

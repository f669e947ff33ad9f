"""Every limit is a named constant and is documented in docs/security.md with its value."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "security.md"


def numeric_constants() -> dict[str, tuple[str, object]]:
    """Public module-level UPPER_CASE names bound to a number, across src/: name -> (module, value)."""
    found: dict[str, tuple[str, object]] = {}
    for path in sorted((ROOT / "src" / "mcp_elicit").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            target = value = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.value
            if not isinstance(target, ast.Name) or value is None:
                continue
            name = target.id
            if not re.fullmatch(r"[A-Z][A-Z0-9_]+", name):
                continue
            try:
                literal = ast.literal_eval(value)
            except ValueError:
                continue
            # JSON-RPC error codes (negative) and format versions are protocol facts, not limits.
            if name.endswith("_VERSION") or (isinstance(literal, int | float) and literal < 0):
                continue
            if isinstance(literal, int | float) and not isinstance(literal, bool):
                found[name] = (str(path.relative_to(ROOT)), literal)
    return found


def test_every_numeric_limit_in_the_code_is_listed_in_the_security_doc() -> None:
    text = DOC.read_text()
    missing = sorted(
        f"{name} ({module})" for name, (module, _) in numeric_constants().items() if f"`{name}`" not in text
    )
    assert missing == []

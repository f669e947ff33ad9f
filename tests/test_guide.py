"""The examples of README.md and docs/*.md run, top to bottom, in one namespace: docs cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]  # README's server example too
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.mark.parametrize("guide", [g for g in GUIDES if BLOCK.search(g.read_text())], ids=lambda p: p.name)
def test_every_python_block_in_the_docs_runs(guide: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{guide.stem}"}
    for number, block in enumerate(BLOCK.findall(guide.read_text()), start=1):
        code = compile(block, f"{guide.name}#block{number}", "exec", dont_inherit=True)
        exec(code, namespace)

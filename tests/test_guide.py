"""The guide's examples run, top to bottom, in one namespace: the docs cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDES = sorted((Path(__file__).resolve().parents[1] / "docs").glob("*.md"))
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.mark.parametrize("guide", [g for g in GUIDES if BLOCK.search(g.read_text())], ids=lambda p: p.name)
def test_every_python_block_in_the_docs_runs(guide: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{guide.stem}"}
    for number, block in enumerate(BLOCK.findall(guide.read_text()), start=1):
        code = compile(block, f"{guide.name}#block{number}", "exec", dont_inherit=True)
        exec(code, namespace)

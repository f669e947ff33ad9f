"""`mcp-elicit call`'s options that contradict each other: a usage error before anything starts."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcp_elicit.cli import main


def test_call_refuses_scripted_answers_together_with_the_browser_ui(tmp_path: Path) -> None:
    """Both say who answers the server's questions; nothing is started when they disagree."""
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"steps": []}))
    args = ["call", "--server", "never-started", "--tool", "t", "--answers", str(answers), "--ui", "browser"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "--answers" in result.output

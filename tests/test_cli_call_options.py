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


def test_the_report_lists_questions_not_the_automatic_rechecks_of_a_consented_page() -> None:
    from mcp_elicit.cli.call import questions_of
    from mcp_elicit.client import Elicitation, Outcome, Reply
    from mcp_elicit.client.ui_protocol import Requester
    from mcp_elicit.client.url_flow import URL_RECHECK_REASON

    params = {"mode": "url", "url": "https://example.org/k", "message": "m"}
    page = Elicitation(params=params, protocol="2026-07-28", requester=Requester("srv", "python srv.py"))
    asked = Outcome.of(page, Reply("accept", "person"))
    rechecks = [Outcome.of(page, Reply("accept", "person", reason=URL_RECHECK_REASON)) for _ in range(2)]
    declined = Outcome.of(page, Reply("decline", "person", reason=URL_RECHECK_REASON))
    assert questions_of([asked, *rechecks, declined]) == [asked, declined]

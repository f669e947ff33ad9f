"""`mcp-elicit check-form`: spec deviations and secret-seeking fields, from a file or stdin."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcp_elicit.cli import main
from mcp_elicit.core.form_report import form_report

GOOD = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SECRET = {"type": "object", "properties": {"api_key": {"type": "string", "title": "API key"}}}
NESTED = {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}


def run(document: object, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(main, ["check-form", "--json", *args, "-"], input=json.dumps(document))
    report: dict[str, object] = json.loads(result.output)
    # A CI gate: 1 on a block verdict, 0 otherwise.
    assert result.exit_code == (1 if report["verdict"] == "block" else 0), result.output
    return report


def test_a_plain_form_is_ok_and_valid() -> None:
    report = run(GOOD)
    assert (report["verdict"], report["valid"], report["schema_errors"]) == ("ok", True, [])
    assert report["fields"] == [{"name": "name", "verdict": "ok", "reasons": []}]


def test_a_form_asking_for_an_api_key_is_blocked_with_the_field_named() -> None:
    report = run({"message": "Paste it", "requestedSchema": SECRET})
    assert report["verdict"] == "block"
    assert report["valid"] is True
    (field,) = report["fields"]  # type: ignore[misc]
    assert field["name"] == "api_key"
    assert field["verdict"] == "block"


def test_a_nested_object_is_a_schema_error_naming_field_and_keyword() -> None:
    report = run(
        {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {"requestedSchema": NESTED}}
    )
    assert report["verdict"] == "block"
    assert report["valid"] is False
    assert any(e["field"] == "address" for e in report["schema_errors"])  # type: ignore[union-attr]


def test_the_revision_changes_what_is_valid() -> None:
    multi = {
        "type": "object",
        "properties": {"t": {"type": "array", "items": {"type": "string", "enum": ["a"]}}},
    }
    assert run(multi, "--revision", "2025-11-25")["valid"] is True
    assert run(multi, "--revision", "2025-06-18")["valid"] is False


def test_input_that_is_not_json_exits_2_as_documented() -> None:
    result = CliRunner().invoke(main, ["check-form", "-"], input="{nope")
    assert result.exit_code == 2


def test_a_blocked_form_exits_1_so_a_ci_step_fails() -> None:
    out = CliRunner().invoke(main, ["check-form", "-"], input=json.dumps(SECRET))
    assert out.exit_code == 1
    assert out.stdout.startswith("verdict: block")


def test_the_summary_never_prints_control_characters_from_the_form(tmp_path: Path) -> None:
    hostile = {"type": "object", "properties": {"x\u001b[31m": {"type": "string"}}}
    path = tmp_path / "form.json"
    path.write_text(json.dumps(hostile))
    out = CliRunner().invoke(main, ["check-form", str(path)])
    assert out.exit_code == 1, out.output  # blocked
    assert "\x1b" not in out.stdout
    assert out.stdout.startswith("verdict: block")


def test_the_report_function_accepts_a_bare_schema() -> None:
    assert form_report(GOOD)["verdict"] == "ok"

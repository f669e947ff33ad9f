"""`mcp-elicit check-url`: a thin shell over mcp_elicit.core.urls (spec rules U3, U4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from mcp_elicit.cli import main

KEYS = {"url", "verdict", "reasons", "canonical", "host_display", "registrable_domain"}


def _json_lines(output: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_json_mode_prints_one_object_per_url_in_order_U3() -> None:
    result = CliRunner().invoke(
        main,
        ["check-url", "--json", "https://www.example.com/a", "javascript:alert(1)", "https://paypa1.com/"],
    )
    assert result.exit_code == 0, result.output
    objects = _json_lines(result.output)
    assert [o["url"] for o in objects] == [
        "https://www.example.com/a",
        "javascript:alert(1)",
        "https://paypa1.com/",
    ]
    assert all(set(o) >= KEYS for o in objects)
    assert [o["verdict"] for o in objects] == ["ok", "block", "block"]
    assert objects[0]["registrable_domain"] == "example.com"
    assert objects[1]["reasons"] == ["scheme_not_allowed"]
    assert objects[2]["reasons"] == ["lookalike"]
    assert objects[2]["lookalike_of"] == "paypal.com"


def test_json_mode_escapes_non_ascii_so_bidi_controls_never_reach_the_terminal() -> None:
    result = CliRunner().invoke(
        main, ["check-url", "--json", "https://example.com/\u202egnp.exe", "https://b\u00fccher.de/"]
    )
    assert result.exit_code == 0
    assert result.output.isascii()
    first, second = _json_lines(result.output)
    assert first["reasons"] == ["bidi_chars"]
    assert second["host_display"] == "b\u00fccher.de"


def test_table_mode_shows_verdict_site_reasons_and_the_display_url() -> None:
    result = CliRunner().invoke(
        main, ["check-url", "https://shop.xn--bcher-kva.de/x", "https://p\u0430ypal.com/"]
    )
    assert result.exit_code == 0
    header, first, second = result.output.splitlines()
    assert header.split() == ["VERDICT", "SITE", "REASONS", "URL"]
    assert first.split() == ["warn", "b\u00fccher.de", "punycode", "https://shop.b\u00fccher.de/x"]
    assert second.split() == [
        "block",
        "xn--pypal-4ve.com",
        "mixed_script,lookalike_of:paypal.com,punycode",
        "https://xn--pypal-4ve.com/",
    ]


def test_table_mode_escapes_control_and_bidi_characters_of_an_unparseable_url() -> None:
    result = CliRunner().invoke(main, ["check-url", "https://exa\u202emple.com/\x1b[31m"])
    assert result.exit_code == 0
    assert "\u202e" not in result.output
    assert "\x1b" not in result.output
    assert "\\u202e" in result.output


def test_trust_makes_look_alikes_of_the_users_own_domain_block() -> None:
    result = CliRunner().invoke(
        main, ["check-url", "--json", "--trust", "mycorp.com", "https://rnycorp.com/"]
    )
    assert _json_lines(result.output)[0]["lookalike_of"] == "mycorp.com"


def test_no_http_loopback_refuses_plain_http_to_localhost_U4() -> None:
    args = ["check-url", "--json", "http://localhost:8080/"]
    assert _json_lines(CliRunner().invoke(main, args).output)[0]["verdict"] == "ok"
    refused = _json_lines(CliRunner().invoke(main, [*args[:2], "--no-http-loopback", args[2]]).output)[0]
    assert refused["verdict"] == "block"


def test_a_blocked_url_still_exits_zero_and_no_url_is_a_usage_error() -> None:
    assert CliRunner().invoke(main, ["check-url", "file:///etc/passwd"]).exit_code == 0
    assert CliRunner().invoke(main, ["check-url"]).exit_code == 2


def test_the_installed_command_runs_as_a_real_process() -> None:
    script = Path(sys.executable).with_name("mcp-elicit")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "mcp_elicit"]
    done = subprocess.run(
        [*command, "check-url", "--json", "https://www.example.com/", "data:text/html,hi"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [o["verdict"] for o in _json_lines(done.stdout)] == ["ok", "block"]

"""The `mcp-elicit` command. Each subcommand is a thin shell over a public function."""

from __future__ import annotations

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mcp-elicit")
def main() -> None:
    """Human input for the Model Context Protocol: forms, URL hand-offs, guardrails, audit."""


# Subcommands are registered below, one block each, in the order of the README.


# --- serve-reference -------------------------------------------------------------------------------------
@main.command("serve-reference")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (http only).")
@click.option("--port", type=int, default=8765, show_default=True, help="Port to listen on (http only).")
def serve_reference(transport: str, host: str, port: int) -> None:
    """Run the reference server (both protocol eras at once)."""
    from mcp_elicit.reference import build_reference_server

    server = build_reference_server()
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)


# --- check-url -------------------------------------------------------------------------------------------
@main.command("check-url")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per URL (JSON Lines).")
@click.option(
    "--trust",
    "trusted",
    multiple=True,
    metavar="DOMAIN",
    help="A domain you already trust; look-alikes of it are blocked. Repeatable.",
)
@click.option("--no-http-loopback", is_flag=True, help="Refuse plain http even for loopback hosts.")
@click.argument("url_args", metavar="URL...", nargs=-1, required=True)
def check_url_command(
    as_json: bool, trusted: tuple[str, ...], no_http_loopback: bool, url_args: tuple[str, ...]
) -> None:
    """Check URLs the way the client does before asking to open them (nothing is fetched).

    Exits 0 once every URL was checked, whatever the verdicts; read them from the output.
    """
    import json

    from mcp_elicit.core.urls import check_url, escape_for_display, verdict_as_json

    allow_http = not no_http_loopback
    verdicts = [check_url(raw, trusted_domains=trusted, allow_http_loopback=allow_http) for raw in url_args]
    if as_json:
        for v in verdicts:
            # ensure_ascii keeps bidi and control characters of a hostile URL out of the terminal
            click.echo(json.dumps(verdict_as_json(v), ensure_ascii=True))
        return
    rows: list[tuple[str, ...]] = [("VERDICT", "SITE", "REASONS", "URL")]
    for v in verdicts:
        reasons = [f"lookalike_of:{v.lookalike_of}" if r == "lookalike" else r for r in v.reasons]
        site = v.registrable_domain or v.parts.registrable_domain or "-"
        shown = v.display_url if v.canonical is not None else v.raw
        rows.append((v.verdict, site, ",".join(reasons) or "-", shown))
    rows = [tuple(escape_for_display(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo("  ".join([*padded, row[3]]))

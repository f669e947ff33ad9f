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

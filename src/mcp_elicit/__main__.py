"""`python -m mcp_elicit` and the `mcp-elicit` script: the command line, `mcp_elicit.cli.main`.

A Ctrl-C while the command line loads exits 130 with no traceback, as one while a command starts
does (`mcp_elicit.cli`), rather than Python's KeyboardInterrupt traceback.
"""

import sys


def run() -> None:
    """Load and run the command line; a Ctrl-C while it loads: exit 130."""
    try:
        from mcp_elicit.cli import main

        main()  # click's: it lets no KeyboardInterrupt out
    except KeyboardInterrupt:
        print(file=sys.stderr)  # ends the terminal's ^C echo, as the command line does
        raise SystemExit(130) from None


if __name__ == "__main__":
    run()

"""The `rooflab` console script's first code: Ctrl-C while the command's modules load ends as one line, exit 130.

Loading the CLI takes about half a second (typer, NumPy, the specs); an interrupt in that window used to end in a
bare KeyboardInterrupt traceback, since the app's own interrupt handling (cli.error_path.guarded) was not loaded
yet.
This module imports nothing heavy itself, and the package's __init__ loads its names lazily, so the window before
the handler below is Python's own start-up.
"""

import sys

#: As cli.EXIT_INTERRUPTED (128 + SIGINT), repeated so that this module needs nothing else loaded.
EXIT_INTERRUPTED = 130


def main() -> None:
    """Load the CLI, then run it (the CLI handles interrupts from then on)."""
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        try:
            sys.stderr.write("error: interrupted\n")
        except (OSError, ValueError, AttributeError):
            pass
        sys.exit(EXIT_INTERRUPTED)
    cli_main()

"""The `rooflab` console script's first code: Ctrl-C while the command's modules load ends as one line, exit 130.

Loading the CLI takes about half a second (typer, NumPy, the specs); an interrupt in that window used to end in a
bare KeyboardInterrupt traceback, since the app's own interrupt handling (cli.error_path.guarded) was not loaded
yet.
This module imports nothing heavy itself, and the package's __init__ loads its names lazily, so the window before
the handler below is Python's own start-up.

Two start-up costs of a command-line run are cut here, where only the console script (and `python -m rooflab`) runs,
never a program that imports rooflab:
- OpenBLAS's worker threads. NumPy's OpenBLAS starts one thread a core when NumPy loads, and they spin waiting for
  work: some 40 ms of CPU a run on 2 cores, taken from whatever else runs there (a second test worker, the
  compiler). rooflab's arrays are small, so one thread does (OPENBLAS_NUM_THREADS=1, unless the user set it; the
  variable is passed to the processes rooflab starts, as any other).
- The garbage collector's passes over the modules loading. The collector is off while the CLI loads (and, for
  `rooflab plot ...`, matplotlib, which every chart draws with: COMMAND_MODULES), and what loaded is frozen
  (gc.freeze: moved where no later collection walks it) before the collector is back on for the command, so a long
  sweep still frees its cycles. `rooflab plot capacity`: some 30 ms less CPU.
"""

import gc
import importlib
import os
import sys

#: As cli.EXIT_INTERRUPTED (128 + SIGINT), repeated so that this module needs nothing else loaded.
EXIT_INTERRUPTED = 130
#: The modules every command under a first word loads, loaded with the CLI (the collector off, then frozen).
COMMAND_MODULES = {"plot": ("matplotlib.figure", "matplotlib.backends.backend_agg")}


def _preload(module: str) -> None:
    """Import `module` now, or leave it to the command where it fails (an unknown MPLBACKEND, a warning made an
    error): the command imports it again and reports the problem as it always does."""
    try:
        importlib.import_module(module)
    except Exception:  # noqa: BLE001 - reported by the command, not here
        pass


def main() -> None:
    """Load the CLI, then run it (the CLI handles interrupts from then on)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    gc.disable()
    try:
        from .cli import main as cli_main
        from .output import finish_once_written

        for module in COMMAND_MODULES.get(sys.argv[1] if len(sys.argv) > 1 else "", ()):
            _preload(module)
    except KeyboardInterrupt:
        try:
            sys.stderr.write("error: interrupted\n")
        except (OSError, ValueError, AttributeError):
            pass
        sys.exit(EXIT_INTERRUPTED)
    gc.freeze()
    gc.enable()
    finish_once_written()        # a signal after the command's output is in place is ignored: it runs to its end
    cli_main()

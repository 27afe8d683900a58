"""The CLI's one error path: bad input prints one or two lines on stderr and exits 2, with no traceback.

`friendly` wraps every command (RooflabError, an OSError on a path, MemoryError -> one line, exit 2; any other
exception is a bug -> two lines, exit 70); `guarded` wraps the whole run (usage errors as two lines, standard
output watched by stdout.GuardedStdout, Ctrl-C as one line with exit 130).
"""

import functools
import os
import sys
from pathlib import Path
from typing import Callable, Optional

import typer

from ..errors import RooflabError, clip, clip_words
from ..output import ignore_interrupts_if_finishing
from .click_compat import ClickException, UsageError, get_current_context
from .stdout import EXIT_BROKEN_PIPE, BrokenPipe, GuardedStdout, StdoutError, stdout_closed

EXIT_BAD_INPUT = 2
#: Exit status after an interrupt (Ctrl-C), as shells report a process ended by SIGINT: 128 + 2.
EXIT_INTERRUPTED = 130
#: Exit status of an unexpected exception: a bug in rooflab, not bad input (EX_SOFTWARE).
EXIT_BUG = 70


class Interrupted(BaseException):
    """Ctrl-C while a command ran, carried past click's own KeyboardInterrupt handling (which prints a blank line)."""


def one_line(message: str) -> str:
    """click's messages on one line ("Choose from:\n\tgpu,\n\tmodel" -> "Choose from: gpu, model"), at most 300
    characters (a value typed at length is not echoed back whole)."""
    text = " ".join(message.split())
    return text if len(text) <= 300 else text[:297] + "..."


def error(message: str) -> None:
    """One 'error:' line on stderr (nothing when stderr is closed too)."""
    try:
        typer.echo(f"error: {clip_words(message)}", err=True)
    except (OSError, UnicodeEncodeError):
        pass


def fail(message: str) -> None:
    """Print a one- or two-line error on stderr and exit 2 (a very long word of it, a path, cut: errors.clip_words)."""
    typer.echo(f"error: {clip_words(message)}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def environment_error(args) -> Optional[str]:
    """What in the environment a command cannot run with, read before it runs: an unknown MPLBACKEND for the
    `plot` commands (matplotlib refuses it at import with a ValueError, which read as a bug in rooflab)."""
    words = list(args[0]) if args and args[0] is not None else sys.argv[1:]
    if words[:1] != ["plot"] or not os.environ.get("MPLBACKEND"):
        return None
    try:
        import matplotlib  # noqa: F401  (reads MPLBACKEND)
    except ValueError:
        return (f"MPLBACKEND={os.environ['MPLBACKEND']!r} is not a matplotlib backend; unset it or set "
                "MPLBACKEND=Agg")
    return None


def nul_argument(args) -> Optional[str]:
    """A command-line word holding a NUL byte, which no file name or value may hold (the system refuses such a
    path with a ValueError, not an OSError). A shell cannot pass one; a caller in Python (CliRunner) can."""
    words = list(args[0]) if args and args[0] is not None else sys.argv[1:]
    for word in words:
        if isinstance(word, str) and "\x00" in word:
            return f"{clip(word.replace(chr(0), ' '))!r}: a command-line word cannot hold a NUL character"
    return None


def guarded(run: Callable[[], object], args) -> None:
    """Run the command line (`run`: click's main with `args`) and exit with its status: usage errors as two lines
    on stderr (the message, then where to get help), exit 2; standard output watched by GuardedStdout (closed,
    full or a bad encoding: one line, exit 2; a broken pipe: a quiet exit 141); Ctrl-C: one line, exit 130, before
    the command writes its output; from then on, in the console script's process, Ctrl-C, SIGTERM and SIGHUP are
    ignored (output.finish_once_written) and the command ends with its own status."""
    if stdout_closed():
        error("standard output is closed; redirect it to a file or to /dev/null")
        sys.exit(EXIT_BAD_INPUT)
    problem = nul_argument(args) or environment_error(args)
    if problem:
        error(problem)
        sys.exit(EXIT_BAD_INPUT)
    original = sys.stdout
    watched = original if isinstance(original, GuardedStdout) else GuardedStdout(original)
    sys.stdout = watched
    try:
        rv = run()
        ignore_interrupts_if_finishing()      # done: an interrupt now (the exit, shutdown) changes nothing
        watched.flush()
    except UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "rooflab"
        error(one_line(exc.format_message()))
        typer.echo(f"see '{where} --help'", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except ClickException as exc:
        error(one_line(exc.format_message()))
        sys.exit(exc.exit_code)
    except StdoutError as exc:
        error(str(exc))
        sys.exit(EXIT_BAD_INPUT)
    except BrokenPipe:
        sys.exit(EXIT_BROKEN_PIPE)
    except (Interrupted, KeyboardInterrupt):
        error("interrupted")
        sys.exit(EXIT_INTERRUPTED)
    except typer.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):      # Ctrl-C while click parsed the options
            error("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        error("aborted")
        sys.exit(1)
    finally:
        sys.stdout = original
    sys.exit(rv if isinstance(rv, int) else 0)


def friendly(fn: Callable) -> Callable:
    """The one error path of a command: RooflabError (bad input) and an OSError on a path (too long, a folder, no
    space, read-only, no permission) -> one line on stderr naming it, exit 2; any other exception is a bug in
    rooflab -> two lines saying so and how to report it, exit 70 (ROOFLAB_TRACEBACK=1 shows the traceback)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            _refuse_empty(kwargs)
            return fn(*args, **kwargs)
        except RooflabError as exc:
            fail(str(exc))
        except (typer.Exit, typer.Abort, KeyboardInterrupt, ClickException):
            raise
        except MemoryError:
            typer.echo("error: out of memory; the workload is too large for this machine", err=True)
            raise typer.Exit(EXIT_BAD_INPUT)
        except OSError as exc:
            if exc.filename is None:          # not about a path the user gave: a bug, below
                _internal(exc)
            fail(path_error(exc))
        except Exception as exc:
            _internal(exc)

    return wrapper


def path_error(exc: OSError) -> str:
    """An OSError on a path as one line naming the path: 'cannot use <path>: File name too long'."""

    def text(name) -> str:
        return clip(os.fsdecode(name) if isinstance(name, (str, bytes, os.PathLike)) else str(name), 120)

    other = f" -> {text(exc.filename2)}" if exc.filename2 is not None else ""
    return f"cannot use {text(exc.filename)}{other}: {exc.strerror or exc}"


def _internal(exc: Exception) -> None:
    """An unexpected exception: a bug in rooflab -> two lines saying so and how to report it, exit 70."""
    if os.environ.get("ROOFLAB_TRACEBACK"):
        raise exc
    first = (str(exc).splitlines() or [""])[0][:200]
    typer.echo(f"error: internal error in rooflab ({type(exc).__name__}: {first})", err=True)
    typer.echo("this is a bug: please report it with the command line; ROOFLAB_TRACEBACK=1 shows where",
               err=True)
    raise typer.Exit(EXIT_BUG)


def _refuse_empty(kwargs: dict) -> None:
    """An option given as an empty string (typer reads '' as the path '.') is an error naming the option, not a
    default: `-o ''`, `--kv-cache-dtype ''`, `validate ''`. A file option given '.' is a folder, refused the same."""
    ctx = get_current_context(silent=True)
    if ctx is None:
        return
    for param in ctx.command.params:
        if param.name not in kwargs or ctx.get_parameter_source(param.name).name != "COMMANDLINE":
            continue
        value = kwargs[param.name]
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if (isinstance(item, str) and not item.strip()) or (isinstance(item, Path) and str(item) == "."):
                name = param.opts[0] if param.opts and param.opts[0].startswith("-") else param.human_readable_name
                shown = "'.' (a folder)" if isinstance(item, Path) else "an empty value"
                raise RooflabError(f"{name}: {shown}; give a file name" if isinstance(item, Path)
                                   else f"{name}: {shown}")

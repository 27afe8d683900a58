"""The `rooflab` command: parse -> call -> render. No arithmetic here.

Bad input (a RooflabError) prints one or two lines on stderr and exits 2, with no traceback.

This module holds the app, the short-error machinery and the options the commands share; the
commands live by group in analysis.py, measure.py, explain.py and charts.py, imported at the end
so that they register. Heavy modules are imported inside the command functions, to keep
`rooflab report` fast.
"""


import errno
import functools
import importlib
import os
import sys
import warnings
from pathlib import Path
from typing import Annotated, Callable, Optional

with warnings.catch_warnings():
    # typer 0.19 imports click.utils.get_binary_stream, which click 8.2+ deprecates: under PYTHONWARNINGS=error that
    # warning was an exception at import and every command failed. It concerns typer's code, not the user's.
    warnings.simplefilter("ignore", DeprecationWarning)
    import typer
    from typer.core import TyperGroup

# The click that typer itself runs on: the click package (typer < 0.20, as pinned) or the copy recent typer vendors
# as typer._click. Asking typer which one (where its BadParameter lives) keeps the errors caught below the ones the
# options raise even where both are installed (a typer >= 0.20 beside a real click once gave tracebacks).
_CLICK = typer.BadParameter.__module__.rsplit(".", 1)[0]
get_current_context = importlib.import_module(f"{_CLICK}.globals").get_current_context
ClickException = importlib.import_module(f"{_CLICK}.exceptions").ClickException
UsageError = importlib.import_module(f"{_CLICK}.exceptions").UsageError

from ..errors import RooflabError
from ..output import Format
from ..units import DType, WeightFormat
from ..limits import MAX_BATCH, MAX_GPUS, MAX_PAGE_SIZE, MAX_RAGGED, MAX_SPLITS, MAX_TOKENS
from ..vocab import CeilingSource, WindowAllocation
from . import params

EXIT_BAD_INPUT = 2

def _one_line(message: str) -> str:
    """click's messages on one line ("Choose from:\n\tgpu,\n\tmodel" -> "Choose from: gpu, model"), at most 300
    characters (a value typed at length is not echoed back whole)."""
    text = " ".join(message.split())
    return text if len(text) <= 300 else text[:297] + "..."


#: Exit status after an interrupt (Ctrl-C), as shells report a process ended by SIGINT: 128 + 2.
EXIT_INTERRUPTED = 130
#: Exit status when the reader of standard output went away (`rooflab list models | head -n 1`): 128 + SIGPIPE, the
#: status `cat` or `seq` end with in the same pipeline, so `set -o pipefail` scripts see rooflab as they see them.
EXIT_BROKEN_PIPE = 141


class StdoutError(RooflabError):
    """Standard output cannot take the result: closed, full, an I/O error, or an encoding that cannot show it."""


class _BrokenPipe(BaseException):
    """The reader of standard output has gone: end quietly (a BaseException, so no `except Exception` hides it)."""


class _Interrupted(BaseException):
    """Ctrl-C while a command ran, carried past click's own KeyboardInterrupt handling (which prints a blank line)."""


class _GuardedStdout:
    """sys.stdout while a command runs: the one place a failed write to standard output is read.

    A broken pipe becomes _BrokenPipe (a quiet exit); any other OSError (a full device, an I/O error) and a
    character the stream's encoding cannot hold (PYTHONIOENCODING=latin-1:strict) become a StdoutError, a one-line
    error with exit 2. After the first failure the real descriptor is pointed at /dev/null, so Python's flush at exit
    does not fail a second time ("Exception ignored ... BrokenPipeError"). It has no `buffer`, so click writes through
    it instead of re-wrapping the bytes underneath.
    """

    def __init__(self, stream) -> None:
        self._stream = stream
        self._failed = False

    @property
    def encoding(self):
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self):
        return getattr(self._stream, "errors", None) or "strict"

    def __getattr__(self, name: str):
        if name == "buffer":
            raise AttributeError(name)
        return getattr(self._stream, name)

    def write(self, text: str) -> int:
        if not isinstance(text, str):       # click probes a stream with b"" to learn whether it takes bytes
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self._failed or not text:        # nothing to write (/dev/full fails even an empty write)
            return len(text)
        return self._guard(lambda: self._stream.write(text))

    def flush(self) -> None:
        if not self._failed:
            self._guard(self._stream.flush)

    def _guard(self, call):
        try:
            return call()
        except UnicodeEncodeError as exc:
            raise StdoutError(f"standard output's encoding ({self.encoding}) cannot show "
                              f"{exc.object[exc.start:exc.end]!r}; set PYTHONIOENCODING=utf-8") from None
        except OSError as exc:
            self._failed = True
            self._silence()
            if exc.errno == errno.EPIPE or isinstance(exc, BrokenPipeError):
                raise _BrokenPipe() from None
            raise StdoutError(f"cannot write standard output: {exc.strerror or exc}") from None

    def _silence(self) -> None:
        try:
            fd = self._stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
        except (AttributeError, OSError, ValueError):    # not a real descriptor (a test's stream)
            return
        os.dup2(null, fd)
        os.close(null)


def _stdout_closed() -> bool:
    """Standard output is closed (`>&-`): Python then starts with sys.stdout None, and click would print nothing."""
    if sys.stdout is None:
        return True
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):     # a stream with no descriptor (a test's): open
        return False
    try:
        os.fstat(fd)
    except OSError:
        return True
    return False


def _environment_error(args) -> Optional[str]:
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


class _HelpFormatter(importlib.import_module(f"{_CLICK}.formatting").HelpFormatter):
    """click's help formatter, showing '[default: ...]' as written: typer escapes the bracket for rich markup
    whenever rich is installed (`\\[default: 8192]`), even where rich does not render the help (rich_markup_mode
    None, as here), so the backslash was printed."""

    def write_dl(self, rows, *args, **kwargs):
        rows = [(term, text.replace("\\[", "[")) for term, text in rows]
        return super().write_dl(rows, *args, **kwargs)


class _Context(importlib.import_module(f"{_CLICK}.core").Context):
    formatter_class = _HelpFormatter


def _plain_help(command) -> None:
    """Every command under `command` prints its help with _HelpFormatter and takes a single-value option once."""
    command.context_class = _Context
    subs = getattr(command, "commands", None)
    for sub in (subs or {}).values():
        _plain_help(sub)
    if subs is None and not getattr(command, "_rooflab_once", False):
        parse = command.parse_args

        def parse_args(ctx, args, command=command, parse=parse):
            _refuse_repeats(command, ctx, args)
            return parse(ctx, args)

        command.parse_args = parse_args
        command._rooflab_once = True


def _refuse_repeats(command, ctx, args) -> None:
    """A single-value option given twice (`-b 4 -b 8`, `--causal --no-causal`) is a usage error naming it: click
    keeps the last silently. Options that take a list (--context-len, --gpu, --fit-from) may repeat."""
    spellings = {}
    for param in command.params:
        if getattr(param, "multiple", False) or getattr(param, "count", False) or not getattr(param, "opts", None):
            continue
        for opt in (*param.opts, *getattr(param, "secondary_opts", ())):
            spellings[opt] = param
    seen: dict[str, list[str]] = {}
    for token in args:
        if token == "--":
            break
        if not token.startswith("-") or len(token) < 2:
            continue
        name = token.split("=", 1)[0]
        if name not in spellings and not token.startswith("--"):
            name = token[:2]                  # a short option with its value attached: -b4
        param = spellings.get(name)
        if param is not None:
            seen.setdefault(param.name, []).append(name)
    for names in seen.values():
        if len(names) > 1:
            shown = " and ".join(dict.fromkeys(names))
            raise UsageError(f"{shown} given {len(names)} times; the option takes one value: give it once", ctx)


class _ShortErrors(TyperGroup):
    """The one wrapper every command runs in: usage errors as two lines on stderr (the message, then where to get
    help), exit 2; standard output watched by _GuardedStdout (closed, full or a bad encoding: one line, exit 2; a
    broken pipe: a quiet exit 141); Ctrl-C: one line, exit 130."""

    def make_context(self, *args, **kwargs):
        try:                                 # options are parsed (and --help printed) here
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:            # typer would turn it into a silent exit 130
            raise _Interrupted() from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted() from None

    def main(self, *args, **kwargs):
        kwargs["standalone_mode"] = False
        _plain_help(self)
        if _stdout_closed():
            _error("standard output is closed; redirect it to a file or to /dev/null")
            sys.exit(EXIT_BAD_INPUT)
        problem = _environment_error(args)
        if problem:
            _error(problem)
            sys.exit(EXIT_BAD_INPUT)
        original = sys.stdout
        guarded = original if isinstance(original, _GuardedStdout) else _GuardedStdout(original)
        sys.stdout = guarded
        try:
            rv = super().main(*args, **kwargs)
            guarded.flush()
        except UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "rooflab"
            _error(_one_line(exc.format_message()))
            typer.echo(f"see '{where} --help'", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except ClickException as exc:
            _error(_one_line(exc.format_message()))
            sys.exit(exc.exit_code)
        except StdoutError as exc:
            _error(str(exc))
            sys.exit(EXIT_BAD_INPUT)
        except _BrokenPipe:
            sys.exit(EXIT_BROKEN_PIPE)
        except (_Interrupted, KeyboardInterrupt):
            _error("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except typer.Abort as exc:
            if isinstance(exc.__context__, KeyboardInterrupt):      # Ctrl-C while click parsed the options
                _error("interrupted")
                sys.exit(EXIT_INTERRUPTED)
            _error("aborted")
            sys.exit(1)
        finally:
            sys.stdout = original
        sys.exit(rv if isinstance(rv, int) else 0)


def _error(message: str) -> None:
    """One 'error:' line on stderr (nothing when stderr is closed too)."""
    from ..errors import clip_words

    try:
        typer.echo(f"error: {clip_words(message)}", err=True)
    except (OSError, UnicodeEncodeError):
        pass


app = typer.Typer(
    name="rooflab",
    cls=_ShortErrors,
    help="Roofline and memory calculator for LLM attention: naive, flash, paged and merge.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Bundled model name (see `rooflab list models`), a path "
                                       "to a model YAML, or a Hugging Face config.json: its path, a folder holding "
                                       "one, or an org/name id in the local Hugging Face cache.")]


def _one_gpu(values: list[str]) -> list[str]:
    """Commands that price one GPU say so when given several (the `rooflab plot` charts compare several).

    The option is a list so that a repeated -g is seen, not silently replaced; commands read `gpu[0]`."""
    names = [part.strip() for value in values for part in value.split(",")]
    if len(names) != 1:
        raise typer.BadParameter(f"this command takes one GPU (given {len(names)}: {', '.join(names)}); "
                                 "the `rooflab plot` charts compare several")
    return names


GpuOpt = Annotated[list[str], typer.Option("--gpu", "-g", metavar="GPU", callback=_one_gpu,
                                           help="Bundled GPU name (see `rooflab list gpus`), an alias (h200, "
                                                "'NVIDIA H100 80GB HBM3') or a path to a GPU YAML; one GPU.")]
DTypeOpt = Annotated[DType, typer.Option("--dtype", parser=params.dtype(), metavar="DTYPE", help="Element type of Q, "
                                         "K, V, O and of the matrix arithmetic: fp16 (float16, half), bf16 (bfloat16), "
                                         "fp32 (float32), tf32, fp8_e4m3 (fp8), fp8_e5m2.")]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


def fail(message: str) -> None:
    """Print a one- or two-line error on stderr and exit 2 (a very long word of it, a path, cut: errors.clip_words)."""
    from ..errors import clip_words

    typer.echo(f"error: {clip_words(message)}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


#: Exit status of an unexpected exception: a bug in rooflab, not bad input (EX_SOFTWARE).
EXIT_BUG = 70


def friendly(fn: Callable) -> Callable:
    """The one error path: RooflabError (bad input) and an OSError on a path (too long, a folder, no space,
    read-only, no permission) -> one line on stderr naming it, exit 2; any other exception is a bug in rooflab -> two lines saying so and how to report it, exit 70 (ROOFLAB_TRACEBACK=1 shows the traceback)."""

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
    from ..errors import clip

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


def only_for(ctx: typer.Context, phase: str, *names: str) -> None:
    """Refuse options given on the command line that apply to another `phase` only (named as typed)."""

    given = []
    for param in ctx.command.params:
        if param.name in names and ctx.get_parameter_source(param.name).name == "COMMANDLINE":
            given.append(param.opts[0])
    if given:
        raise RooflabError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to --phase {phase} only")


def parse_lengths(values: list[str] | None, option: str = "--context-len", hi: int = MAX_TOKENS) -> list[int]:
    """Lengths given as repeated options and/or comma lists: '1024,4096', '1k,4k' or '1024 --context-len 4096'."""
    out = []
    for value in values or []:
        try:
            out += params.counts(value, option, 1, hi)
        except typer.BadParameter as exc:
            raise RooflabError(exc.message) from None
    return out


def decode_lengths(context_len: Optional[list[str]], batch: int):
    """The decode batch: one --context-len for --batch sequences (a DecodeBatch, priced in closed form whatever
    the batch), or a ragged list (then --batch must be 1 or agree with it); 8192 when none is given."""
    from ..cost.paged import DecodeBatch

    lens = parse_lengths(context_len) or [8192]
    if len(lens) == 1:
        return DecodeBatch.uniform(lens[0], batch)
    if len(lens) > MAX_RAGGED:
        raise RooflabError(f"--context-len: {len(lens):,} lengths given one by one; the limit is {MAX_RAGGED:,}")
    if batch not in (1, len(lens)):
        raise RooflabError(f"--batch {batch} disagrees with {len(lens)} --context-len values")
    return lens


ContextOpt = Annotated[Optional[list[str]], typer.Option(
    "--context-len", "-L", help="Decode: context length per sequence (8192, 32k = 32,000, 32K = 32,768); repeat the "
                                "option or give a comma list for a ragged batch (default 8192).")]
PageOpt = Annotated[int, typer.Option("--page-size", parser=params.count(1, MAX_PAGE_SIZE), metavar="N",
                                      help="Tokens per KV-cache page (block).")]
KvDTypeOpt = Annotated[Optional[DType], typer.Option("--kv-dtype", parser=params.dtype(auto=True), metavar="DTYPE",
                                                     help="Element type of the KV cache: auto, fp8 (= fp8_e4m3), "
                                                          "fp8_e5m2, bf16, fp16, fp32 and the engines' spellings "
                                                          "(default auto: --dtype; capacity: the checkpoint's dtype "
                                                          "as the engines load it).")]
TensorParallelOpt = Annotated[int, typer.Option("--tensor-parallel", "--tp", parser=params.count(1, MAX_GPUS), metavar="N",
                                                help="GPUs the model is split over by head; memory figures are per GPU.")]
BatchOpt = Annotated[int, typer.Option("--batch", "-b", parser=params.count(1, MAX_BATCH), metavar="N",
                                       help="Sequences in the batch (decode: copies of a single --context-len).")]
SeqLenOpt = Annotated[int, typer.Option("--seq-len", "-T", parser=params.count(1, MAX_TOKENS), metavar="N",
                                        help="Prefill: tokens in the sequence (8192, 32k, 128K).")]
SplitsOpt = Annotated[Optional[int], typer.Option("--splits", parser=params.count(1, MAX_SPLITS), metavar="N",
                                                  help="Decode: split-KV count (default: the one rooflab recommends).")]
CausalOpt = Annotated[bool, typer.Option("--causal/--no-causal", help="Prefill: causal mask (the default, as decoders and engines run prefill; --no-causal gives the chapter's non-causal figures).")]
ImplOpt = Annotated[Optional[str], typer.Option("--impl", help="Predict with this implementation's fitted model "
                                                     "(rooflab, rooflab_hopper, torch_cudnn, ...; default: the "
                                                     "fastest fitted one that held on its held-out rows).")]
CeilingsOpt = Annotated[CeilingSource, typer.Option("--ceilings", help="floor (default): the GPU's own, physical where a published run beat its datasheet, else datasheet; datasheet: the rated figures; physical: the maximum SM clock x the per-clock rate, fastest accumulate mode; calibrated: the GPU YAML's measured: section.")]
#: Typed str for typer (a WeightFormat is a str): typer maps an Enum-typed option's value through the members it
#: lists, which would turn a parametric format (int4_g128_zp) into None; params.weight_format returns the format.
WeightDTypeOpt = Annotated[Optional[str], typer.Option(
    "--weight-dtype", parser=params.weight_format, metavar="FORMAT",
    help="Format of the linear layers' weights: auto (as the checkpoint ships them, the default), a dtype (bf16, "
         "fp8 = fp8_e4m3, ...), fp8_block, mxfp4, nvfp4, int4_g128[_zp], nf4[_dq]; embeddings, LM head, norms "
         "and router stay in the checkpoint's dtype.")]
ExpertParallelOpt = Annotated[int, typer.Option("--expert-parallel", "--ep", parser=params.count(1, MAX_GPUS), metavar="N",
                                                help="GPUs the routed experts are split over (MoE).")]
DpAttentionOpt = Annotated[bool, typer.Option("--dp-attention/--no-dp-attention",
                                              help="Data-parallel attention: each GPU holds whole sequences and all "
                                                   "attention heads (with --tp: that many GPUs).")]
WindowAllocationOpt = Annotated[WindowAllocation, typer.Option(
    "--window-allocation", help="hybrid: windowed layers keep only their window's pages (vLLM's hybrid allocator); "
                                "full: a full-length page table for every layer.")]
UtilizationOpt = Annotated[float, typer.Option("--gpu-memory-utilization", parser=params.number(0, 1, lo_open=True),
                                               metavar="X", help="Share of device memory rooflab may plan with, in (0, 1].")]
MaxModelLenOpt = Annotated[Optional[int], typer.Option("--max-model-len", parser=params.count(1, MAX_TOKENS), metavar="N",
                                                       help="Contiguous reservation per request (default: the model's max context).")]


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"rooflab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print rooflab's version and exit.")] = False) -> None:
    """Roofline and memory calculator for LLM attention: naive, flash, paged and merge."""


def main() -> None:
    """Console-script entry point. Ctrl-C before the command's own handler is in place (typer building the command
    tree, the environment check importing matplotlib for `plot`: about a second) ends as one line, exit 130."""
    try:
        app()
    except KeyboardInterrupt:
        _error("interrupted")
        sys.exit(EXIT_INTERRUPTED)


# The commands register themselves on `app` when imported; the order here is the order of `rooflab --help`.
from . import analysis, measure, fit, explain, charts, schema  # noqa: E402,F401  (after everything they import from here)
from . import serve  # noqa: E402,F401  (rooflab serve, rooflab plot serve)

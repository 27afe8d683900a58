"""What rooflab changes in the click that typer runs on: which click that is, help shown as written, and a
single-value option refused when given twice.

Nothing here knows a command; app.py applies `plain_help` to each command as it is built.
"""

import importlib
import warnings

with warnings.catch_warnings():
    # typer 0.19 imports click.utils.get_binary_stream, which click 8.2+ deprecates: under PYTHONWARNINGS=error that
    # warning was an exception at import and every command failed. It concerns typer's code, not the user's.
    warnings.simplefilter("ignore", DeprecationWarning)
    import typer

# The click that typer itself runs on: the click package (typer < 0.20, as pinned) or the copy recent typer vendors
# as typer._click. Asking typer which one (where its BadParameter lives) keeps the errors caught below the ones the
# options raise even where both are installed (a typer >= 0.20 beside a real click once gave tracebacks).
_CLICK = typer.BadParameter.__module__.rsplit(".", 1)[0]
get_current_context = importlib.import_module(f"{_CLICK}.globals").get_current_context
ClickException = importlib.import_module(f"{_CLICK}.exceptions").ClickException
UsageError = importlib.import_module(f"{_CLICK}.exceptions").UsageError


class HelpFormatter(importlib.import_module(f"{_CLICK}.formatting").HelpFormatter):
    """click's help formatter, showing '[default: ...]' as written: typer escapes the bracket for rich markup
    whenever rich is installed (`\\[default: 8192]`), even where rich does not render the help (rich_markup_mode
    None, as here), so the backslash was printed."""

    def write_dl(self, rows, *args, **kwargs):
        rows = [(term, text.replace("\\[", "[")) for term, text in rows]
        return super().write_dl(rows, *args, **kwargs)


class Context(importlib.import_module(f"{_CLICK}.core").Context):
    formatter_class = HelpFormatter


def plain_help(command) -> None:
    """`command` prints its help with HelpFormatter and takes a single-value option once (a group: its built
    subcommands too; app.LazyGroup applies this to each command it builds)."""
    command.context_class = Context
    subs = getattr(command, "commands", None)
    for sub in (subs or {}).values():
        plain_help(sub)
    if subs is None and not getattr(command, "_rooflab_once", False):
        parse = command.parse_args

        def parse_args(ctx, args, command=command, parse=parse):
            refuse_repeats(command, ctx, args)
            return parse(ctx, args)

        command.parse_args = parse_args
        command._rooflab_once = True


def refuse_repeats(command, ctx, args) -> None:
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

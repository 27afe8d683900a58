"""The `rooflab` app: its commands, registered here by name, and built only when invoked.

typer builds a command's click options from its signature, and the commands together have a few hundred
options: building them all on every start cost `rooflab report` about a fifth of its start-up. COMMANDS names each
command's module and function; a LazyGroup imports and builds one when its name is invoked, and all of them
for `--help` (which lists each with its short help). The order of COMMANDS is the order of `rooflab --help`.
"""

import importlib
import sys
from dataclasses import dataclass
from typing import Annotated, Union

import typer
from typer.core import TyperGroup

from .click_compat import Context, plain_help
from .error_path import EXIT_INTERRUPTED, Interrupted, error, guarded


@dataclass(frozen=True)
class Group:
    """A command group (`rooflab list ...`, `rooflab plot ...`): its help and its commands."""

    help: str
    commands: "dict[str, Union[str, Group]]"


#: Every command: its name -> "module:function" under rooflab.cli, or a Group of them.
COMMANDS: "dict[str, Union[str, Group]]" = {
    "report": "report:report",
    "capacity": "capacity:capacity",
    "numerics": "numerics:numerics",
    "calibrate": "measure:calibrate",
    "validate": "measure:validate",
    "bench": "measure:bench",
    "fit": "fit:fit",
    "explain": "explain:explain",
    "schema": "schema:schema",
    "serve": "serve:serve",
    "list": Group("List the bundled GPU and model specs.",
                  {"gpus": "catalog:list_gpus", "models": "catalog:list_models"}),
    "plot": Group("Draw rooflab's charts as .png, .svg or .pdf (the extension of -o picks the format).",
                  {"roofline": "charts:plot_roofline", "memory": "charts:plot_memory", "time": "charts:plot_time",
                   "decode": "charts:plot_decode", "capacity": "charts:plot_capacity",
                   "validation": "charts:plot_validation", "serve": "serve:plot_serve"}),
}


class LazyGroup(TyperGroup):
    """A click group whose commands are built from `table` when first asked for (typer would build them all)."""

    context_class = Context
    table: "dict[str, Union[str, Group]]" = {}

    def list_commands(self, ctx) -> list[str]:
        return list(self.table)

    def get_command(self, ctx, name: str):
        if name not in self.commands and name in self.table:
            command = build(name, self.table[name])
            plain_help(command)
            self.commands[name] = command
        return self.commands.get(name)


def build(name: str, target: "Union[str, Group]"):
    """The click command (or group) `target` names, built as typer builds a registered one (typer.main's
    get_group and get_command_from_info, what `app()` calls for each command it holds)."""
    if isinstance(target, Group):
        sub = typer.Typer(help=target.help, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                          cls=LazyGroup)
        group = typer.main.get_group(sub)
        group.name = name
        group.table = target.commands
        return group
    module, function = target.split(":")
    callback = getattr(importlib.import_module(f"{__package__}.{module}"), function)
    info = typer.models.CommandInfo(name=name, callback=callback)
    return typer.main.get_command_from_info(info, pretty_exceptions_short=True, rich_markup_mode=None)


def command_tree():
    """The root click group with every command built (for tests and tools that walk the commands)."""
    root = typer.main.get_command(app)

    def load(group) -> None:
        for name in group.list_commands(None):
            sub = group.get_command(None, name)
            if isinstance(sub, LazyGroup):
                load(sub)

    load(root)
    return root


class RooflabGroup(LazyGroup):
    """The root group: every command runs inside error_path.guarded (the one error path of a whole run)."""

    table = COMMANDS

    def make_context(self, *args, **kwargs):
        try:                                 # options are parsed (and --help printed) here
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:            # typer would turn it into a silent exit 130
            raise Interrupted() from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted() from None

    def main(self, *args, **kwargs):
        kwargs["standalone_mode"] = False
        words = args if args else ((kwargs["args"],) if kwargs.get("args") is not None else ())  # CliRunner: args=
        guarded(lambda: super(RooflabGroup, self).main(*args, **kwargs), words)


app = typer.Typer(
    name="rooflab",
    cls=RooflabGroup,
    help="Roofline and memory calculator for LLM attention: naive, flash, paged and merge.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


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
    """Console-script entry point. Ctrl-C before the command's own handler is in place (typer building the
    command, the environment check importing matplotlib for `plot`) ends as one line, exit 130."""
    try:
        app()
    except KeyboardInterrupt:
        error("interrupted")
        sys.exit(EXIT_INTERRUPTED)

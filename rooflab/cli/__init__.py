"""The `rooflab` command: parse -> call -> render. No arithmetic here.

Bad input (a RooflabError) prints one or two lines on stderr and exits 2, with no traceback.

The layout: app.py (the app; every command registered there by name and built only when invoked),
error_path.py (the one error path), stdout.py (standard output while a command runs), click_compat.py (what
rooflab changes in the click typer runs on), options.py and deployment_options.py (the options commands share),
params.py and lengths.py (value parsers), then one module a command or command group: report, capacity,
numerics, catalog (`list`), measure (calibrate, validate, bench), fit, explain, charts (`plot`), schema, serve.
Heavy modules are imported inside the command functions, to keep `rooflab report` fast.

The names below are this package's public ones (rooflab.cli.app, rooflab.cli.main, ...), kept importable here
from the modules they live in.
"""

# click_compat first: it imports typer with typer's own DeprecationWarning silenced (PYTHONWARNINGS=error).
from .click_compat import ClickException, UsageError, get_current_context
from . import params
from .app import app, command_tree, main
from .error_path import EXIT_BAD_INPUT, EXIT_BUG, EXIT_INTERRUPTED, fail, friendly, path_error
from .lengths import decode_lengths, parse_lengths
from .options import (BatchOpt, CausalOpt, CeilingsOpt, ContextOpt, DpAttentionOpt, DTypeOpt, ExpertParallelOpt,
                      FormatOpt, GpuOpt, ImplOpt, KvDTypeOpt, MaxModelLenOpt, ModelOpt, PageOpt, SeqLenOpt, SplitsOpt,
                      TensorParallelOpt, UtilizationOpt, WindowAllocationOpt, only_for)
from .deployment_options import WeightDTypeOpt
from .stdout import EXIT_BROKEN_PIPE, StdoutError

__all__ = ["app", "command_tree", "main", "params", "ClickException", "UsageError", "get_current_context",
           "EXIT_BAD_INPUT", "EXIT_BROKEN_PIPE", "EXIT_BUG", "EXIT_INTERRUPTED", "StdoutError", "fail", "friendly",
           "path_error", "decode_lengths", "parse_lengths", "only_for", "BatchOpt", "CausalOpt", "CeilingsOpt",
           "ContextOpt", "DpAttentionOpt", "DTypeOpt", "ExpertParallelOpt", "FormatOpt", "GpuOpt", "ImplOpt",
           "KvDTypeOpt", "MaxModelLenOpt", "ModelOpt", "PageOpt", "SeqLenOpt", "SplitsOpt", "TensorParallelOpt",
           "UtilizationOpt", "WeightDTypeOpt", "WindowAllocationOpt"]

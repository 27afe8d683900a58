"""The `rooflab` command: parse -> call -> render. No arithmetic here.

Bad input (a RooflabError) prints one or two lines on stderr and exits 2, with no traceback.
"""

from __future__ import annotations

import enum
import functools
import sys
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer
from typer.core import TyperGroup

try:  # recent typer vendors click
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - older typer on real click
    from click.exceptions import ClickException, UsageError

from .errors import RooflabError
from .render import Format
from .units import DType

EXIT_BAD_INPUT = 2

class _ShortErrors(TyperGroup):
    """Usage errors as two lines on stderr (the message, then where to get help), exit 2."""

    def main(self, *args, **kwargs):
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "rooflab"
            typer.echo(f"error: {exc.format_message()}", err=True)
            typer.echo(f"see '{where} --help'", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except ClickException as exc:
            typer.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    name="rooflab",
    cls=_ShortErrors,
    help="Roofline and memory calculator for LLM attention: naive, flash, paged and merge.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
list_app = typer.Typer(help="List the bundled GPU and model specs.", add_completion=False, no_args_is_help=True,
                       rich_markup_mode=None)
app.add_typer(list_app, name="list")

ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Bundled model name (see `rooflab list models`) or a path to a model YAML.")]
GpuOpt = Annotated[str, typer.Option("--gpu", "-g", help="Bundled GPU name (see `rooflab list gpus`) or a path to a GPU YAML.")]
DTypeOpt = Annotated[DType, typer.Option("--dtype", help="Element type of Q, K, V, O and of the matrix arithmetic.")]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


def fail(message: str) -> None:
    """Print a one- or two-line error on stderr and exit 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def friendly(fn: Callable) -> Callable:
    """Turn RooflabError (bad input) into a short message on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RooflabError as exc:
            fail(str(exc))

    return wrapper


class Phase(str, enum.Enum):
    prefill = "prefill"
    decode = "decode"


class Ceiling(str, enum.Enum):
    datasheet = "datasheet"
    calibrated = "calibrated"


def parse_lengths(values: list[str] | None, option: str = "--context-len") -> list[int]:
    """Lengths given as repeated options and/or comma-separated lists: '1024,4096' or '1024 --context-len 4096'."""
    out = []
    for value in values or []:
        for part in value.split(","):
            part = part.strip().replace("_", "")
            if not part:
                continue
            try:
                out.append(int(part))
            except ValueError:
                raise RooflabError(f"{option} expects whole numbers, got '{part}'") from None
    return out


ContextOpt = Annotated[Optional[list[str]], typer.Option(
    "--context-len", "-L", help="Decode: context length per sequence; repeat the option or give a comma list "
                                "for a ragged batch (default 8192).")]
PageOpt = Annotated[int, typer.Option("--page-size", help="Tokens per KV-cache page (block).")]
KvDTypeOpt = Annotated[Optional[DType], typer.Option("--kv-dtype", help="Element type of the KV cache (default: --dtype).")]


@app.command()
@friendly
def report(
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = "h100-sxm",
    phase: Annotated[Phase, typer.Option("--phase", help="prefill: naive vs flash; decode: paged vs split-KV.")] = Phase.prefill,
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", help="Prefill: tokens in the sequence.")] = 8192,
    batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences in the batch (decode: copies of a single --context-len).")] = 1,
    dtype: DTypeOpt = DType.fp16,
    causal: Annotated[bool, typer.Option("--causal/--no-causal", help="Prefill: causal mask.")] = False,
    context_len: ContextOpt = None,
    page_size: PageOpt = 16,
    kv_dtype: KvDTypeOpt = None,
    splits: Annotated[Optional[int], typer.Option("--splits", help="Decode: split-KV count (default: the one rooflab recommends).")] = None,
    ceilings: Annotated[Ceiling, typer.Option("--ceilings", help="Datasheet ceilings, or the GPU YAML's measured: section.")] = Ceiling.datasheet,
    fmt: FormatOpt = Format.table,
) -> None:
    """Per-layer FLOPs, HBM bytes, intensity and time floors of attention variants, side by side."""
    from .load import load_gpu, load_model
    from .render import render_report
    from .report import decode_report, prefill_report
    from .roofline import CeilingSource

    source = CeilingSource(ceilings.value)
    if phase is Phase.prefill:
        r = prefill_report(load_model(model), load_gpu(gpu), seq_len, batch, dtype, causal, source)
    else:
        lens = parse_lengths(context_len) or [8192]
        if len(lens) == 1:
            lens = lens * batch
        elif batch not in (1, len(lens)):
            raise RooflabError(f"--batch {batch} disagrees with {len(lens)} --context-len values")
        r = decode_report(load_model(model), load_gpu(gpu), lens, page_size, dtype, kv_dtype, splits, source)
    typer.echo(render_report(r, fmt), nl=False)


@app.command()
@friendly
def capacity(
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = "h100-sxm",
    context_len: Annotated[int, typer.Option("--context-len", "-L", help="Tokens per sequence (prompt plus output).")] = 8192,
    page_size: PageOpt = 16,
    weight_dtype: Annotated[DType, typer.Option("--weight-dtype", help="Element type of the weights.")] = DType.fp16,
    kv_dtype: KvDTypeOpt = None,
    utilization: Annotated[float, typer.Option("--gpu-memory-utilization", help="Share of device memory rooflab may plan with, in (0, 1].")] = 0.9,
    reserve_gib: Annotated[float, typer.Option("--activation-reserve-gib", help="Memory kept for activations and workspace, GiB.")] = 0.0,
    max_model_len: Annotated[Optional[int], typer.Option("--max-model-len", help="Contiguous reservation per request (default: the model's max context).")] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """How many sequences fit: KV budget, paged against contiguous reservation, longest context."""
    from .capacity import plan_capacity
    from .load import load_gpu, load_model
    from .render import render_capacity
    from .units import GiB

    plan = plan_capacity(load_model(model), load_gpu(gpu), context_len, weight_dtype, kv_dtype, utilization,
                         int(reserve_gib * GiB), page_size, max_model_len)
    typer.echo(render_capacity(plan, fmt), nl=False)


@app.command()
@friendly
def numerics(
    dtype: Annotated[DType, typer.Option("--dtype", help="Storage type whose exp range is examined (tf32 is refused: use fp32).")] = DType.fp16,
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", help="Logits in one softmax row (keys), at least 2.")] = 8192,
    logit_std: Annotated[float, typer.Option("--logit-std", help="Standard deviation of the logits (1 for scaled q.k of unit vectors).")] = 1.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Where exp overflows and underflows in a dtype, and the headroom naive softmax has at a row length."""
    from .numerics import softmax_headroom
    from .render_numerics import render_headroom

    typer.echo(render_headroom(softmax_headroom(dtype, seq_len, logit_std), fmt), nl=False)


@app.command()
@friendly
def calibrate(
    gpu: Annotated[Optional[str], typer.Option("--gpu", "-g", help="Spec of this machine's GPU (default: detected from the device name).")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="GPU YAML to write with the measured: section (default: ./<gpu>.yaml).")] = None,
    copy_gib: Annotated[float, typer.Option("--copy-gib", help="Size of the copy buffer, GiB.")] = 2.0,
) -> None:
    """Measure this GPU's copy bandwidth, fp16/bf16 GEMM rates and exp throughput; write them as `measured:`."""
    from .bench.calibrate import calibrate as run_calibration
    from .bench.calibrate import describe, write_spec
    from .bench.device import check_spec_matches, default_spec, device_name
    from .load import spec_path
    from .units import GiB

    spec = gpu or default_spec()
    check_spec_matches(spec, device_name())
    source = spec_path("hardware", "GPU", spec)
    target = output or Path.cwd() / source.name
    typer.echo(f"calibrating {device_name()} against {spec}: copy, GEMM fp16, GEMM bf16, exp ...", err=True)
    cal = run_calibration(" ".join(["rooflab", *sys.argv[1:]]), spec, copy_bytes=int(copy_gib * GiB))
    write_spec(source, target, cal.measured())
    for name, value in describe(cal):
        typer.echo(f"{name:32s} {value}")
    typer.echo(f"wrote {target}")


@app.command()
@friendly
def validate(
    file: Annotated[Optional[Path], typer.Argument(help="Measurement CSV from `rooflab bench` (default: the bundled H200 dataset).")] = None,
    gpu: Annotated[Optional[str], typer.Option("--gpu", "-g", help="GPU spec to predict with (default: the one the file names).")] = None,
    fmt: FormatOpt = Format.table,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Also write the result to this file.")] = None,
) -> None:
    """Measured against predicted: fraction of the floor per kernel, and the calibrated model's held-out error."""
    from .bench.validate import validate as run_validation
    from .load import data_dir
    from .render_validation import render_validation

    path = file or data_dir("measurements") / BUNDLED_MEASUREMENTS
    text = render_validation(run_validation(path, gpu), fmt)
    if output is not None:
        _write_atomic(output, text)
    typer.echo(text, nl=False)


class BenchKernel(str, enum.Enum):
    naive = "naive"
    flash = "flash"
    paged = "paged"
    merge = "merge"


@app.command()
@friendly
def bench(
    gpu: Annotated[Optional[str], typer.Option("--gpu", "-g", help="Spec of this machine's GPU (default: detected); a calibrated YAML records its ceilings beside the data.")] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Measurement CSV to write.")] = Path("rooflab-bench.csv"),
    kernels: Annotated[Optional[list[BenchKernel]], typer.Option("--kernel", "-k", help="Kernel families to run (repeat; default all). paged includes split-KV.")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A small sweep (a few configurations per kernel).")] = False,
    torch: Annotated[bool, typer.Option("--torch/--no-torch", help="Also time PyTorch's backends on the same shapes, where PyTorch is installed.")] = True,
    repeats: Annotated[int, typer.Option("--repeats", help="Timed repeats per configuration (the median is kept).")] = 20,
) -> None:
    """Check every bundled kernel against the fp64 oracle, then time it over a sweep; write a CSV with metadata."""
    from .bench.cases import sweep
    from .bench.device import check_spec_matches, default_spec, device_name, metadata
    from .bench.run import run, save
    from .load import load_gpu

    spec = gpu or default_spec()
    check_spec_matches(spec, device_name())
    families = tuple(k.value for k in kernels) if kernels else tuple(k.value for k in BenchKernel)
    cases = sweep(families, quick)
    if repeats < 3:
        raise RooflabError(f"--repeats must be at least 3, got {repeats}")
    typer.echo(f"{len(cases)} configurations on {device_name()}; progress on stderr", err=True)
    meta = metadata(" ".join(["rooflab", *sys.argv[1:]]), spec)
    result = run(cases, load_gpu(spec).l2_bytes, with_torch=torch, repeats=repeats,
                 after_case=lambda partial: save(partial, output, meta))
    save(result, output, meta)
    typer.echo(f"wrote {len(result.rows)} measurements to {output}")
    for failure in result.failures:
        typer.echo(f"not timed: {failure}", err=True)


BUNDLED_MEASUREMENTS = "h200-sweep.csv"


def _write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file and a rename, so a failure leaves nothing half-written."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RooflabError(f"cannot write {path}: {exc.strerror or exc}") from None


@list_app.command("gpus")
@friendly
def list_gpus(fmt: FormatOpt = Format.table) -> None:
    """The bundled GPUs with their headline ceilings."""
    from .catalog import gpu_table

    typer.echo(gpu_table(fmt), nl=False)


@list_app.command("models")
@friendly
def list_models(fmt: FormatOpt = Format.table) -> None:
    """The bundled models with their attention shapes."""
    from .catalog import model_table

    typer.echo(model_table(fmt), nl=False)


# --- rooflab plot and rooflab explain -------------------------------------------------

plot_app = typer.Typer(help="Draw rooflab's charts as .png, .svg or .pdf (the extension of -o picks the format).",
                       add_completion=False, no_args_is_help=True, rich_markup_mode=None)
app.add_typer(plot_app, name="plot")

GpusOpt = Annotated[Optional[list[str]], typer.Option(
    "--gpu", "-g", metavar="GPU", help="Bundled GPU name or a path to a GPU YAML; repeat (or give a comma list) to compare several "
                        "(default h100-sxm).")]


def _output_opt(default: str):
    return Annotated[Optional[Path], typer.Option("--output", "-o", help=f"Image to write: .png, .svg or .pdf (default {default}).")]


def _names(values: list[str] | None, default: str) -> list[str]:
    names = [part.strip() for value in values or [] for part in value.split(",") if part.strip()]
    return names or [default]


def _save(fig, output: Path | None, default: str) -> None:
    from .plot import save_figure

    typer.echo(f"wrote {save_figure(fig, output or Path(default))}")


@plot_app.command("roofline")
@friendly
def plot_roofline(
    model: ModelOpt = "llama-3-8b",
    gpu: GpusOpt = None,
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", help="Prefill tokens; also the decode context of the paged point.")] = 8192,
    batch: Annotated[int, typer.Option("--batch", "-b", help="Prefill sequences in the batch.")] = 1,
    dtype: DTypeOpt = DType.fp16,
    causal: Annotated[bool, typer.Option("--causal/--no-causal", help="Causal mask for the prefill points.")] = False,
    decode_batch: Annotated[int, typer.Option("--decode-batch", help="Sequences of the paged-decode point.")] = 1,
    flash_tiled: Annotated[bool, typer.Option("--flash-tiled/--no-flash-tiled", help="Also draw flash's tiled upper bound on bytes (hollow marker).")] = False,
    output: _output_opt("roofline.png") = None,
) -> None:
    """Roofline chart: memory and compute roofs, the ridge, naive (and its kernels), flash, paged decode, merge."""
    from .load import load_gpu, load_model
    from .plot import roofline_chart, roofline_data

    gpus = [load_gpu(name) for name in _names(gpu, "h100-sxm")]
    data = roofline_data(load_model(model), gpus, seq_len, dtype, batch, causal, decode_batch, flash_tiled=flash_tiled)
    _save(roofline_chart(data), output, "roofline.png")


@plot_app.command("memory")
@friendly
def plot_memory(
    model: ModelOpt = "llama-3-8b",
    gpu: GpusOpt = None,
    batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences prefilled together.")] = 1,
    dtype: DTypeOpt = DType.fp16,
    max_seq_len: Annotated[Optional[int], typer.Option("--max-seq-len", help="Right end of the length axis (default: past where naive stops fitting).")] = None,
    output: _output_opt("memory.png") = None,
) -> None:
    """Bytes of S and P against sequence length, with each GPU's capacity minus weights: where naive prefill stops fitting."""
    from .load import load_gpu, load_model
    from .plot import memory_chart, memory_sweep

    gpus = [load_gpu(name) for name in _names(gpu, "h100-sxm")]
    _save(memory_chart(memory_sweep(load_model(model), gpus, batch, dtype, max_seq_len)), output, "memory.png")


@plot_app.command("time")
@friendly
def plot_time(
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = "h100-sxm",
    batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences prefilled together.")] = 1,
    dtype: DTypeOpt = DType.fp16,
    causal: Annotated[bool, typer.Option("--causal/--no-causal", help="Causal mask.")] = False,
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", help="Length marked with both times and their ratio.")] = 8192,
    max_seq_len: Annotated[Optional[int], typer.Option("--max-seq-len", help="Right end of the length axis.")] = None,
    output: _output_opt("time.png") = None,
) -> None:
    """Naive and flash prefill time floors (all layers) against sequence length."""
    from .load import load_gpu, load_model
    from .plot import time_chart, time_sweep

    sweep = time_sweep(load_model(model), load_gpu(gpu), batch, dtype, causal, max_seq_len, seq_len)
    _save(time_chart(sweep), output, "time.png")


@plot_app.command("decode")
@friendly
def plot_decode(
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = "h100-sxm",
    batch: Annotated[Optional[list[str]], typer.Option("--batch", "-b", metavar="N[,N...]", help="Batch sizes, one line each; repeat or give a comma list (default 1,8,32,128).")] = None,
    page_size: PageOpt = 16,
    dtype: DTypeOpt = DType.fp16,
    kv_dtype: KvDTypeOpt = None,
    max_context_len: Annotated[Optional[int], typer.Option("--max-context-len", help="Right end of the context axis.")] = None,
    output: _output_opt("decode.png") = None,
) -> None:
    """Attention time of one decode step (all layers) against context length, one line per batch size."""
    from .load import load_gpu, load_model
    from .plot import DECODE_BATCHES, decode_chart, decode_sweep

    batches = parse_lengths(batch, "--batch") or list(DECODE_BATCHES)
    sweep = decode_sweep(load_model(model), load_gpu(gpu), batches, page_size, dtype, kv_dtype, max_context_len)
    _save(decode_chart(sweep), output, "decode.png")


@plot_app.command("capacity")
@friendly
def plot_capacity(
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = "h100-sxm",
    page_size: PageOpt = 16,
    weight_dtype: Annotated[DType, typer.Option("--weight-dtype", help="Element type of the weights.")] = DType.fp16,
    kv_dtype: KvDTypeOpt = None,
    utilization: Annotated[float, typer.Option("--gpu-memory-utilization", help="Share of device memory rooflab may plan with, in (0, 1].")] = 0.9,
    max_model_len: Annotated[Optional[int], typer.Option("--max-model-len", help="Contiguous reservation per request (default: the model's max context).")] = None,
    output: _output_opt("capacity.png") = None,
) -> None:
    """Concurrent sequences against context length: paged KV cache against contiguous max-length reservation."""
    from .load import load_gpu, load_model
    from .plot import capacity_chart, capacity_sweep

    sweep = capacity_sweep(load_model(model), load_gpu(gpu), page_size, weight_dtype, kv_dtype, utilization,
                           max_model_len)
    _save(capacity_chart(sweep), output, "capacity.png")


class ExplainVariant(str, enum.Enum):
    naive = "naive"
    flash = "flash"
    paged = "paged"
    split_kv = "split_kv"
    merge = "merge"


class ExplainFormat(str, enum.Enum):
    text = "text"
    markdown = "markdown"


@app.command()
@friendly
def explain(
    variant: Annotated[ExplainVariant, typer.Option("--variant", "-v", help="Which variant's figures to derive (merge: --seq-len tokens x batch).")] = ExplainVariant.naive,
    model: ModelOpt = "llama-3-8b",
    gpu: GpuOpt = "h100-sxm",
    seq_len: Annotated[int, typer.Option("--seq-len", "-T", help="Prefill: tokens in the sequence; merge: tokens merged.")] = 8192,
    batch: Annotated[int, typer.Option("--batch", "-b", help="Sequences in the batch (decode: copies of a single --context-len).")] = 1,
    dtype: DTypeOpt = DType.fp16,
    causal: Annotated[bool, typer.Option("--causal/--no-causal", help="Prefill: causal mask.")] = False,
    context_len: ContextOpt = None,
    page_size: PageOpt = 16,
    kv_dtype: KvDTypeOpt = None,
    splits: Annotated[Optional[int], typer.Option("--splits", help="split_kv: split count (default: the one rooflab recommends).")] = None,
    ceilings: Annotated[Ceiling, typer.Option("--ceilings", help="Datasheet ceilings, or the GPU YAML's measured: section.")] = Ceiling.datasheet,
    fmt: Annotated[ExplainFormat, typer.Option("--format", "-f", help="Output format.")] = ExplainFormat.text,
) -> None:
    """Show the working: each figure of the report as formula, numbers substituted, and result with units."""
    from .cost.common import Variant
    from .explain import explain as derive
    from .explain import render_explanation
    from .load import load_gpu, load_model
    from .roofline import CeilingSource

    lens = parse_lengths(context_len) or [8192]
    if len(lens) == 1:
        lens = lens * batch
    elif batch not in (1, len(lens)):
        raise RooflabError(f"--batch {batch} disagrees with {len(lens)} --context-len values")
    e = derive(Variant(variant.value), load_model(model), load_gpu(gpu), seq_len, batch, dtype, causal, lens,
               page_size, kv_dtype, splits, CeilingSource(ceilings.value))
    typer.echo(render_explanation(e, markdown=fmt is ExplainFormat.markdown), nl=False)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
